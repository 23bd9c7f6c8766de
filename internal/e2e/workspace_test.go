package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/consensus-md/consensus/internal/audit"
	"github.com/consensus-md/consensus/internal/cli/consensusd"
	"github.com/consensus-md/consensus/internal/workspace"
)

// bearer is the Authorization header of an operator credential.
func bearer(token string) map[string]string {
	return map[string]string{"Authorization": "Bearer " + token}
}

// createWorkspace runs `consensusd workspace create --key` against s's
// database, as an administrator would, and returns the workspace's id and
// its owner key's token.
func createWorkspace(t *testing.T, databaseURL, name string) (id, token string) {
	t.Helper()
	var out, errb bytes.Buffer
	env := map[string]string{"DATABASE_URL": databaseURL}
	code := consensusd.Main(context.Background(), []string{"workspace", "create", "--name", name, "--owner-email", " Owner@" + name + ".example ", "--key", name + "-owner"},
		consensusd.Env{Stdout: &out, Stderr: &errb, Getenv: func(k string) string { return env[k] }})
	if code != 0 {
		t.Fatalf("consensusd workspace create: exit %d\n%s%s", code, out.String(), errb.String())
	}
	m := regexp.MustCompile(`(?m)^workspace\s+(\S+)\s+` + name + `$[\s\S]*^owner\s+owner@` + name + `\.example\s[\s\S]*^token\s+(cok_\S+)$`).FindStringSubmatch(out.String())
	if m == nil {
		t.Fatalf("consensusd workspace create printed:\n%s", out.String())
	}
	return m[1], m[2]
}

// newKey creates an API key with scopes through the operator API.
func (s *server) newKey(t *testing.T, with, name string, scopes []workspace.Scope, expires *time.Time) (id, token string) {
	t.Helper()
	body := map[string]any{"name": name, "scopes": scopes}
	if expires != nil {
		body["expiresAt"] = expires.UTC().Format(time.RFC3339)
	}
	r := s.do("POST", "/api/v1/admin/keys", bearer(with), body)
	expect(t, r, 201, "")
	m := r.json(t)
	return m["id"].(string), m["token"].(string)
}

// auditLog reads a workspace's whole audit log with a credential holding
// audit:read.
func (s *server) auditLog(t *testing.T, token string) []audit.Entry {
	t.Helper()
	var all []audit.Entry
	after := int64(0)
	for {
		r := s.do("GET", fmt.Sprintf("/api/v1/admin/audit?after=%d&limit=1000", after), bearer(token), nil)
		expect(t, r, 200, "")
		var page struct {
			Entries   []audit.Entry
			NextAfter *int64
		}
		if err := json.Unmarshal(r.body, &page); err != nil {
			t.Fatal(err)
		}
		all = append(all, page.Entries...)
		if page.NextAfter == nil {
			return all
		}
		after = *page.NextAfter
	}
}

