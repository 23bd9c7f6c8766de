package passkey_test

import (
	"encoding/json"
	"io"
	"net/http"
	"regexp"
	"testing"
	"time"

	"github.com/consensus-md/consensus/internal/passkey"
	"github.com/consensus-md/consensus/internal/pgtest"
	"github.com/consensus-md/consensus/internal/proctest"
)

type held struct {
	status int
	etag   string
	body   string
	after  time.Duration
}

// hold sends the console list's held read to base with the ETag the page
// shows, and answers on the returned channel.
func hold(t *testing.T, base string, s *passkey.Session, etag string) <-chan held {
	out := make(chan held, 1)
	start := time.Now()
	go func() {
		req, _ := http.NewRequest(http.MethodGet, base+"/console/api/agreements", nil)
		req.AddCookie(s.Cookie)
		req.Header.Set("If-None-Match", etag)
		req.Header.Set("Prefer", "wait=20")
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

// waitHeld waits for a held read's answer, at most limit after now.
func waitHeld(t *testing.T, what string, c <-chan held, limit time.Duration) held {
	t.Helper()
	select {
	case h := <-c:
		return h
	case <-time.After(limit):
		t.Fatalf("%s: the held list did not answer within %s", what, limit)
		return held{}
	}
}

// quiet checks that a held read is still held.
func quiet(t *testing.T, what string, c <-chan held) {
	t.Helper()
	select {
	case h := <-c:
		t.Fatalf("%s: the held list answered early: %d %.200s", what, h.status, h.body)
	case <-time.After(300 * time.Millisecond):
	}
}

// TestConsoleListLiveAcrossReplicas: two consensusd processes on one
// database. The console's agreement list, held on the second, answers
// within a second of a change made on the first: an agreement created, a
// participant revoked; while nothing changes it stays held. An operator
// removed on the first has its held list on the second answered 401.
func TestConsoleListLiveAcrossReplicas(t *testing.T) {
	t.Parallel()
	c := proctest.Start(t, proctest.Config{DatabaseURL: pgtest.URL(t)}, 2)
	origin := c.Config.Origin
	token := workspace(t, c.Config.DatabaseURL, origin)
	first, second := c.Replicas[0].URL(), c.Replicas[1].URL()
	ownerSession, err := passkey.New(origin).Enroll(first, token)
	if err != nil {
		t.Fatal(err)
	}
	owner := client{t, first, origin, ownerSession}
	read := func(base string, s *passkey.Session) (string, map[string]any) {
		req, _ := http.NewRequest(http.MethodGet, base+"/console/api/agreements", nil)
		req.AddCookie(s.Cookie)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var m map[string]any
		if err := json.NewDecoder(resp.Body).Decode(&m); err != nil || resp.StatusCode != 200 || resp.Header.Get("ETag") == "" {
			t.Fatalf("list: %d %v %v", resp.StatusCode, err, m)
		}
		return resp.Header.Get("ETag"), m
	}
	etag, _ := read(second, ownerSession)

	waiting := hold(t, second, ownerSession, etag)
	quiet(t, "nothing changed", waiting)
	if status, body := owner.do(http.MethodPost, "/console/api/agreements", agreementBody); status != 201 {
		t.Fatalf("create: %d %s", status, body)
	}
	created := time.Now()
	h := waitHeld(t, "an agreement created on the first replica", waiting, 3*time.Second)
	if h.status != 200 || h.etag == etag || !regexp.MustCompile(`"title":"Pick a name".*"waitsFor":\["Ada"\]`).MatchString(h.body) {
		t.Fatalf("after the creation: %d %s %.300s", h.status, h.etag, h.body)
	}
	t.Logf("creation on the first replica to the held list's answer on the second: %s", time.Since(created))
	etag = h.etag

	var page struct {
		Agreements []struct{ AgreementID string } `json:"agreements"`
	}
	_ = json.Unmarshal([]byte(h.body), &page)
	_, body := owner.do(http.MethodGet, "/console/api/agreements/"+page.Agreements[0].AgreementID, "")
	var detail struct {
		Participants []struct{ ParticipantID string } `json:"participants"`
	}
	_ = json.Unmarshal([]byte(body), &detail)
	waiting = hold(t, second, ownerSession, etag)
	quiet(t, "nothing changed since the creation", waiting)
	if status, body := owner.do(http.MethodPost, "/console/api/participants/"+detail.Participants[0].ParticipantID+"/revoke", ""); status != 200 {
		t.Fatalf("revoke: %d %s", status, body)
	}
	revoked := time.Now()
	h = waitHeld(t, "a participant revoked on the first replica", waiting, 3*time.Second)
	if h.status != 200 || h.etag == etag || !regexp.MustCompile(`"waitsFor":\[\]`).MatchString(h.body) {
		t.Fatalf("after the revocation: %d %s %.300s", h.status, h.etag, h.body)
	}
	t.Logf("revocation on the first replica to the held list's answer on the second: %s", time.Since(revoked))

	// An operator's held list ends when an owner removes it elsewhere.
	if status, body := owner.do(http.MethodPost, "/console/api/operators", `{"email":"otto@acme.example","role":"viewer"}`); status != 201 {
		t.Fatalf("invite: %d %s", status, body)
	}
	ottoSession, err := passkey.New(origin).Enroll(second, emailedToken(t, c.Config.Maildir, "otto@acme.example"))
	if err != nil {
		t.Fatal(err)
	}
	ottoTag, _ := read(second, ottoSession)
	waiting = hold(t, second, ottoSession, ottoTag)
	quiet(t, "otto's list before the removal", waiting)
	_, body = owner.do(http.MethodGet, "/console/api/operators", "")
	ottoID := regexp.MustCompile(`"id":"([0-9a-f-]{36})","email":"otto@acme.example"`).FindStringSubmatch(body)[1]
	if status, body := owner.do(http.MethodDelete, "/console/api/operators/"+ottoID, ""); status != 200 {
		t.Fatalf("remove: %d %s", status, body)
	}
	removed := time.Now()
	if h := waitHeld(t, "otto removed on the first replica", waiting, 2*time.Second); h.status != 401 {
		t.Fatalf("otto's held list after the removal: %d %.200s", h.status, h.body)
	}
	t.Logf("removal on the first replica to the held list's 401 on the second: %s", time.Since(removed))
}
