package passkey_test

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/consensus-md/consensus/internal/passkey"
	"github.com/consensus-md/consensus/internal/pgtest"
	"github.com/consensus-md/consensus/internal/servertest"
	"github.com/consensus-md/consensus/internal/store"
	"github.com/consensus-md/consensus/internal/venue"
)

type problemBody struct {
	Code   string `json:"code"`
	Detail string `json:"detail"`
}

// TestConsoleOnAnIPOrigin: a service whose origin is an IP address, where
// passkeys cannot work, answers the console's ceremonies with the
// passkey-origin problem naming the origin to set, never a 500; and a
// console opened at another name of the host (127.0.0.1 for localhost) is
// told the origin where it works.
func TestConsoleOnAnIPOrigin(t *testing.T) {
	t.Parallel()
	s := servertest.New(t, servertest.Options{DatabaseURL: pgtest.URL(t)}) // http://127.0.0.1:PORT
	token := workspace(t, s.DatabaseURL, s.Origin)
	port := s.Origin[strings.LastIndex(s.Origin, ":")+1:]
	a := passkey.New(s.Origin)
	for _, step := range []struct{ path, body string }{{"/console/api/signin/begin", ""}, {"/console/api/enroll/begin", `{"token":"` + token + `"}`}} {
		c := client{t: t, base: s.URL, origin: s.Origin, s: &passkey.Session{Cookie: &http.Cookie{Name: "x", Value: "y"}}}
		status, body := c.do(http.MethodPost, step.path, step.body)
		var p problemBody
		_ = json.Unmarshal([]byte(body), &p)
		if status != http.StatusServiceUnavailable || p.Code != "passkey-origin" || !strings.Contains(p.Detail, "set CONSENSUS_PUBLIC_ORIGIN=http://localhost:"+port) {
			t.Errorf("%s on an IP origin: %d %s", step.path, status, body)
		}
	}
	if _, err := a.SignIn(s.URL); err == nil || strings.Contains(err.Error(), " 500 ") {
		t.Errorf("sign-in on an IP origin: %v", err)
	}
	if strings.Contains(s.Logs.String(), "request failed") {
		t.Errorf("a configuration problem was logged as a failure:\n%s", s.Logs.String())
	}
	if !strings.Contains(s.Logs.String(), "CONSENSUS_PUBLIC_ORIGIN: the console's passkeys (WebAuthn) cannot work at "+s.Origin) {
		t.Errorf("the service did not warn at start about its IP origin")
	}

	// The same host by another name: the refusal names the right origin.
	l := servertest.New(t, servertest.Options{DatabaseURL: pgtest.URL(t), Localhost: true})
	wrong := client{t: t, base: l.URL, origin: l.URL, s: &passkey.Session{Cookie: &http.Cookie{Name: "x", Value: "y"}}}
	status, body := wrong.do(http.MethodPost, "/console/api/signin/begin", "")
	if status != http.StatusForbidden || !strings.Contains(body, `"cross-site"`) || !strings.Contains(body, "open "+l.Origin+"/console/ instead") {
		t.Errorf("the console opened at %s for %s: %d %s", l.URL, l.Origin, status, body)
	}
}

// TestSeveralPasskeysAndANewLink: an operator adds a second passkey and
// signs in with either; removes one but never the last; and, with a new
// link from the command line (consensusd operator link), enrolls again
// while the old unused link no longer works.
func TestSeveralPasskeysAndANewLink(t *testing.T) {
	t.Parallel()
	s := servertest.New(t, servertest.Options{DatabaseURL: pgtest.URL(t), Origin: "http://localhost"})
	token := workspace(t, s.DatabaseURL, s.Origin)
	first := passkey.New(s.Origin)
	sess, err := first.Enroll(s.URL, token)
	if err != nil {
		t.Fatal(err)
	}
	c := client{t, s.URL, s.Origin, sess}
	status, body := c.do(http.MethodPost, "/console/api/passkeys/begin", "")
	var cer struct {
		CeremonyID string          `json:"ceremonyId"`
		PublicKey  json.RawMessage `json:"publicKey"`
	}
	if status != 200 || json.Unmarshal([]byte(body), &cer) != nil || !strings.Contains(body, "excludeCredentials") {
		t.Fatalf("begin adding a passkey: %d %s", status, body)
	}
	second := passkey.New(s.Origin)
	cred, err := second.Create(cer.PublicKey)
	if err != nil {
		t.Fatal(err)
	}
	in, _ := json.Marshal(map[string]any{"ceremonyId": cer.CeremonyID, "credential": cred})
	if status, body := c.do(http.MethodPost, "/console/api/passkeys/finish", string(in)); status != 201 {
		t.Fatalf("add a passkey: %d %s", status, body)
	}
	if status, body := c.do(http.MethodPost, "/console/api/passkeys/finish", string(in)); status != 401 {
		t.Errorf("a ceremony finished twice: %d %s", status, body)
	}
	var list venue.PasskeyList
	_, body = c.do(http.MethodGet, "/console/api/passkeys", "")
	if json.Unmarshal([]byte(body), &list) != nil || len(list.Passkeys) != 2 {
		t.Fatalf("two passkeys: %s", body)
	}
	for _, a := range []*passkey.Authenticator{first, second} {
		if _, err := a.SignIn(s.URL); err != nil {
			t.Errorf("sign in with either passkey: %v", err)
		}
	}
	if status, body := c.do(http.MethodDelete, "/console/api/passkeys/"+list.Passkeys[0].ID, ""); status != 204 {
		t.Fatalf("remove one: %d %s", status, body)
	}
	status, body = c.do(http.MethodDelete, "/console/api/passkeys/"+list.Passkeys[1].ID, "")
	if status != 400 || !strings.Contains(body, "only passkey") {
		t.Errorf("remove the last: %d %s", status, body)
	}
	if _, err := first.SignIn(s.URL); err == nil {
		t.Error("a removed passkey still signs in")
	}

	// A new link from the command line: the old unused one is withdrawn.
	st, err := store.Open(context.Background(), s.DatabaseURL)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	v := &venue.Venue{Store: st, Now: time.Now, Origin: s.Origin}
	old, err := v.NewOperatorLink(context.Background(), "acme", "olga@acme.example")
	if err != nil {
		t.Fatal(err)
	}
	fresh, err := v.NewOperatorLink(context.Background(), "acme", "OLGA@acme.example")
	if err != nil || fresh.Withdrawn != 1 {
		t.Fatalf("a second link: %+v %v", fresh, err)
	}
	if _, err := passkey.New(s.Origin).Enroll(s.URL, old.Link[strings.Index(old.Link, "#")+1:]); err == nil || !strings.Contains(err.Error(), "404") {
		t.Errorf("the withdrawn link: %v", err)
	}
	third := passkey.New(s.Origin)
	if _, err := third.Enroll(s.URL, fresh.Link[strings.Index(fresh.Link, "#")+1:]); err != nil {
		t.Fatalf("enroll again from the new link: %v", err)
	}
	_, body = c.do(http.MethodGet, "/console/api/passkeys", "")
	if json.Unmarshal([]byte(body), &list) != nil || len(list.Passkeys) != 2 {
		t.Errorf("after enrolling again: %s", body)
	}
	_, body = c.do(http.MethodGet, "/console/api/audit?action=operator.link", "")
	if strings.Count(body, `"operator.link"`) != 2 || !strings.Contains(body, "consensusd operator link") {
		t.Errorf("the links are not in the audit log: %s", body)
	}
}
