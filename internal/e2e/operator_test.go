package e2e

import (
	"context"
	"encoding/json"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/consensus-md/consensus/internal/servertest"
)

func TestOperatorAuth(t *testing.T) {
	t.Parallel()
	s := startServer(t)
	for _, h := range []map[string]string{nil, {"Authorization": "Bearer wrong"}, {"Authorization": "Consensus-Participant " + operatorToken}} {
		r := s.do("GET", "/api/v1/admin/agreements", h, nil)
		expect(t, r, 401, "unauthorized")
		if !strings.HasPrefix(r.Header.Get("WWW-Authenticate"), "Bearer") {
			t.Fatalf("WWW-Authenticate %q", r.Header.Get("WWW-Authenticate"))
		}
	}
}

func TestCreateValidation(t *testing.T) {
	t.Parallel()
	s := startServer(t)
	base := func() map[string]any {
		return map[string]any{"title": "T", "objective": "O", "rules": []string{}, "deadline": s.future().Format(time.RFC3339),
			"participants": []map[string]any{{"displayName": "A", "kind": "agent", "email": "a@x.example", "required": true}}}
	}
	cases := map[string]func(m map[string]any){
		"fractional deadline": func(m map[string]any) { m["deadline"] = "2031-01-01T00:00:00.5Z" },
		"past deadline":       func(m map[string]any) { m["deadline"] = "2001-01-01T00:00:00Z" },
		"no timezone":         func(m map[string]any) { m["deadline"] = "2031-01-01T00:00:00" },
		"empty title":         func(m map[string]any) { m["title"] = "" },
		"long title":          func(m map[string]any) { m["title"] = strings.Repeat("t", 201) },
		"no participants":     func(m map[string]any) { m["participants"] = []any{} },
		"unknown field":       func(m map[string]any) { m["public"] = true },
		"bad kind":            func(m map[string]any) { m["participants"].([]map[string]any)[0]["kind"] = "robot" },
		"bad email":           func(m map[string]any) { m["participants"].([]map[string]any)[0]["email"] = "nope" },
		"required missing":    func(m map[string]any) { delete(m["participants"].([]map[string]any)[0], "required") },
		"none required":       func(m map[string]any) { m["participants"].([]map[string]any)[0]["required"] = false },
		"duplicate email": func(m map[string]any) {
			m["participants"] = append(m["participants"].([]map[string]any), map[string]any{"displayName": "B", "kind": "agent", "email": " A@X.example", "required": true})
		},
		"too many rules": func(m map[string]any) { m["rules"] = make([]string, 51) },
	}
	for name, mutate := range cases {
		m := base()
		mutate(m)
		r := s.do("POST", "/api/v1/admin/agreements", invalid(operator()), m)
		if r.StatusCode != 400 {
			t.Errorf("%s: status %d %s", name, r.StatusCode, r.body)
		}
	}
	expect(t, s.do("POST", "/api/v1/admin/agreements", operator(), base()), 201, "")
	// an offset deadline is normalized to UTC Z
	m := base()
	m["deadline"] = "2031-01-01T02:00:00+02:00"
	r := s.do("POST", "/api/v1/admin/agreements", operator(), m)
	expect(t, r, 201, "")
	if r.json(t)["deadline"] != "2031-01-01T00:00:00Z" {
		t.Fatalf("deadline %s", r.body)
	}
	expect(t, s.do("POST", "/api/v1/admin/agreements", invalid(operator()), `{"title":`+strings.Repeat(" ", 1<<20)+`}`), 413, "payload-too-large")
}

