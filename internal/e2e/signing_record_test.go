package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/consensus-md/consensus/internal/jwk"
	"github.com/consensus-md/consensus/internal/pgtest"
	"github.com/consensus-md/consensus/internal/record"
)

// verifyBoth runs the Go verifier and the standard-library Node verifier
// on one record and returns the checks each failed; an empty list means it
// verified completely, service signature included.
func verifyBoth(t *testing.T, rec, artifact, jwks []byte) (goFailed, nodeFailed []string) {
	t.Helper()
	set, err := jwk.ParseSet(jwks)
	if err != nil {
		t.Fatal(err)
	}
	rep := record.Verify(rec, record.Options{Artifact: artifact, Keys: &set})
	var out strings.Builder
	_ = rep.Write(&out)
	if rep.OK() && !rep.Authenticated() {
		t.Fatalf("Go verifier did not check the service signature:\n%s", out.String())
	}
	goFailed = rep.FailedChecks()

	node, err := exec.LookPath("node")
	if err != nil {
		t.Fatal("the record tests run the Node verifier too and need Node.js 20+ (apt-get install nodejs)")
	}
	dir := t.TempDir()
	args := []string{"../../tools/verify-record.mjs", filepath.Join(dir, "record.json"), "--keys", filepath.Join(dir, "keys.json")}
	files := map[string][]byte{"record.json": rec, "keys.json": jwks}
	if artifact != nil {
		files["CONSENSUS.md"] = artifact
		args = append(args, "--artifact", filepath.Join(dir, "CONSENSUS.md"))
	}
	for name, b := range files {
		if err := os.WriteFile(filepath.Join(dir, name), b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	nodeOut, err := exec.Command(node, args...).CombinedOutput()
	text := string(nodeOut)
	switch {
	case strings.HasSuffix(text, "RESULT: VERIFIED\n") && err == nil:
		return goFailed, nil
	case err == nil:
		t.Fatalf("node verifier exited 0 without verifying:\n%s", text)
	}
	m := regexp.MustCompile(`RESULT: FAILED \(([^)]*)\)`).FindStringSubmatch(text)
	if m == nil {
		t.Fatalf("node verifier: %v\n%s", err, text)
	}
	return goFailed, strings.Split(m[1], ", ")
}

// TestRecordOfMixedRoom: a room of a keyed required agent, an unkeyed
// required agent and a keyed optional agent reaches consensus; its record
// exists only then, is the same bytes on every read and replica, names no
// inbox, and verifies with both verifiers against the published JWKS and
// CONSENSUS.md, which carries the canonical revision. Changed copies fail
// both, naming what broke.
func TestRecordOfMixedRoom(t *testing.T) {
	t.Parallel()
	s := startServer(t, servertestOptions(signingSeed))
	c := s.create("Mixed room", s.future(),
		participantSpec{"Ada", "agent", true}, participantSpec{"Bo", "agent", true}, participantSpec{"Cy", "agent", false})
	ada, _ := s.joinKeyed(c.Participants[0].InvitationID, newKey("ada"))
	bo := s.agent(c.Participants[1].InvitationID).join()
	cy, _ := s.joinKeyed(c.Participants[2].InvitationID, newKey("cy"))

	ada.say("comment-0001", "comment", "Ship it on Tuesday <10:00 UTC> & watch the graphs")
	expect(t, bo.post("question-0001", "question", "Who holds the pager?"), 201, "")
	expect(t, bo.record(nil), 404, "record-not-ready")
	cy.say("decision-0003", "disagree", "")
	ada.say("decision-0001", "agree", "")
	expect(t, bo.post("decision-0002", "agree", ""), 201, "")
	if st := bo.room().json(t)["outcome"].(map[string]any)["status"]; st != "reached" {
		t.Fatalf("outcome %v", st)
	}

	r := ada.record(nil)
	expect(t, r, 200, "")
	rec := r.body
	etag := r.Header.Get("ETag")
	if !strings.HasPrefix(etag, `"`) || strings.HasPrefix(etag, "W/") {
		t.Fatalf("ETag %q is not strong", etag)
	}
	again := bo.record(nil)
	expect(t, again, 200, "")
	if !bytes.Equal(again.body, rec) || again.Header.Get("ETag") != etag {
		t.Fatal("a second read served other bytes")
	}
	expect(t, cy.record(map[string]string{"If-None-Match": etag}), 304, "")
	if bytes.Contains(rec, []byte("@")) || bytes.Contains(rec, []byte("agents.example")) {
		t.Fatal("the record names an inbox")
	}
	var parsed record.Record
	if err := json.Unmarshal(rec, &parsed); err != nil {
		t.Fatal(err)
	}
	if parsed.Participants[0].PublicKey == nil || parsed.Participants[1].PublicKey != nil || parsed.Participants[2].PublicKey == nil || parsed.EventCount != 5 {
		t.Fatalf("record roster or count: %+v", parsed.Participants)
	}

	keys := s.do("GET", "/.well-known/consensus-keys", nil, nil)
	expect(t, keys, 200, "")
	art := ada.artifact("GET")
	expect(t, art, 200, "")
	if !bytes.Contains(art.body, []byte("\n```json\n"+string(parsed.Final().Canonical)+"\n```\n")) {
		t.Fatalf("CONSENSUS.md does not carry the canonical revision:\n%s", art.body)
	}
	if g, n := verifyBoth(t, rec, art.body, keys.body); len(g) != 0 || len(n) != 0 {
		t.Fatalf("the record does not verify: Go failed %v, Node failed %v", g, n)
	}

	// A replica with another key serves the same record and a JWKS that
	// still publishes the key that signed it.
	replica := startServer(t, withSigningKey(s.ReplicaOptions(), strings.Repeat("7e", 32)))
	rb := replica.do("GET", s.agentPath(bo.inv.InvitationID, "record"), bo.auth(), nil)
	expect(t, rb, 200, "")
	if !bytes.Equal(rb.body, rec) {
		t.Fatal("the replica issued other bytes")
	}
	k2 := replica.do("GET", "/.well-known/consensus-keys", nil, nil)
	var set jwk.Set
	if err := json.Unmarshal(k2.body, &set); err != nil || len(set.Keys) < 2 {
		t.Fatalf("JWKS after a second key: %s", k2.body)
	}
	if g, n := verifyBoth(t, rec, art.body, k2.body); len(g) != 0 || len(n) != 0 {
		t.Fatalf("the record does not verify with the rotated JWKS: Go %v, Node %v", g, n)
	}

	mutations := []struct {
		name     string
		rec, art []byte
		want     string
	}{
		{"changed body", bytes.Replace(rec, []byte("Who holds the pager?"), []byte("Who holds the pagers"), 1), art.body, record.CheckCommandDigest},
		{"changed artifact byte", rec, flip(art.body), record.CheckArtifact},
		{"dropped tail", dropLastEvent(t, rec), art.body, record.CheckEventCount},
		{"forged service signature", forge(t, rec), art.body, record.CheckServiceSignature},
	}
	for _, m := range mutations {
		g, n := verifyBoth(t, m.rec, m.art, keys.body)
		if !slices.Contains(g, m.want) || !slices.Contains(n, m.want) {
			t.Errorf("%s: Go failed %v, Node failed %v, both must name %s", m.name, g, n, m.want)
		}
	}
}

// TestRecordOfEveryOutcome: disagreed, no_consensus and expired rooms have
// records that verify too (without an artifact).
func TestRecordOfEveryOutcome(t *testing.T) {
	t.Parallel()
	s := startServer(t)
	for _, last := range []string{"disagree", "abstain", ""} {
		c := s.create("Outcome "+last, s.future())
		a, _ := s.joinKeyed(c.Participants[0].InvitationID, newKey("a "+last))
		b := s.agent(c.Participants[1].InvitationID).join()
		a.say("decision-0001", "agree", "")
		if last != "" {
			expect(t, b.post("decision-0002", last, ""), 201, "")
		} else {
			expect(t, b.record(nil), 404, "record-not-ready")
			s.Clock.Advance(49 * time.Hour) // past the deadline: expired
		}
		r := b.record(nil)
		expect(t, r, 200, "")
		keys := s.do("GET", "/.well-known/consensus-keys", nil, nil)
		if g, n := verifyBoth(t, r.body, nil, keys.body); len(g) != 0 || len(n) != 0 {
			t.Fatalf("%q: Go failed %v, Node failed %v", last, g, n)
		}
	}
}

// TestRecordRefusedUnlessItVerifies: a record is issued once and served for
// ever, so the service runs the verifier on it first. A stored outcome that
// the events do not support (written behind the service's back) gives no
// record at all rather than a signed one that no verifier accepts.
func TestRecordRefusedUnlessItVerifies(t *testing.T) {
	t.Parallel()
	s := startServer(t, servertestOptions(signingSeed))
	c := s.create("Tampered outcome", s.future(), participantSpec{"Ada", "agent", true}, participantSpec{"Bo", "agent", true})
	ada := s.agent(c.Participants[0].InvitationID).join()
	bo := s.agent(c.Participants[1].InvitationID).join()
	expect(t, ada.post("decision-0001", "agree", ""), 201, "")
	expect(t, bo.post("decision-0002", "disagree", ""), 201, "")

	ctx := context.Background()
	db, err := pgx.Connect(ctx, pgtest.ServiceURL(s.DatabaseURL))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close(ctx)
	if _, err := db.Exec(ctx, `UPDATE agreements SET outcome_status = 'no_consensus' WHERE id = $1`, c.AgreementID); err != nil {
		t.Fatal(err)
	}
	expect(t, ada.record(nil), 500, "internal")
	var stored int
	if err := db.QueryRow(ctx, `SELECT count(*) FROM records WHERE agreement_id = $1`, c.AgreementID).Scan(&stored); err != nil {
		t.Fatal(err)
	}
	if stored != 0 {
		t.Fatal("a record that does not verify was stored")
	}
}
