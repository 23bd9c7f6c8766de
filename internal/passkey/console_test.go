package passkey_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/consensus-md/consensus/internal/passkey"
	"github.com/consensus-md/consensus/internal/pgtest"
	"github.com/consensus-md/consensus/internal/proctest"
	"github.com/consensus-md/consensus/internal/servertest"
	"github.com/consensus-md/consensus/internal/store"
	"github.com/consensus-md/consensus/internal/venue"
)

func TestMain(m *testing.M) { proctest.Main(m) }

// workspace creates the workspace acme with its owner's printed link, as
// `consensusd workspace create --print-link` does, and returns the token.
func workspace(t *testing.T, databaseURL, origin string) string {
	t.Helper()
	ctx := context.Background()
	st, err := store.Open(ctx, databaseURL)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if err := store.Migrate(ctx, databaseURL); err != nil {
		t.Fatal(err)
	}
	ws, err := (&venue.Venue{Store: st, Now: time.Now, Origin: origin}).CreateWorkspace(ctx, venue.NewWorkspace{Name: "acme", OwnerEmail: "olga@acme.example", Link: venue.LinkPrint})
	if err != nil {
		t.Fatal(err)
	}
	return ws.EnrollmentLink[strings.Index(ws.EnrollmentLink, "#")+1:]
}

var tokenRE = regexp.MustCompile(`/console/enroll#(coe_[A-Za-z0-9_-]{43})`)

// emailedToken waits for the enrollment email to address in maildir.
func emailedToken(t *testing.T, maildir, address string) string {
	t.Helper()
	for end := time.Now().Add(20 * time.Second); time.Now().Before(end); time.Sleep(50 * time.Millisecond) {
		files, _ := filepath.Glob(filepath.Join(maildir, "new", "*"))
		for _, f := range files {
			raw, _ := os.ReadFile(f)
			if strings.Contains(string(raw), address) {
				if m := tokenRE.FindStringSubmatch(string(raw)); m != nil {
					return m[1]
				}
			}
		}
	}
	t.Fatalf("no enrollment email to %s", address)
	return ""
}

type client struct {
	t      *testing.T
	base   string
	origin string
	s      *passkey.Session
}

