package main

import (
	"bytes"
	"context"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/consensus-md/consensus/internal/agentroute"
	"github.com/consensus-md/consensus/internal/canon"
	"github.com/consensus-md/consensus/internal/room"
	"github.com/consensus-md/consensus/internal/secret"
	"github.com/consensus-md/consensus/internal/servertest"
)

// The scale loader's digests are the service's: the binding is
// canon.Marshal of the binding, the command digest canon.DigestOf of the
// version 1 command, the chain link canon.DigestOf of {command_digest,
// created_at, prev, seq}.
func TestScaleDigestsAreCanonical(t *testing.T) {
	spec := fullScale(10)
	spec.Origin, spec.Now = "http://127.0.0.1:8080", time.Now()
	a, err := spec.agreement(3, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range a.Parts {
		canonical, _, err := canon.DigestOf(p.Binding)
		if err != nil {
			t.Fatal(err)
		}
		if string(canonical) != p.BindingJSON {
			t.Fatalf("binding %s, canon.Marshal gives %s", p.BindingJSON, canonical)
		}
	}
	for _, e := range a.Events {
		p := a.Parts[e.Participant]
		cmd := room.Command{
			AgreementID: a.ID.String(), InvitationID: p.InvitationID.String(), ParticipantID: p.ID.String(),
			Revision: 1, RevisionDigest: a.RevisionDigest, Action: e.Action, Body: e.Body,
		}.Unsigned(spec.Origin)
		_, want, err := canon.DigestOf(cmd)
		if err != nil {
			t.Fatal(err)
		}
		if e.CommandDigest != want {
			t.Fatalf("event %d: command digest %s, canon.DigestOf gives %s", e.Seq, e.CommandDigest, want)
		}
		_, link, err := canon.DigestOf(map[string]any{"command_digest": e.CommandDigest, "created_at": canon.FormatTime(e.CreatedAt), "prev": e.Prev, "seq": e.Seq})
		if err != nil {
			t.Fatal(err)
		}
		if e.Hash != link {
			t.Fatalf("event %d: chain hash %s, canon.DigestOf gives %s", e.Seq, e.Hash, link)
		}
	}
}

// TestScaleLoadServes loads a tiny scale into a migrated database and reads
// loaded rooms back through a running service: each room holds the events
// generated for it, in order and chained, every participant's token works,
// and a new post links onto the loaded chain.
func TestScaleLoadServes(t *testing.T) {
	key := make([]byte, 32)
	for i := range key {
		key[i] = byte(i + 7)
	}
	srv := servertest.New(t, servertest.Options{TokenKey: hex.EncodeToString(key)})
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()

	spec := fullScale(100)
	spec.Workspaces, spec.Workers, spec.Chunk = 3, 2, 30
	spec.Origin, spec.TokenKey, spec.Now = srv.Origin, key, time.Now()
	var progress bytes.Buffer
	res, err := loadScale(ctx, srv.DatabaseURL, spec, &progress)
	if err != nil {
		t.Fatalf("load: %v\n%s", err, progress.String())
	}
	if res.Agreements != 100 || res.Participants != 300 || res.Events != 1000 || res.Rows != spec.rows() {
		t.Fatalf("load reported %+v, want 100 agreements, 300 participants, 1,000 events, %d rows", res, spec.rows())
	}
	if !strings.Contains(progress.String(), "rows/s") {
		t.Errorf("no progress line: %q", progress.String())
	}

	// Counted directly, in the service scope: every row, over 3 workspaces.
	cfg, err := pgx.ParseConfig(srv.DatabaseURL)
	if err != nil {
		t.Fatal(err)
	}
	cfg.RuntimeParams["consensus.scope"] = "service"
	conn, err := pgx.ConnectConfig(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	var nAg, nPart, nEv, nWs int
	if err := conn.QueryRow(ctx, `SELECT (SELECT count(*) FROM agreements), (SELECT count(*) FROM participants),
		(SELECT count(*) FROM events), (SELECT count(DISTINCT workspace_id) FROM agreements)`).Scan(&nAg, &nPart, &nEv, &nWs); err != nil {
		t.Fatal(err)
	}
	if nAg != 100 || nPart != 300 || nEv != 1000 || nWs != 3 {
		t.Fatalf("database holds %d agreements, %d participants, %d events over %d workspaces; want 100, 300, 1000 over 3", nAg, nPart, nEv, nWs)
	}

	// Rooms in the default workspace (0) and in another one (1), the last one.
	for _, i := range []int{0, 1, 99} {
		a, err := spec.agreement(i, nil)
		if err != nil {
			t.Fatal(err)
		}
		ak, err := spec.agreement(i, mustKeys(t, key))
		if err != nil {
			t.Fatal(err)
		}
		for j, p := range ak.Parts {
			if p.ID != a.Parts[j].ID {
				t.Fatalf("agreement %d: the token key changed the generated ids", i)
			}
		}
		for j, p := range ak.Parts {
			view := readRoom(t, srv, p.InvitationID.String(), p.Token)
			if view.AgreementID != a.ID.String() || len(view.Events) != len(a.Events) {
				t.Fatalf("agreement %d, participant %d: room of %s with %d events; want %s with %d", i, j, view.AgreementID, len(view.Events), a.ID, len(a.Events))
			}
			for k, e := range a.Events {
				got := view.Events[k]
				if got.ID != e.ID.String() || got.Seq != e.Seq || got.Action != e.Action || got.Body != e.Body ||
					got.Hash != e.Hash || got.Prev != e.Prev || got.CreatedAt != canon.FormatTime(e.CreatedAt) ||
					got.ParticipantID != a.Parts[e.Participant].ID.String() {
					t.Fatalf("agreement %d event %d: served %+v, loaded %+v", i, k+1, got, e)
				}
			}
			if view.ChainHead != a.Events[len(a.Events)-1].Hash {
				t.Errorf("agreement %d: chain head %s, want the last event's hash", i, view.ChainHead)
			}
			if want := eventLimit - p.Events; view.You.EventsRemaining != want {
				t.Errorf("agreement %d participant %d: %d events remaining, want %d", i, j, view.You.EventsRemaining, want)
			}
			if view.Outcome.Status != "pending" || view.Revision.RevisionDigest == "" {
				t.Errorf("agreement %d: outcome %q, revision digest %q", i, view.Outcome.Status, view.Revision.RevisionDigest)
			}
		}
		// A post links onto the loaded chain with the next seq.
		p := ak.Parts[0]
		view := readRoom(t, srv, p.InvitationID.String(), p.Token)
		body, _ := json.Marshal(map[string]any{"action": "comment", "body": "Posted on top of the loaded room.", "revision": 1, "digest": view.Revision.RevisionDigest})
		req, _ := http.NewRequestWithContext(ctx, http.MethodPost, agentroute.ForKind(srv.Origin, room.KindAgent, p.InvitationID.String()).Events, bytes.NewReader(body))
		req.Header.Set("Authorization", "Consensus-Participant "+p.Token)
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Idempotency-Key", fmt.Sprintf("scale-test-post-%d", i))
		resp, err := srv.Client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		raw, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusCreated {
			t.Fatalf("agreement %d: post answered %d %s", i, resp.StatusCode, raw)
		}
		after := readRoom(t, srv, p.InvitationID.String(), p.Token)
		last := after.Events[len(after.Events)-1]
		if len(after.Events) != len(a.Events)+1 || last.Seq != int64(len(a.Events)+1) || last.Prev != a.Events[len(a.Events)-1].Hash {
			t.Fatalf("agreement %d: after a post the room has %d events, the last seq %d prev %s; want %d, seq %d onto %s",
				i, len(after.Events), last.Seq, last.Prev, len(a.Events)+1, len(a.Events)+1, a.Events[len(a.Events)-1].Hash)
		}
	}
}

type scaleRoomView struct {
	AgreementID string `json:"agreementId"`
	Revision    struct {
		RevisionDigest string `json:"revisionDigest"`
	} `json:"revision"`
	Events []struct {
		ID            string `json:"id"`
		Seq           int64  `json:"seq"`
		ParticipantID string `json:"participantId"`
		Action        string `json:"action"`
		Body          string `json:"body"`
		CreatedAt     string `json:"createdAt"`
		Hash          string `json:"hash"`
		Prev          string `json:"prev"`
	} `json:"events"`
	You struct {
		EventsRemaining int `json:"eventsRemaining"`
	} `json:"you"`
	Outcome struct {
		Status string `json:"status"`
	} `json:"outcome"`
	ChainHead string `json:"chainHead"`
}

func readRoom(t *testing.T, srv *servertest.Server, invitation, token string) scaleRoomView {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, agentroute.ForKind(srv.Origin, room.KindAgent, invitation).Room, nil)
	req.Header.Set("Authorization", "Consensus-Participant "+token)
	resp, err := srv.Client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET room of invitation %s: %d %s", invitation, resp.StatusCode, raw)
	}
	var v scaleRoomView
	if err := json.Unmarshal(raw, &v); err != nil {
		t.Fatal(err)
	}
	return v
}

