package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"time"

	vegeta "github.com/tsenart/vegeta/v12/lib"

	"github.com/consensus-md/consensus/internal/envelope"
	"github.com/consensus-md/consensus/internal/ingest"
)

func (b *bench) operatorRequest(ctx context.Context, method, path string, body any, out any) error {
	var rd io.Reader
	if body != nil {
		buf, err := json.Marshal(body)
		if err != nil {
			return err
		}
		rd = bytes.NewReader(buf)
	}
	req, err := http.NewRequestWithContext(ctx, method, b.svc.origin+path, rd)
	if err != nil {
		return err
	}
	req.Header.Set("Authorization", "Bearer "+b.svc.opToken)
	req.Header.Set("Content-Type", "application/json")
	resp, err := b.http.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	if resp.StatusCode/100 != 2 {
		return fmt.Errorf("%s %s: %d %s", method, path, resp.StatusCode, raw)
	}
	return json.Unmarshal(raw, out)
}

// createAgreements locks cfg.Agreements agreements of cfg.Parts agent
// participants each through the operator API.
func (b *bench) createAgreements(ctx context.Context) error {
	ags, err := b.createAgreementSet(ctx, 0, b.cfg.Agreements, b.cfg.Parts)
	b.world.ags = ags
	return err
}

// createAgreementSet locks n agreements of parts agent participants each,
// numbered from first+1, and registers their invitations.
func (b *bench) createAgreementSet(ctx context.Context, first, n, nparts int) ([]*agreement, error) {
	var ags []*agreement
	type pin struct {
		DisplayName string `json:"displayName"`
		Kind        string `json:"kind"`
		Email       string `json:"email"`
		Required    bool   `json:"required"`
	}
	type created struct {
		AgreementID    string `json:"agreementId"`
		RevisionNumber int    `json:"revisionNumber"`
		RevisionDigest string `json:"revisionDigest"`
		Participants   []struct {
			ParticipantID string `json:"participantId"`
			InvitationID  string `json:"invitationId"`
		} `json:"participants"`
	}
	deadline := time.Now().Add(7 * 24 * time.Hour).UTC().Truncate(time.Second).Format(time.RFC3339)
	w := b.world
	for i := first; i < first+n; i++ {
		parts := make([]pin, nparts)
		for j := range parts {
			parts[j] = pin{
				DisplayName: fmt.Sprintf("Bench agent %d.%d", i+1, j+1),
				Kind:        "agent",
				Email:       fmt.Sprintf("agent-%d-%d@bench.example.com", i+1, j+1),
				Required:    j < 2,
			}
		}
		in := map[string]any{
			"title":        fmt.Sprintf("Benchmark agreement %d", i+1),
			"objective":    "Measure the hot paths of the service against baselines run side by side on the same machine.",
			"rules":        []string{"Figures from different machines are not compared.", "Every baseline runs in the same session as the path it anchors."},
			"deadline":     deadline,
			"participants": parts,
		}
		var out created
		if err := b.operatorRequest(ctx, http.MethodPost, "/api/v1/admin/agreements", in, &out); err != nil {
			return ags, fmt.Errorf("create agreement %d: %w", i+1, err)
		}
		if len(out.Participants) != nparts {
			return ags, fmt.Errorf("create agreement %d: %d participants in the answer, want %d", i+1, len(out.Participants), nparts)
		}
		a := &agreement{index: i, id: out.AgreementID, revision: out.RevisionNumber}
		for j, p := range out.Participants {
			pt := &participant{agreement: a, index: j, invitationID: p.InvitationID, participant: p.ParticipantID}
			a.parts = append(a.parts, pt)
			w.byInv[p.InvitationID] = pt
		}
		ags = append(ags, a)
	}
	return ags, nil
}

// parseInvitation reads one Maildir file as an invited agent would, with
// the same parser and the guide's five checks (ingest), pinned to the
// bench's own loopback origin.
func parseInvitation(raw []byte, origin string) (*envelope.Invitation, error) {
	return ingest.ParseMessageBytes(raw, envelope.Policy{Origin: origin, AllowHTTPLoopback: true})
}

