package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	vegeta "github.com/tsenart/vegeta/v12/lib"

	"github.com/consensus-md/consensus/internal/envelope"
	"github.com/consensus-md/consensus/internal/ingest"
)

// eventLimit is SPEC §4's limit of stored events per participant and revision.
const eventLimit = 100

type participant struct {
	agreement    *agreement
	index        int
	invitationID string
	participant  string // participantId
	// from the invitation email
	secret, proof, inbox, exchangeURL, claimURL string
	// from exchange and claim
	session, token, roomURL, eventsURL string
	auth                               http.Header // Authorization for the room
	used                               int         // events handed out on revision 1 (under picker.mu or before any load)
	etag                               string
}

type agreement struct {
	index    int
	id       string
	digest   string // revision digest as exchange returns it
	revision int
	parts    []*participant
	target   int          // events the fill brings it to
	stored   atomic.Int64 // events stored (201 answers seen)
	next     int          // rotation over participants (under picker.mu)
	body     []byte       // the comment command every event of this room posts
	readSize int          // when one of the three read rooms: its size
}

// commentText is about as long as a short rationale an agent would post.
func commentText(a int) string {
	return fmt.Sprintf("Benchmark comment in agreement %d: the rehearsal passed, rollback was tested within fifteen minutes, and the release notes are ready for review.", a+1)
}

type world struct {
	ags   []*agreement
	byInv map[string]*participant
	runID string
	keys  atomic.Int64
}

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
	for i := range b.cfg.Agreements {
		parts := make([]pin, b.cfg.Parts)
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
			return fmt.Errorf("create agreement %d: %w", i+1, err)
		}
		if len(out.Participants) != b.cfg.Parts {
			return fmt.Errorf("create agreement %d: %d participants in the answer, want %d", i+1, len(out.Participants), b.cfg.Parts)
		}
		a := &agreement{index: i, id: out.AgreementID, revision: out.RevisionNumber}
		for j, p := range out.Participants {
			pt := &participant{agreement: a, index: j, invitationID: p.InvitationID, participant: p.ParticipantID}
			a.parts = append(a.parts, pt)
			w.byInv[p.InvitationID] = pt
		}
		w.ags = append(w.ags, a)
	}
	return nil
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

// invitationOf finds the participant a result's URL belongs to.
func (w *world) invitationOf(u string) *participant {
	const marker = "/invitations/"
	i := strings.Index(u, marker)
	if i < 0 {
		return nil
	}
	rest := u[i+len(marker):]
	if j := strings.IndexByte(rest, '/'); j >= 0 {
		rest = rest[:j]
	}
	return w.byInv[rest]
}

func (w *world) all() []*participant {
	var ps []*participant
	for _, a := range w.ags {
		ps = append(ps, a.parts...)
	}
	return ps
}

var jsonHeader = http.Header{"Content-Type": {"application/json"}}

// exchangeAll exchanges every secret once, as one measured load.
func (b *bench) exchangeAll(ctx context.Context) (figures, error) {
	ps := b.world.all()
	ts := make([]vegeta.Target, len(ps))
	for i, p := range ps {
		body, _ := json.Marshal(map[string]string{"secret": p.secret})
		ts[i] = vegeta.Target{Method: http.MethodPost, URL: p.exchangeURL, Body: body, Header: jsonHeader}
	}
	var perr error
	f, err := runAttack(ctx, b.serviceWatch(), attack{
		Targeter: listTargeter(ts), Conns: b.cfg.Conns, Bodies: true, Expect: http.StatusOK,
		OnResult: func(r *vegeta.Result) {
			p := b.world.invitationOf(r.URL)
			if r.Code != http.StatusOK || p == nil {
				return
			}
			var out struct {
				SessionToken   string `json:"sessionToken"`
				RevisionNumber int    `json:"revisionNumber"`
				RevisionDigest string `json:"revisionDigest"`
				Actions        struct {
					Room   string `json:"room"`
					Events string `json:"events"`
				} `json:"actions"`
			}
			if err := json.Unmarshal(r.Body, &out); err != nil || out.SessionToken == "" || out.Actions.Room == "" || out.Actions.Events == "" {
				perr = fmt.Errorf("exchange answer without sessionToken or actions: %.200s", r.Body)
				return
			}
			p.session, p.roomURL, p.eventsURL = out.SessionToken, out.Actions.Room, out.Actions.Events
			p.agreement.digest, p.agreement.revision = out.RevisionDigest, out.RevisionNumber
		},
	})
	if err == nil {
		err = perr
	}
	if err == nil && f.OK != len(ps) {
		err = fmt.Errorf("exchange: %d of %d succeeded (%s)", f.OK, len(ps), f.errorText())
	}
	return f, err
}