// do sends a console request as the page would: same origin, with the
// CSRF token on a change. edit may change the request before it leaves.
func (c client) do(method, path, body string, edit ...func(*http.Request)) (int, string) {
	c.t.Helper()
	var r io.Reader
	if body != "" {
		r = strings.NewReader(body)
	}
	req, _ := http.NewRequest(method, c.base+path, r)
	req.AddCookie(c.s.Cookie)
	req.Header.Set("Origin", c.origin)
	req.Header.Set("Sec-Fetch-Site", "same-origin")
	req.Header.Set("X-Consensus-CSRF", c.s.CSRF)
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	for _, e := range edit {
		e(req)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		c.t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

func (c client) count(path, member string) int {
	c.t.Helper()
	status, body := c.do(http.MethodGet, path, "")
	if status != 200 {
		c.t.Fatalf("GET %s: %d %s", path, status, body)
	}
	var m map[string][]json.RawMessage
	_ = json.Unmarshal([]byte(body), &m)
	return len(m[member])
}

const agreementBody = `{"title":"Pick a name","objective":"Choose the project's name.","rules":[],"deadline":"2099-01-01T00:00:00Z",` +
	`"participants":[{"displayName":"Ada","kind":"human","email":"ada@people.example","required":true}]}`

// TestConsoleViewerAndCrossSite: a viewer is refused every change the
// console offers; a request without the CSRF token, from another origin or
// a cross-site form post changes nothing.
func TestConsoleViewerAndCrossSite(t *testing.T) {
	t.Parallel()
	s := servertest.New(t, servertest.Options{DatabaseURL: pgtest.URL(t), Origin: "http://localhost"})
	token := workspace(t, s.DatabaseURL, s.Origin)
	ownerSession, err := passkey.New(s.Origin).Enroll(s.URL, token)
	if err != nil {
		t.Fatal(err)
	}
	owner := client{t, s.URL, s.Origin, ownerSession}
	if status, body := owner.do(http.MethodPost, "/console/api/agreements", agreementBody); status != 201 {
		t.Fatalf("owner creates: %d %s", status, body)
	}
	var created struct {
		Agreements []struct{ AgreementID string } `json:"agreements"`
	}
	_, body := owner.do(http.MethodGet, "/console/api/agreements", "")
	_ = json.Unmarshal([]byte(body), &created)
	agreementID := created.Agreements[0].AgreementID
	_, body = owner.do(http.MethodGet, "/console/api/agreements/"+agreementID, "")
	var detail struct {
		Participants []struct{ ParticipantID, InvitationID string } `json:"participants"`
	}
	_ = json.Unmarshal([]byte(body), &detail)
	if status, body := owner.do(http.MethodPost, "/console/api/keys", `{"name":"deploy","scopes":["agreements:read"]}`); status != 201 {
		t.Fatalf("owner makes a key: %d %s", status, body)
	}
	_, body = owner.do(http.MethodGet, "/console/api/keys", "")
	keyID := regexp.MustCompile(`"id":"([0-9a-f-]{36})"`).FindStringSubmatch(body)[1]
	if status, body := owner.do(http.MethodPost, "/console/api/operators", `{"email":"vera@acme.example","role":"viewer"}`); status != 201 {
		t.Fatalf("owner invites: %d %s", status, body)
	}
	viewerSession, err := passkey.New(s.Origin).Enroll(s.URL, emailedToken(t, s.Maildir, "vera@acme.example"))
	if err != nil {
		t.Fatal(err)
	}
	viewer := client{t, s.URL, s.Origin, viewerSession}
	_, body = owner.do(http.MethodGet, "/console/api/operators", "")
	ownerID := regexp.MustCompile(`"id":"([0-9a-f-]{36})","email":"olga@acme.example"`).FindStringSubmatch(body)[1]

	writes := []struct{ method, path, body string }{
		{http.MethodPost, "/console/api/agreements", agreementBody},
		{http.MethodPost, "/console/api/agreements/" + agreementID + "/revisions", `{"title":"Renamed"}`},
		{http.MethodPost, "/console/api/participants/" + detail.Participants[0].ParticipantID + "/revoke", ""},
		{http.MethodPost, "/console/api/invitations/" + detail.Participants[0].InvitationID + "/resend", ""},
		{http.MethodPost, "/console/api/keys", `{"name":"mine","scopes":["agreements:read"]}`},
		{http.MethodDelete, "/console/api/keys/" + keyID, ""},
		{http.MethodPost, "/console/api/operators", `{"email":"eve@acme.example","role":"owner"}`},
		{http.MethodPut, "/console/api/operators/" + ownerID + "/role", `{"role":"viewer"}`},
		{http.MethodDelete, "/console/api/operators/" + ownerID, ""},
	}
	before := [3]int{owner.count("/console/api/agreements", "agreements"), owner.count("/console/api/keys", "keys"), owner.count("/console/api/operators", "operators")}
	for _, w := range writes {
		if status, body := viewer.do(w.method, w.path, w.body); status != 403 || !strings.Contains(body, "insufficient-scope") {
			t.Errorf("viewer %s %s: %d %s", w.method, w.path, status, body)
		}
	}
	// The owner's changes without the CSRF token, from another origin, or
	// as a cross-site form post.
	refusals := map[string][]func(*http.Request){
		"no CSRF token":   {func(r *http.Request) { r.Header.Del("X-Consensus-CSRF") }},
		"a wrong token":   {func(r *http.Request) { r.Header.Set("X-Consensus-CSRF", viewerSession.CSRF) }},
		"another origin":  {func(r *http.Request) { r.Header.Set("Origin", "https://evil.example") }},
		"cross-site mode": {func(r *http.Request) { r.Header.Set("Sec-Fetch-Site", "cross-site") }},
		"a form post": {func(r *http.Request) {
			r.Header.Set("Origin", "https://evil.example")
			r.Header.Set("Sec-Fetch-Site", "cross-site")
			r.Header.Del("X-Consensus-CSRF")
			r.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		}},
	}
	for name, edit := range refusals {
		for _, w := range writes {
			if status, body := owner.do(w.method, w.path, w.body, edit...); status != 403 || !strings.Contains(body, `"cross-site"`) {
				t.Errorf("%s: %s %s: %d %s", name, w.method, w.path, status, body)
			}
		}
	}
	after := [3]int{owner.count("/console/api/agreements", "agreements"), owner.count("/console/api/keys", "keys"), owner.count("/console/api/operators", "operators")}
	if before != after {
		t.Errorf("refused requests changed something: agreements, keys, operators %v then %v", before, after)
	}
	if _, body := owner.do(http.MethodGet, "/console/api/keys", ""); strings.Contains(body, `"revokedAt":"`) {
		t.Error("a refused request revoked the key")
	}
	if _, body := owner.do(http.MethodGet, "/console/api/agreements/"+agreementID, ""); strings.Contains(body, `"revoked":true`) || !strings.Contains(body, `"revisionNumber":1`) {
		t.Errorf("a refused request changed the agreement: %s", body)
	}
	// The refusals are in the audit log, with the operator as actor.
	_, body = owner.do(http.MethodGet, "/console/api/audit?limit=1000", "")
	if !strings.Contains(body, `"result":"cross-site"`) || !strings.Contains(body, `"result":"insufficient-scope"`) || !strings.Contains(body, `"kind":"operator"`) {
		t.Errorf("the audit log lacks the refusals: %.400s", body)
	}
	// Sign-in works again with the passkey, and not from another origin.
	again := passkey.New(s.Origin)
	if _, err := again.SignIn(s.URL); err == nil {
		t.Error("an unknown passkey signed in")
	}
}

// TestRemovedOperatorRefusedOnEveryReplica: two consensusd processes on one
// database; an operator signed in on the second is refused there within a
// second of an owner removing it on the first.
func TestRemovedOperatorRefusedOnEveryReplica(t *testing.T) {
	t.Parallel()
	c := proctest.Start(t, proctest.Config{DatabaseURL: pgtest.URL(t)}, 2)
	origin := c.Config.Origin
	token := workspace(t, c.Config.DatabaseURL, origin)
	first, second := c.Replicas[0].URL(), c.Replicas[1].URL()
	ownerKey := passkey.New(origin)
	ownerSession, err := ownerKey.Enroll(first, token)
	if err != nil {
		t.Fatal(err)
	}
	owner := client{t, first, origin, ownerSession}
	if status, body := owner.do(http.MethodPost, "/console/api/operators", `{"email":"otto@acme.example","role":"operator"}`); status != 201 {
		t.Fatalf("invite: %d %s", status, body)
	}
	otto := passkey.New(origin)
	ottoSession, err := otto.Enroll(second, emailedToken(t, c.Config.Maildir, "otto@acme.example"))
	if err != nil {
		t.Fatal(err)
	}
	onSecond := client{t, second, origin, ottoSession}
	if status, _ := onSecond.do(http.MethodGet, "/console/api/agreements", ""); status != 200 {
		t.Fatalf("otto before removal: %d", status)
	}
	_, body := owner.do(http.MethodGet, "/console/api/operators", "")
	ottoID := regexp.MustCompile(`"id":"([0-9a-f-]{36})","email":"otto@acme.example"`).FindStringSubmatch(body)[1]
	if status, body := owner.do(http.MethodDelete, "/console/api/operators/"+ottoID, ""); status != 200 {
		t.Fatalf("remove: %d %s", status, body)
	}
	removed := time.Now()
	for {
		status, _ := onSecond.do(http.MethodGet, "/console/api/agreements", "")
		if status == 401 {
			break
		}
		if time.Since(removed) > time.Second {
			t.Fatalf("otto still served %s after removal (%d)", time.Since(removed), status)
		}
	}
	t.Logf("removal on the first replica to refusal on the second: %s", time.Since(removed))
	// Its passkey no longer signs in, on either replica.
	for _, base := range []string{first, second} {
		if _, err := otto.SignIn(base); err == nil {
			t.Errorf("a removed operator signed in on %s", base)
		}
	}
	// The owner's passkey does, on either replica; a stranger's does not.
	if _, err := ownerKey.SignIn(second); err != nil {
		t.Errorf("the owner's passkey: %v", err)
	}
	if _, err := passkey.New(origin).SignIn(first); err == nil {
		t.Error("a fresh authenticator signed in")
	}
}
