package cli

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// TestAdminAmend: the changes file goes to the agreement's revisions route
// as sent, and the answer says what the revision does to decisions.
func TestAdminAmend(t *testing.T) {
	t.Parallel()
	type seen struct{ method, path, body string }
	got := make(chan seen, 1)
	// A canned answer, not servertest: it checks the rendering of a fixed
	// revision answer; internal/e2e amends through the CLI against a real server.
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		got <- seen{r.Method, r.URL.Path, string(b)}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusCreated)
		_, _ = io.WriteString(w, `{"agreementId":"0190a6b2-7c3d-7e4f-8a9b-0c1d2e3f4a5b","revisionNumber":2,"revisionDigest":"`+hex64+`","markdownDigest":"`+hex64+`","termsDigest":"`+hex64+`","termsChanged":true,"changed":["objective","participants"],"deadline":"2030-01-01T00:00:00Z","added":[{"participantId":"p1","invitationId":"i1","displayName":"New","kind":"agent","email":"new@agents.test","required":true,"delivery":"queued"}],"notified":[{"participantId":"p0","invitationId":"i0","delivery":"queued"}]}`)
	}))
	t.Cleanup(srv.Close)
	env := map[string]string{"CONSENSUS_URL": srv.URL, "CONSENSUS_OPERATOR_TOKEN": "cso_test-operator-token-0123456789"}
	changes := `{"objective":"Ship on Thursday.","participants":[{"displayName":"New","kind":"agent","email":"new@agents.test","required":true}]}`
	code, out, errb := run(t, env, changes, "admin", "amend", "0190a6b2-7c3d-7e4f-8a9b-0c1d2e3f4a5b", "-f", "-", "--output", "table")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errb)
	}
	s := <-got
	if s.method != "POST" || s.path != "/api/v1/admin/agreements/0190a6b2-7c3d-7e4f-8a9b-0c1d2e3f4a5b/revisions" || s.body != changes {
		t.Fatalf("sent %+v", s)
	}
	for _, want := range []string{"revision         2", "earlier decisions are stale", "objective, participants", "invitation to new@agents.test (agent, required)", "revision notice"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	if code, _, errb := run(t, env, "", "admin", "amend", "0190a6b2-7c3d-7e4f-8a9b-0c1d2e3f4a5b"); code != 2 || !strings.Contains(errb, "missing -f FILE") {
		t.Fatalf("without -f: exit %d: %s", code, errb)
	}
}
