package passkey_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/consensus-md/consensus/internal/passkey"
	"github.com/consensus-md/consensus/internal/pgtest"
	"github.com/consensus-md/consensus/internal/servertest"
)

// send is do with the answer's header.
func (c client) send(method, path, body string) (int, http.Header, string) {
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
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		c.t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, resp.Header, string(b)
}

// settled reads the console's agreement at path until no email of it is
// still to be sent (a sending changes the agreement), and returns the
// read's ETag and body.
func (c client) settled(path string) (string, string) {
	c.t.Helper()
	for end := time.Now().Add(20 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		status, h, body := c.send(http.MethodGet, path, "")
		if status == 200 && strings.Contains(body, `"state":"sent"`) && !strings.Contains(body, `"state":"queued"`) && !strings.Contains(body, `"state":"retrying"`) {
			return h.Get("ETag"), body
		}
		if time.Now().After(end) {
			c.t.Fatalf("the agreement's emails were not sent: %d %.400s", status, body)
		}
	}
}

// TestConsoleWritesAnswerConsoleLocations: what a console write creates is
// named in its Location by the console's own URL, which the session can
// follow; the operator API's twin answers the operator API's URL.
func TestConsoleWritesAnswerConsoleLocations(t *testing.T) {
	t.Parallel()
	s := servertest.New(t, servertest.Options{DatabaseURL: pgtest.URL(t), Origin: "http://localhost"})
	session, err := passkey.New(s.Origin).Enroll(s.URL, workspace(t, s.DatabaseURL, s.Origin))
	if err != nil {
		t.Fatal(err)
	}
	owner := client{t, s.URL, s.Origin, session}
	// follow reads a Location of this origin with the session.
	follow := func(what, location, prefix string) string {
		t.Helper()
		path, ok := strings.CutPrefix(location, s.Origin+prefix)
		if !ok {
			t.Fatalf("%s: Location %q is not under %s%s", what, location, s.Origin, prefix)
		}
		return prefix + path
	}

	status, h, body := owner.send(http.MethodPost, "/console/api/agreements", agreementBody)
	if status != 201 {
		t.Fatalf("create: %d %s", status, body)
	}
	var created struct{ AgreementID string }
	_ = json.Unmarshal([]byte(body), &created)
	path := follow("create", h.Get("Location"), "/console/api/agreements/")
	if path != "/console/api/agreements/"+created.AgreementID {
		t.Errorf("create: Location %s names another agreement than %s", path, created.AgreementID)
	}
	if status, body := owner.do(http.MethodGet, path, ""); status != 200 || !strings.Contains(body, created.AgreementID) {
		t.Errorf("GET the creation's Location: %d %.200s", status, body)
	}

	status, h, body = owner.send(http.MethodPost, path+"/revisions", `{"title":"Renamed"}`)
	if status != 201 {
		t.Fatalf("amend: %d %s", status, body)
	}
	if got := follow("amend", h.Get("Location"), "/console/api/agreements/"); got != path {
		t.Errorf("amend: Location %s, want %s", got, path)
	}

	status, h, body = owner.send(http.MethodPost, "/console/api/keys", `{"name":"deploy","scopes":["agreements:read","agreements:write"]}`)
	if status != 201 {
		t.Fatalf("key: %d %s", status, body)
	}
	var key struct{ ID, Token string }
	_ = json.Unmarshal([]byte(body), &key)
	if got := follow("key", h.Get("Location"), "/console/api/keys/"); got != "/console/api/keys/"+key.ID {
		t.Errorf("key: Location %s names another key than %s", got, key.ID)
	}

	// The operator API, with the key just made, still names its own URLs.
	req, _ := http.NewRequest(http.MethodPost, s.URL+"/api/v1/admin/agreements", strings.NewReader(agreementBody))
	req.Header.Set("Authorization", "Bearer "+key.Token)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if loc := resp.Header.Get("Location"); resp.StatusCode != 201 || !strings.HasPrefix(loc, s.Origin+"/api/v1/admin/agreements/") {
		t.Errorf("admin create: %d, Location %q", resp.StatusCode, loc)
	}
}