func TestOperatorListGetResend(t *testing.T) {
	t.Parallel()
	s := startServer(t)
	var ids []string
	for i := 0; i < 3; i++ {
		ids = append(ids, s.create("List", s.future()).AgreementID)
	}
	p1 := s.do("GET", "/api/v1/admin/agreements?limit=2", operator(), nil).json(t)
	if len(p1["agreements"].([]any)) != 2 || p1["nextCursor"] == nil {
		t.Fatalf("page 1 %v", p1)
	}
	p2 := s.do("GET", "/api/v1/admin/agreements?limit=2&cursor="+p1["nextCursor"].(string), operator(), nil).json(t)
	if len(p2["agreements"].([]any)) != 1 || p2["nextCursor"] != nil || p2["agreements"].([]any)[0].(map[string]any)["agreementId"] != ids[0] {
		t.Fatalf("page 2 %v", p2)
	}
	expect(t, s.do("GET", "/api/v1/admin/agreements?cursor=bogus", operator(), nil), 400, "invalid-request")
	expect(t, s.do("GET", "/api/v1/admin/agreements?limit=0", invalid(operator()), nil), 400, "invalid-request")
	expect(t, s.do("GET", "/api/v1/admin/agreements/6f1d8a9e-2b3c-4d5e-8f90-123456789abc", operator(), nil), 404, "not-found")

	c := s.create("Resend", s.future())
	old := s.invitation(c.Participants[0].InvitationID)
	// wait until the first email is recorded as sent
	waitFor(t, func() bool {
		d := s.do("GET", "/api/v1/admin/agreements/"+c.AgreementID, operator(), nil).json(t)
		dl := d["participants"].([]any)[0].(map[string]any)["deliveries"].([]any)
		return len(dl) == 1 && dl[0].(map[string]any)["state"] == "sent"
	})
	r := s.do("POST", "/api/v1/admin/invitations/"+c.Participants[0].InvitationID+"/resend", operator(), nil)
	expect(t, r, 202, "")
	waitFor(t, func() bool {
		d := s.do("GET", "/api/v1/admin/agreements/"+c.AgreementID, operator(), nil).json(t)
		dl := d["participants"].([]any)[0].(map[string]any)["deliveries"].([]any)
		return len(dl) == 2 && dl[1].(map[string]any)["state"] == "sent"
	})
	d0 := s.do("GET", "/api/v1/admin/agreements/"+c.AgreementID, operator(), nil).json(t)
	first := d0["participants"].([]any)[0].(map[string]any)["deliveries"].([]any)[0].(map[string]any)
	if h := first["history"].([]any); len(h) != 1 || h[0].(map[string]any)["ok"] != true || !strings.HasPrefix(h[0].(map[string]any)["reply"].(string), "maildir: new/") {
		t.Fatalf("delivery history %v", first)
	}
	fresh := s.newestInvitation(c.Participants[0].InvitationID, old.Secret)
	expect(t, s.do("POST", s.agentPath(old.InvitationID, "exchange"), nil, map[string]string{"secret": old.Secret}), 404, "not-found")
	expect(t, s.do("POST", s.agentPath(old.InvitationID, "exchange"), nil, map[string]string{"secret": fresh.Secret}), 200, "")
	d := s.do("GET", "/api/v1/admin/agreements/"+c.AgreementID, operator(), nil)
	if strings.Contains(string(d.body), fresh.Secret) || strings.Contains(string(d.body), fresh.EmailProof) {
		t.Fatal("operator view shows a credential")
	}
	expect(t, s.do("POST", "/api/v1/admin/participants/"+c.Participants[0].ParticipantID+"/revoke", operator(), nil), 200, "")
	expect(t, s.do("POST", "/api/v1/admin/invitations/"+c.Participants[0].InvitationID+"/resend", operator(), nil), 409, "not-resendable")
}

func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(20 * time.Second); time.Now().Before(deadline); time.Sleep(25 * time.Millisecond) {
		if cond() {
			return
		}
	}
	t.Fatal("condition not met in time")
}

// TestIndependentEncoderAgrees: Python's json.dumps(sort_keys=True,
// separators=(",", ":"), ensure_ascii=False) over the returned
// canonicalRevision hashes to revisionDigest, for a title with &, < and
// emoji and an objective with U+2028 (a title is one line, so it may not
// hold U+2028 itself).
func TestIndependentEncoderAgrees(t *testing.T) {
	t.Parallel()
	py, err := exec.LookPath("python3")
	if err != nil {
		t.Fatal("python3 is needed as the independent encoder")
	}
	s := startServer(t)
	c, err := s.CreateAgreement(context.Background(), servertest.Agreement{
		Title: "Ship & deploy <v2> now 🚀 — naïve", Objective: "First\u2028second <line> & more", Deadline: s.future(),
		Participants: []servertest.Participant{{DisplayName: "Alpha", Kind: "agent", Email: "alpha@agents.example", Required: true}},
	})
	if err != nil {
		t.Fatal(err)
	}
	a := s.agent(c.Participants[0].InvitationID)
	r := a.exchange()
	expect(t, r, 200, "")
	var doc struct {
		CanonicalRevision json.RawMessage `json:"canonicalRevision"`
		RevisionDigest    string          `json:"revisionDigest"`
	}
	if err := json.Unmarshal(r.body, &doc); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(py, "-c", `import sys, json, hashlib
v = json.load(sys.stdin)
print(hashlib.sha256(json.dumps(v, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode("utf-8")).hexdigest())`)
	cmd.Stdin = strings.NewReader(string(doc.CanonicalRevision))
	out, err := cmd.Output()
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.TrimSpace(string(out)); got != doc.RevisionDigest {
		t.Fatalf("python digest %s, revisionDigest %s", got, doc.RevisionDigest)
	}
}

func TestRateLimit(t *testing.T) {
	t.Parallel()
	s := startServer(t, servertest.Options{RateLimit: 5})
	path := s.agentPath("6f1d8a9e-2b3c-4d5e-8f90-123456789abc", "exchange")
	for i := 0; i < 5; i++ {
		expect(t, s.do("POST", path, nil, map[string]string{"secret": "x"}), 404, "not-found")
	}
	r := s.do("POST", path, nil, map[string]string{"secret": "x"})
	expect(t, r, 429, "rate-limited")
	if r.Header.Get("Retry-After") == "" {
		t.Fatal("no Retry-After")
	}
	// routes are limited separately
	expect(t, s.do("POST", s.agentPath("6f1d8a9e-2b3c-4d5e-8f90-123456789abc", "claim"), invalid(nil), nil), 401, "unauthorized")
}