// readInvitations waits until every participant's email is in the Maildir.
func (b *bench) readInvitations(ctx context.Context) error {
	w := b.world
	found := 0
	for _, p := range w.byInv {
		if p.secret != "" {
			found++ // read by an earlier call
		}
	}
	seen := map[string]bool{}
	deadline := time.Now().Add(5 * time.Minute)
	for found < len(w.byInv) {
		for _, sub := range []string{"new", "cur"} {
			ents, _ := os.ReadDir(filepath.Join(b.svc.mailDir, sub))
			for _, e := range ents {
				path := filepath.Join(b.svc.mailDir, sub, e.Name())
				if seen[path] {
					continue
				}
				raw, err := os.ReadFile(path)
				if err != nil {
					continue
				}
				seen[path] = true
				inv, err := parseInvitation(raw, b.svc.origin)
				if err != nil {
					return fmt.Errorf("mail %s: %w", path, err)
				}
				pt := w.byInv[inv.InvitationID]
				if pt == nil || pt.secret != "" {
					continue
				}
				pt.secret, pt.proof, pt.inbox = inv.Secret, inv.EmailProof, inv.Inbox
				pt.exchangeURL, pt.claimURL = inv.ExchangeURL, inv.ClaimURL
				found++
			}
		}
		if found == len(w.byInv) {
			break
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("only %d of %d invitation emails arrived in %s within 5 minutes", found, len(w.byInv), b.svc.mailDir)
		}
		if err := b.svc.alive(); err != nil {
			return err
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
	return nil
}

var jsonHeader = http.Header{"Content-Type": {"application/json"}}

// exchangeAll exchanges every secret of ps once, as one measured load.
func (b *bench) exchangeAll(ctx context.Context, ps []*participant) (figures, error) {
	ts := make([]vegeta.Target, len(ps))
	for i, p := range ps {
		body, _ := json.Marshal(map[string]string{"secret": p.secret})
		ts[i] = vegeta.Target{Method: http.MethodPost, URL: p.exchangeURL, Body: body, Header: jsonHeader}
	}
	return b.oncePerParticipant(ctx, "exchange", ts, func(p *participant, body []byte) error {
		var out struct {
			SessionToken   string `json:"sessionToken"`
			RevisionNumber int    `json:"revisionNumber"`
			RevisionDigest string `json:"revisionDigest"`
			Actions        struct {
				Room   string `json:"room"`
				Events string `json:"events"`
			} `json:"actions"`
		}
		if err := json.Unmarshal(body, &out); err != nil || out.SessionToken == "" || out.Actions.Room == "" || out.Actions.Events == "" {
			return fmt.Errorf("exchange answer without sessionToken or actions: %.200s", body)
		}
		p.session, p.roomURL, p.eventsURL = out.SessionToken, out.Actions.Room, out.Actions.Events
		p.agreement.digest, p.agreement.revision = out.RevisionDigest, out.RevisionNumber
		return nil
	})
}

// claimAll claims every slot of ps with its session and email proof.
func (b *bench) claimAll(ctx context.Context, ps []*participant) (figures, error) {
	ts := make([]vegeta.Target, len(ps))
	for i, p := range ps {
		body, _ := json.Marshal(map[string]string{"emailProof": p.proof, "inbox": p.inbox})
		ts[i] = vegeta.Target{Method: http.MethodPost, URL: p.claimURL, Body: body, Header: http.Header{
			"Content-Type":  {"application/json"},
			"Authorization": {"Consensus-Session " + p.session},
		}}
	}
	f, err := b.oncePerParticipant(ctx, "claim", ts, func(p *participant, body []byte) error {
		var out struct {
			ParticipantToken string `json:"participantToken"`
		}
		if err := json.Unmarshal(body, &out); err != nil || out.ParticipantToken == "" {
			return fmt.Errorf("claim answer without participantToken: %.200s", body)
		}
		p.token = out.ParticipantToken
		p.auth = http.Header{"Authorization": {"Consensus-Participant " + p.token}}
		return nil
	})
	if err == nil {
		for _, a := range agreementsOf(ps) {
			cmd, _ := json.Marshal(map[string]any{"action": "comment", "body": commentText(a.index), "revision": a.revision, "digest": a.digest})
			a.body = cmd
		}
	}
	return f, err
}

// oncePerParticipant sends ts, one request per participant, as one measured
// load; decode reads each 200 answer into its participant. The last decode
// error, or fewer successes than requests, fails the load.
func (b *bench) oncePerParticipant(ctx context.Context, name string, ts []vegeta.Target, decode func(p *participant, body []byte) error) (figures, error) {
	var perr error
	f, err := runAttack(ctx, b.serviceWatch(), attack{
		Targeter: listTargeter(ts), Conns: b.cfg.Conns, Bodies: true, Expect: http.StatusOK,
		OnResult: func(r *vegeta.Result) {
			p := b.world.invitationOf(r.URL)
			if r.Code != http.StatusOK || p == nil {
				return
			}
			if err := decode(p, r.Body); err != nil {
				perr = err
			}
		},
	})
	if err == nil {
		err = perr
	}
	if err == nil && f.OK != len(ts) {
		err = fmt.Errorf("%s: %d of %d succeeded (%s)", name, f.OK, len(ts), f.errorText())
	}
	return f, err
}

// agreementsOf lists the agreements of ps, each once, in order.
func agreementsOf(ps []*participant) []*agreement {
	var out []*agreement
	seen := map[*agreement]bool{}
	for _, p := range ps {
		if !seen[p.agreement] {
			seen[p.agreement] = true
			out = append(out, p.agreement)
		}
	}
	return out
}