// TestOperatorRoutesWalk walks every operator route with no credential, a
// key of another workspace, a key lacking the route's scope, an expired
// key, a revoked key and the right key, and checks each answer and which
// calls wrote an audit entry, in which workspace: a successful write
// writes one (ok); a write refused by the route writes one with the
// problem code, in the credential's own workspace; a refusal for the key
// (revoked, expired, missing scope) writes one on every route, in the
// key's workspace; a read that succeeds, a request without a credential,
// and anything answered to another workspace's key write nothing in the
// workspace that owns the ids.
func TestOperatorRoutesWalk(t *testing.T) {
	t.Parallel()
	s := startServer(t)
	// Workspace A is default, reached with the bootstrap token; B is made
	// by the command line.
	_, tokenB := createWorkspace(t, s.DatabaseURL, "beta")
	c := s.create("Walk", s.future(), participantSpec{"Ada", "agent", true}, participantSpec{"Bo", "agent", true}, participantSpec{"Cy", "human", false})
	agreementID := c.AgreementID
	resendInvitation := c.Participants[0].InvitationID
	revokeParticipant := c.Participants[2].ParticipantID

	right, rightToken := s.newKey(t, operatorToken, "right", workspace.AllScopes, nil)
	_ = right
	soon := s.Clock.Now().Add(time.Hour)
	_, expiredToken := s.newKey(t, operatorToken, "expiring", workspace.AllScopes, &soon)
	revokedID, revokedToken := s.newKey(t, operatorToken, "revoked", workspace.AllScopes, nil)
	expect(t, s.do("DELETE", "/api/v1/admin/keys/"+revokedID, bearer(operatorToken), nil), 200, "")
	lacking := map[workspace.Scope]string{}
	for _, sc := range workspace.AllScopes {
		var others []workspace.Scope
		for _, o := range workspace.AllScopes {
			if o != sc {
				others = append(others, o)
			}
		}
		_, lacking[sc] = s.newKey(t, operatorToken, "without "+string(sc), others, nil)
	}
	victimID, _ := s.newKey(t, operatorToken, "victim", []workspace.Scope{workspace.AgreementsRead}, nil)
	s.Clock.Advance(2 * time.Hour) // the expiring key has expired

	create := map[string]any{"title": "T", "objective": "O", "deadline": s.future().Format(time.RFC3339),
		"participants": []map[string]any{{"displayName": "A", "kind": "agent", "email": "a@walk.example", "required": true}}}
	type route struct {
		method, path string
		body         any
		scope        workspace.Scope
		write        bool
		ok           int // the status of the right key
		// ownIDs: the path names ids of workspace A (another workspace's
		// key gets 404); otherwise the route lists or creates in the
		// credential's own workspace.
		ownIDs bool
	}
	routes := []route{
		{"POST", "/api/v1/admin/agreements", create, workspace.AgreementsWrite, true, 201, false},
		{"GET", "/api/v1/admin/agreements", nil, workspace.AgreementsRead, false, 200, false},
		{"GET", "/api/v1/admin/agreements/" + agreementID, nil, workspace.AgreementsRead, false, 200, true},
		{"POST", "/api/v1/admin/agreements/" + agreementID + "/revisions", map[string]any{"deadline": s.future().Add(24 * time.Hour).Format(time.RFC3339)}, workspace.AgreementsWrite, true, 201, true},
		{"POST", "/api/v1/admin/participants/" + revokeParticipant + "/revoke", nil, workspace.ParticipantsManage, true, 200, true},
		{"POST", "/api/v1/admin/invitations/" + resendInvitation + "/resend", nil, workspace.ParticipantsManage, true, 202, true},
		{"POST", "/api/v1/admin/keys", map[string]any{"name": "made in the walk", "scopes": []string{"agreements:read"}}, workspace.KeysManage, true, 201, false},
		{"GET", "/api/v1/admin/keys", nil, workspace.KeysManage, false, 200, false},
		{"DELETE", "/api/v1/admin/keys/" + victimID, nil, workspace.KeysManage, true, 200, true},
		{"GET", "/api/v1/admin/audit", nil, workspace.AuditRead, false, 200, false},
	}

	lenA, lenB := len(s.auditLog(t, operatorToken)), len(s.auditLog(t, tokenB))
	// check sends one request and checks its answer and the audit entries
	// it added to each workspace: wantA entries with result resultA in A,
	// wantB in B.
	check := func(what string, rt route, token string, status int, code string, wantA int, resultA string, wantB int) *response {
		t.Helper()
		h := map[string]string{}
		if token != "" {
			h = bearer(token)
		}
		r := s.do(rt.method, rt.path, h, rt.body)
		if r.StatusCode != status {
			t.Fatalf("%s %s %s: status %d, want %d\n%s", what, rt.method, rt.path, r.StatusCode, status, r.body)
		}
		if code != "" {
			expect(t, r, status, code)
		}
		a, b := s.auditLog(t, operatorToken), s.auditLog(t, tokenB)
		if got := len(a) - lenA; got != wantA {
			t.Errorf("%s %s %s: %d audit entries in workspace A, want %d", what, rt.method, rt.path, got, wantA)
		} else if wantA == 1 {
			e := a[len(a)-1]
			if e.Result != resultA || e.WorkspaceID != workspace.DefaultID.String() || e.RequestID != r.Header.Get("X-Request-Id") || e.ClientAddress != "127.0.0.1" {
				t.Errorf("%s %s %s: entry %+v, want result %s with the request's id", what, rt.method, rt.path, e, resultA)
			}
		}
		if got := len(b) - lenB; got != wantB {
			t.Errorf("%s %s %s: %d audit entries in workspace B, want %d", what, rt.method, rt.path, got, wantB)
		}
		lenA, lenB = len(a), len(b)
		return r
	}
	writes := func(rt route) int {
		if rt.write {
			return 1
		}
		return 0
	}
	for _, rt := range routes {
		check("no credential", rt, "", 401, "unauthorized", 0, "", 0)
		check("unknown key", rt, "cok_"+strings.Repeat("x", 43), 401, "unauthorized", 0, "", 0)
		check("expired key", rt, expiredToken, 401, "key-expired", 1, "key-expired", 0)
		check("revoked key", rt, revokedToken, 401, "key-revoked", 1, "key-revoked", 0)
		check("key lacking "+string(rt.scope), rt, lacking[rt.scope], 403, "insufficient-scope", 1, "insufficient-scope", 0)
		if rt.ownIDs {
			// Another workspace's key: the generic 404, recorded (for a
			// write) in its own workspace, never in A's.
			r := check("workspace B's key", rt, tokenB, 404, "not-found", 0, "", writes(rt))
			if !bytes.Contains(r.body, []byte(`"detail":"Nothing is available at this address."`)) {
				t.Errorf("workspace B's key on %s: %s", rt.path, r.body)
			}
		} else {
			r := check("workspace B's key", rt, tokenB, rt.ok, "", 0, "", writes(rt))
			ids := []string{agreementID, right, victimID, workspace.DefaultID.String()}
			if rt.scope == workspace.AuditRead {
				// B's log names the ids B itself sent; no entry is A's.
				ids = []string{`"workspaceId":"` + workspace.DefaultID.String()}
			}
			for _, id := range ids {
				if bytes.Contains(r.body, []byte(id)) {
					t.Errorf("workspace B's key on %s %s sees workspace A's %s:\n%s", rt.method, rt.path, id, r.body)
				}
			}
		}
		check("right key", rt, rightToken, rt.ok, "", writes(rt), "ok", 0)
	}

	// The refusals named the key that was refused, and the chain verifies;
	// an entry changed after the fact breaks it.
	a := s.auditLog(t, operatorToken)
	names := map[string]bool{}
	for _, e := range a {
		names[e.Actor.Kind+":"+e.Actor.Name] = true
	}
	for _, want := range []string{"bootstrap:CONSENSUS_OPERATOR_TOKEN", "key:right", "key:expiring", "key:revoked", "key:without audit:read"} {
		if !names[want] {
			t.Errorf("no audit entry by %s", want)
		}
	}
	if _, err := audit.Verify(a); err != nil {
		t.Fatalf("workspace A's exported chain: %v", err)
	}
	a[3].Result = "changed after the fact"
	if _, err := audit.Verify(a); !errors.Is(err, audit.ErrBroken) {
		t.Fatalf("a changed entry still verifies: %v", err)
	}
	b := s.auditLog(t, tokenB)
	if _, err := audit.Verify(b); err != nil || len(b) < 3 || b[0].Action != "workspace.create" || b[0].Actor.Kind != "cli" {
		t.Fatalf("workspace B's chain (%v): %+v", err, b[:min(3, len(b))])
	}

	// A dry run stores nothing and records nothing.
	before := len(s.auditLog(t, operatorToken))
	list := func() int {
		return len(s.do("GET", "/api/v1/admin/agreements?limit=100", bearer(rightToken), nil).json(t)["agreements"].([]any))
	}
	n := list()
	r := s.do("POST", "/api/v1/admin/agreements?dryRun=true", bearer(rightToken), create)
	expect(t, r, 200, "")
	p := r.json(t)
	if p["dryRun"] != true || p["revisionNumber"] != float64(1) || !strings.Contains(p["canonical"].(string), `"title":"T"`) {
		t.Fatalf("dry run: %s", r.body)
	}
	expect(t, s.do("POST", "/api/v1/admin/agreements?dryRun=true", invalid(bearer(rightToken)), map[string]any{"title": ""}), 400, "invalid-request")
	if list() != n || len(s.auditLog(t, operatorToken)) != before {
		t.Fatal("a dry run stored an agreement or an audit entry")
	}
}