func mustKeys(t *testing.T, key []byte) *secret.Keys {
	t.Helper()
	k, err := secret.DeriveKeys(key)
	if err != nil {
		t.Fatal(err)
	}
	return k
}

// A scale run replaces only its own section of results.md; a run on the
// small database rewrites the rest and carries the section over.
func TestScaleSectionInResults(t *testing.T) {
	small := "# Benchmark results\n\n- **Date:** 2026-12-04 13:16 UTC (took 5m55s)\n\n## Ratios against the targets\n\n" +
		"| check | service | baseline | ratio: median (min–max over rounds) | CPU-cost ratio | target | met |\n" +
		"| --- | --- | --- | --- | --- | --- | --- |\n" +
		"| event append, 16 conns over 16 rooms | 465 events/s | 931 tps | 0.50 | 0.63 | ≥ 0.6 | no |\n" +
		"| full room read, 300 events (170 KiB) | 1,672 req/s | 4,804 req/s | 0.40 (0.35–0.45) | 0.36 | ≥ 0.3 | yes |\n" +
		"| peak RSS of consensusd, any load | 69.3 MiB |  |  |  | < 64 MiB | no |\n" +
		"\nMedians.\n\n## Event append\n\nbody\n"
	rows := parseRatioTable(small)
	if len(rows) != 3 || !rows[0].hasRate || rows[0].rateMed != 0.50 || rows[1].rateMed != 0.40 || rows[2].hasRate {
		t.Fatalf("parsed %+v", rows)
	}
	large := "| check | service | baseline | ratio: median (min–max over rounds) | CPU-cost ratio | target | met |\n" +
		"| --- | --- | --- | --- | --- | --- | --- |\n" +
		"| event append, 16 conns over 16 rooms | 400 events/s | 900 tps | 0.44 | 0.60 | ≥ 0.6 | no |\n" +
		"| full room read, 300 events (170 KiB) | 1,600 req/s | 4,000 req/s | 0.38 | 0.35 | ≥ 0.3 | yes |\n"
	cmp := scaleComparison(rows, parseRatioTable(large))
	if !strings.Contains(cmp, "| event append, 16 conns over 16 rooms | 0.50 | 0.44 | 0.88 | 0.63, 0.60 | no |") ||
		!strings.Contains(cmp, "| full room read, 300 events (170 KiB) | 0.40 (0.35–0.45) | 0.38 | 0.95 | 0.36, 0.35 | yes |") {
		t.Fatalf("comparison:\n%s", cmp)
	}

	first := withScaleSection(small, scaleHeading+"\n\nfirst scale run\n")
	if !strings.HasPrefix(first, small[:len(small)-1]) || !strings.HasSuffix(first, "first scale run\n") {
		t.Fatalf("appended:\n%s", first)
	}
	second := withScaleSection(first, scaleHeading+"\n\nsecond scale run\n")
	if strings.Contains(second, "first scale run") || strings.Count(second, scaleHeading) != 1 || !strings.Contains(second, "## Event append") {
		t.Fatalf("replaced:\n%s", second)
	}
	if kept := keptScaleSection(second); kept != scaleHeading+"\n\nsecond scale run\n" {
		t.Fatalf("kept %q", kept)
	}
	// A section followed by another one ends at that heading.
	mid := withScaleSection(small[:strings.Index(small, "## Event append")]+scaleHeading+"\n\nold\n\n## Event append\n\nbody\n", scaleHeading+"\n\nnew\n")
	if !strings.Contains(mid, "new\n\n## Event append\n\nbody\n") || strings.Contains(mid, "old") {
		t.Fatalf("middle section:\n%s", mid)
	}
}

// BenchmarkScaleAgreement is the loader's Go side: generating one room's rows.
func BenchmarkScaleAgreement(b *testing.B) {
	spec := fullScale(100_000)
	spec.Origin, spec.Now = "http://127.0.0.1:8080", time.Now()
	keys := mustKeys(&testing.T{}, make([]byte, 32))
	for i := 0; b.Loop(); i++ {
		if _, err := spec.agreement(i%100_000, keys); err != nil {
			b.Fatal(err)
		}
	}
}