// TestConsoleAgreementReadsOneRevision: the console's agreement is its
// detail and its terms of one revision, even when an amendment commits
// while the detail is being read. The read is stopped half way (a lock on
// a table it reads last) while the amendment commits.
func TestConsoleAgreementReadsOneRevision(t *testing.T) {
	t.Parallel()
	s := servertest.New(t, servertest.Options{DatabaseURL: pgtest.URL(t), Origin: "http://localhost"})
	session, err := passkey.New(s.Origin).Enroll(s.URL, workspace(t, s.DatabaseURL, s.Origin))
	if err != nil {
		t.Fatal(err)
	}
	owner := client{t, s.URL, s.Origin, session}
	status, _, body := owner.send(http.MethodPost, "/console/api/agreements", agreementBody)
	if status != 201 {
		t.Fatalf("create: %d %s", status, body)
	}
	var created struct{ AgreementID string }
	_ = json.Unmarshal([]byte(body), &created)
	path := "/console/api/agreements/" + created.AgreementID
	// The invitation's email first, so that no send waits on the lock.
	owner.settled(path)

	ctx := context.Background()
	lock := db(t, s.DatabaseURL)
	if _, err := lock.Exec(ctx, "BEGIN; LOCK TABLE outbox_attempts IN ACCESS EXCLUSIVE MODE"); err != nil {
		t.Fatal(err)
	}
	type answer struct {
		status int
		body   string
	}
	read := make(chan answer, 1)
	go func() {
		req, _ := http.NewRequest(http.MethodGet, s.URL+path, nil)
		req.AddCookie(session.Cookie)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			read <- answer{0, err.Error()}
			return
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		read <- answer{resp.StatusCode, string(b)}
	}()
	watch := db(t, s.DatabaseURL)
	for end := time.Now().Add(10 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		var n int
		if err := watch.QueryRow(ctx, `SELECT count(*) FROM pg_stat_activity WHERE datname = current_database()
			AND wait_event_type = 'Lock' AND query LIKE '%outbox_attempts%'`).Scan(&n); err != nil {
			t.Fatal(err)
		}
		if n > 0 {
			break
		}
		if time.Now().After(end) {
			t.Fatal("the console's read never reached the locked table")
		}
	}
	if status, body := owner.do(http.MethodPost, path+"/revisions", `{"title":"Renamed"}`); status != 201 {
		t.Fatalf("amend: %d %s", status, body)
	}
	if _, err := lock.Exec(ctx, "COMMIT"); err != nil {
		t.Fatal(err)
	}
	a := <-read
	var got struct {
		Title          string `json:"title"`
		RevisionNumber int    `json:"revisionNumber"`
		Revision       struct {
			Title string `json:"title"`
		} `json:"revision"`
		Markdown string `json:"markdown"`
	}
	if err := json.Unmarshal([]byte(a.body), &got); a.status != 200 || err != nil {
		t.Fatalf("the held-up read: %d %v %.300s", a.status, err, a.body)
	}
	if got.Title != got.Revision.Title || !strings.Contains(got.Markdown, got.Title) {
		t.Errorf("one answer mixes two revisions: the detail of %q (revision %d), the terms of %q", got.Title, got.RevisionNumber, got.Revision.Title)
	}
}

// TestConsoleAgreementHeld: an agreement held for the console answers when
// it changes, not when another agreement of the workspace does, and with
// the same answer when the wait ends.
func TestConsoleAgreementHeld(t *testing.T) {
	t.Parallel()
	s := servertest.New(t, servertest.Options{DatabaseURL: pgtest.URL(t), Origin: "http://localhost"})
	session, err := passkey.New(s.Origin).Enroll(s.URL, workspace(t, s.DatabaseURL, s.Origin))
	if err != nil {
		t.Fatal(err)
	}
	owner := client{t, s.URL, s.Origin, session}
	_, h, _ := owner.send(http.MethodPost, "/console/api/agreements", agreementBody)
	path := strings.TrimPrefix(h.Get("Location"), s.Origin)
	// The invitation's email first: its delivery changes the agreement.
	etag, body := owner.settled(path)
	if etag == "" {
		t.Fatalf("no ETag: %.200s", body)
	}
	hold := func(wait string) <-chan held {
		out := make(chan held, 1)
		start := time.Now()
		go func() {
			req, _ := http.NewRequest(http.MethodGet, s.URL+path, nil)
			req.AddCookie(session.Cookie)
			req.Header.Set("If-None-Match", etag)
			req.Header.Set("Prefer", "wait="+wait)
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Error(err)
				out <- held{}
				return
			}
			defer resp.Body.Close()
			b, _ := io.ReadAll(resp.Body)
			out <- held{resp.StatusCode, resp.Header.Get("ETag"), string(b), time.Since(start)}
		}()
		return out
	}

	got := waitHeld(t, "a wait of a second", hold("1"), 5*time.Second)
	if got.status != 200 || got.etag != etag || got.after < time.Second {
		t.Errorf("a wait that ends unchanged: %d %s (held %s) after %s: %.300s", got.status, got.etag, etag, got.after, got.body)
	}

	waiting := hold("20")
	quiet(t, "nothing changed", waiting)
	if status, body := owner.do(http.MethodPost, "/console/api/agreements", agreementBody); status != 201 {
		t.Fatalf("another agreement: %d %s", status, body)
	}
	quiet(t, "another agreement of the workspace created", waiting)
	if status, body := owner.do(http.MethodPost, path+"/revisions", `{"title":"Renamed"}`); status != 201 {
		t.Fatalf("amend: %d %s", status, body)
	}
	got = waitHeld(t, "the agreement amended", waiting, 3*time.Second)
	if got.status != 200 || got.etag == etag || !strings.Contains(got.body, `"title":"Renamed"`) {
		t.Fatalf("after the amendment: %d %s %.300s", got.status, got.etag, got.body)
	}

	// A viewer's held agreement ends when an owner removes the viewer.
	if status, body := owner.do(http.MethodPost, "/console/api/operators", `{"email":"vera@acme.example","role":"viewer"}`); status != 201 {
		t.Fatalf("invite: %d %s", status, body)
	}
	vera, err := passkey.New(s.Origin).Enroll(s.URL, emailedToken(t, s.Maildir, "vera@acme.example"))
	if err != nil {
		t.Fatal(err)
	}
	etag, _ = client{t, s.URL, s.Origin, vera}.settled(path)
	session = vera
	waiting = hold("20")
	quiet(t, "vera's agreement before the removal", waiting)
	_, body = owner.do(http.MethodGet, "/console/api/operators", "")
	veraID := regexp.MustCompile(`"id":"([0-9a-f-]{36})","email":"vera@acme.example"`).FindStringSubmatch(body)[1]
	if status, body := owner.do(http.MethodDelete, "/console/api/operators/"+veraID, ""); status != 200 {
		t.Fatalf("remove: %d %s", status, body)
	}
	if got := waitHeld(t, "vera removed", waiting, 2*time.Second); got.status != 401 {
		t.Fatalf("vera's held agreement after the removal: %d %.200s", got.status, got.body)
	}
}