// claimAll claims every slot with its session and email proof.
func (b *bench) claimAll(ctx context.Context) (figures, error) {
	ps := b.world.all()
	ts := make([]vegeta.Target, len(ps))
	for i, p := range ps {
		body, _ := json.Marshal(map[string]string{"emailProof": p.proof, "inbox": p.inbox})
		ts[i] = vegeta.Target{Method: http.MethodPost, URL: p.claimURL, Body: body, Header: http.Header{
			"Content-Type":  {"application/json"},
			"Authorization": {"Consensus-Session " + p.session},
		}}
	}
	var perr error
	f, err := runAttack(ctx, b.serviceWatch(), attack{
		Targeter: listTargeter(ts), Conns: b.cfg.Conns, Bodies: true, Expect: http.StatusOK,
		OnResult: func(r *vegeta.Result) {
			p := b.world.invitationOf(r.URL)
			if r.Code != http.StatusOK || p == nil {
				return
			}
			var out struct {
				ParticipantToken string `json:"participantToken"`
			}
			if err := json.Unmarshal(r.Body, &out); err != nil || out.ParticipantToken == "" {
				perr = fmt.Errorf("claim answer without participantToken: %.200s", r.Body)
				return
			}
			p.token = out.ParticipantToken
			p.auth = http.Header{"Authorization": {"Consensus-Participant " + p.token}}
		},
	})
	if err == nil {
		err = perr
	}
	if err == nil && f.OK != len(ps) {
		err = fmt.Errorf("claim: %d of %d succeeded (%s)", f.OK, len(ps), f.errorText())
	}
	if err == nil {
		for _, a := range b.world.ags {
			cmd, _ := json.Marshal(map[string]any{"action": "comment", "body": commentText(a.index), "revision": a.revision, "digest": a.digest})
			a.body = cmd
		}
	}
	return f, err
}

// eventTarget is one comment by p with a fresh Idempotency-Key.
func (w *world) eventTarget(p *participant) vegeta.Target {
	key := fmt.Sprintf("bench-%s-%d", w.runID, w.keys.Add(1))
	return vegeta.Target{Method: http.MethodPost, URL: p.eventsURL, Body: p.agreement.body, Header: http.Header{
		"Content-Type":    {"application/json"},
		"Authorization":   p.auth["Authorization"],
		"Idempotency-Key": {key},
	}}
}

// picker hands out appends, rotating over each room's participants so none
// passes the 100-events limit; it reports when every slot is used up.
type picker struct {
	mu        sync.Mutex
	w         *world
	ags       []*agreement
	exhausted bool
}

// nextParticipant takes the next participant of a with events left.
func (a *agreement) nextParticipant() *participant {
	for range a.parts {
		p := a.parts[a.next%len(a.parts)]
		a.next++
		if p.used < eventLimit {
			p.used++
			return p
		}
	}
	return nil
}

// randomTargeter picks a uniformly random room for every append, as
// pgbench's `\set aid random(1, N)` does for the baseline.
func (pk *picker) randomTargeter() vegeta.Targeter {
	return func(t *vegeta.Target) error {
		pk.mu.Lock()
		defer pk.mu.Unlock()
		start := rand.IntN(len(pk.ags))
		for i := range pk.ags {
			if p := pk.ags[(start+i)%len(pk.ags)].nextParticipant(); p != nil {
				*t = pk.w.eventTarget(p)
				return nil
			}
		}
		pk.exhausted = true
		return vegeta.ErrNoTargets
	}
}

// countTargeter hands out n appends into the rooms in turn.
func (pk *picker) countTargeter(n int) vegeta.Targeter {
	handed := 0
	return func(t *vegeta.Target) error {
		pk.mu.Lock()
		defer pk.mu.Unlock()
		for range pk.ags {
			if handed >= n {
				return vegeta.ErrNoTargets
			}
			a := pk.ags[handed%len(pk.ags)]
			handed++
			if p := a.nextParticipant(); p != nil {
				*t = pk.w.eventTarget(p)
				return nil
			}
		}
		pk.exhausted = true
		return vegeta.ErrNoTargets
	}
}

// countStored is an OnResult that keeps each room's event count.
func (w *world) countStored(r *vegeta.Result) {
	if r.Code == http.StatusCreated {
		if p := w.invitationOf(r.URL); p != nil {
			p.agreement.stored.Add(1)
		}
	}
}

// fill brings every room to its target size, rooms interleaved.
func (b *bench) fill(ctx context.Context) (figures, error) {
	var ts []vegeta.Target
	most := 0
	for _, a := range b.world.ags {
		most = max(most, a.target)
	}
	for k := range most {
		for _, a := range b.world.ags {
			if k < a.target {
				p := a.parts[k%len(a.parts)]
				p.used++
				ts = append(ts, b.world.eventTarget(p))
			}
		}
	}
	f, err := runAttack(ctx, b.serviceWatch(), attack{
		Targeter: listTargeter(ts), Conns: b.cfg.Conns, Expect: http.StatusCreated, OnResult: b.world.countStored,
	})
	if err == nil && f.OK != len(ts) {
		err = fmt.Errorf("fill: %d of %d events stored (%s)", f.OK, len(ts), f.errorText())
	}
	return f, err
}

// roomState reads p's room once: body, headers, event count.
func (b *bench) roomState(ctx context.Context, p *participant) ([]byte, http.Header, int, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, p.roomURL, nil)
	if err != nil {
		return nil, nil, 0, err
	}
	req.Header.Set("Authorization", "Consensus-Participant "+p.token)
	resp, err := b.http.Do(req)
	if err != nil {
		return nil, nil, 0, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, nil, 0, err
	}
	if resp.StatusCode != http.StatusOK {
		return nil, nil, 0, fmt.Errorf("GET room: %d %.200s", resp.StatusCode, body)
	}
	var room struct {
		Events []json.RawMessage `json:"events"`
	}
	if err := json.Unmarshal(body, &room); err != nil {
		return nil, nil, 0, fmt.Errorf("GET room: %w", err)
	}
	return body, resp.Header, len(room.Events), nil
}
