package e2e

import (
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"strconv"
	"strings"
	"testing"
)

func TestArtifact(t *testing.T) {
	t.Parallel()
	s := startServer(t)
	c := s.create("Artifact & <friends>", s.future(), participantSpec{"Alpha", "agent", true}, participantSpec{"Beta", "agent", true}, participantSpec{"Optional", "agent", false})
	a := s.agent(c.Participants[0].InvitationID).join()
	b := s.agent(c.Participants[1].InvitationID).join()
	o := s.agent(c.Participants[2].InvitationID).join()

	expect(t, a.artifact("GET"), 404, "artifact-not-ready")
	expect(t, o.post("optional-disagree", "disagree", ""), 201, "") // optional: recorded, does not decide
	expect(t, a.post("alpha-agree-01", "agree", ""), 201, "")
	expect(t, a.artifact("GET"), 404, "artifact-not-ready")
	r := b.post("beta-agree-001", "agree", "")
	expect(t, r, 201, "")
	if r.json(t)["outcome"].(map[string]any)["status"] != "reached" {
		t.Fatalf("outcome %s", r.body)
	}

	got := a.artifact("GET")
	expect(t, got, 200, "")
	sum := sha256.Sum256(got.body)
	hexSum := hex.EncodeToString(sum[:])
	h := got.Header
	checks := map[string]string{
		"Content-Type":             "text/markdown; charset=utf-8",
		"Content-Digest":           "sha-256=:" + base64.StdEncoding.EncodeToString(sum[:]) + ":",
		"X-Consensus-Sha256":       hexSum,
		"Etag":                     `"sha256-` + hexSum + `"`,
		"X-Consensus-Agreement-Id": c.AgreementID,
		"X-Consensus-Revision":     "1",
		"Content-Disposition":      `attachment; filename="CONSENSUS.md"`,
		"Cache-Control":            "no-store",
	}
	for k, want := range checks {
		if h.Get(k) != want {
			t.Errorf("%s = %q, want %q", k, h.Get(k), want)
		}
	}
	room := a.room().json(t)
	meta := room["artifact"].(map[string]any)
	if meta["sha256"] != hexSum || meta["bytes"] != float64(len(got.body)) || meta["url"] != s.Origin+s.agentPath(a.inv.InvitationID, "artifact") {
		t.Fatalf("room artifact metadata %v", meta)
	}
	if h.Get("X-Consensus-Finalized-At") != room["outcome"].(map[string]any)["decidedAt"] {
		t.Errorf("finalized at %q vs decidedAt %v", h.Get("X-Consensus-Finalized-At"), room["outcome"])
	}
	md := string(got.body)
	for _, want := range []string{c.RevisionDigest, room["revision"].(map[string]any)["markdownDigest"].(string), room["chainHead"].(string), s.Origin, "not a signature", "| Optional (`"} {
		if !strings.Contains(md, want) {
			t.Errorf("artifact lacks %q", want)
		}
	}
	if !strings.Contains(md, "| disagree |") {
		t.Error("the optional participant's decision is not shown")
	}

	head := a.artifact("HEAD")
	expect(t, head, 200, "")
	if len(head.body) != 0 || head.Header.Get("X-Consensus-Sha256") != hexSum || head.Header.Get("Content-Length") != strconv.Itoa(len(got.body)) {
		t.Fatalf("HEAD: %d body bytes, headers %v", len(head.body), head.Header)
	}
	hdr := a.auth()
	hdr["If-None-Match"] = h.Get("ETag")
	expect(t, s.do("GET", s.agentPath(a.inv.InvitationID, "artifact"), hdr, nil), 304, "")

	// the same bytes for every participant, every time
	again := o.artifact("GET")
	if string(again.body) != md {
		t.Fatal("artifact bytes changed")
	}
	// exchange and claim keep working after the outcome is final
	expect(t, a.exchange(), 200, "")
	expect(t, a.claim(map[string]any{"emailProof": a.inv.EmailProof, "inbox": a.inv.Inbox}), 200, "")
}
