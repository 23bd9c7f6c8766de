package httpapi

import (
	"context"
	"encoding/json"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/consensus-md/consensus/internal/contract"
)

// TestRepeatedCredentialHeaders: a second
// Authorization or Idempotency-Key header, in any spelling, is a 400 on
// every route, before any credential is looked up; Go's server would
// otherwise hand the handler the first and ignore the rest.
func TestRepeatedCredentialHeaders(t *testing.T) {
	t.Parallel()
	s := newProblemServer(t, pingFunc(func(context.Context) error { return nil }))
	base := "/api/v1/agent/invitations/7d3c5a8e-4b1f-4c2d-9e6a-0f1b2c3d4e5f"
	for _, tc := range []struct {
		method, path string
		header       [][2]string
		field        string
	}{
		{http.MethodGet, base + "/room", [][2]string{{"Authorization", "Consensus-Participant csp_a"}, {"Authorization", "Consensus-Participant csp_b"}}, "Authorization"},
		{http.MethodGet, base + "/room", [][2]string{{"Authorization", "Consensus-Participant csp_a"}, {"authorization", "Consensus-Participant csp_a"}}, "Authorization"},
		{http.MethodPost, base + "/events", [][2]string{{"Authorization", "Consensus-Participant csp_a"}, {"Idempotency-Key", "key-00001"}, {"IDEMPOTENCY-KEY", "key-00002"}}, "Idempotency-Key"},
		{http.MethodPost, base + "/exchange", [][2]string{{"Authorization", "Consensus-Invite a"}, {"Authorization", "Consensus-Invite b"}}, "Authorization"},
		{http.MethodPost, "/api/v1/admin/agreements", [][2]string{{"Authorization", "Bearer x"}, {"Authorization", "Bearer x"}}, "Authorization"},
		{http.MethodGet, "/api/health", [][2]string{{"Idempotency-Key", "key-00001"}, {"Idempotency-Key", "key-00001"}}, "Idempotency-Key"},
	} {
		req, err := http.NewRequest(tc.method, s.origin+tc.path, nil)
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set(contract.SkipRequestHeader, "1")
		for _, h := range tc.header {
			req.Header[http.CanonicalHeaderKey(h[0])] = append(req.Header[http.CanonicalHeaderKey(h[0])], h[1])
		}
		resp, err := s.client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		var p Problem
		_ = json.NewDecoder(resp.Body).Decode(&p)
		resp.Body.Close()
		if resp.StatusCode != http.StatusBadRequest || p.Code != "invalid-request" || p.Field != tc.field {
			t.Errorf("%s %s with %v: %d %+v, want 400 invalid-request field %s", tc.method, tc.path, tc.header, resp.StatusCode, p, tc.field)
		}
	}
}

// TestCredentialInQueryAnyCase: a credential name in
// the query string is refused whatever its case or Unicode folding, and
// however the query is written (escaped, after a semicolon, with a blank
// value), on every route.
func TestCredentialInQueryAnyCase(t *testing.T) {
	t.Parallel()
	s := newProblemServer(t, pingFunc(func(context.Context) error { return nil }))
	for _, q := range []string{"secret=x", "Secret=x", "SECRET=", "ſecret=x", "Token=x", "sessiontoken=x", "SessionToken=x", "PARTICIPANTTOKEN=x",
		"EmailProof=x", "%73ecret=x", "limit=10&Token=x", "a=1;secret=x", "secret", "x=%zz&token=y", "TOKEN+=x"} {
		resp, body := s.do(t, http.MethodGet, "/api/health?"+q, nil, contract.SkipRequestHeader, "1")
		var p Problem
		if err := json.Unmarshal(body, &p); err != nil || resp.StatusCode != http.StatusBadRequest || p.Code != "credential-in-query" {
			t.Errorf("?%s: %d %s, want 400 credential-in-query", q, resp.StatusCode, body)
		}
	}
	for _, q := range []string{"limit=10", "secrets=x", "tokens=1", "x=secret"} {
		if resp, body := s.do(t, http.MethodGet, "/api/health?"+q, nil, contract.SkipRequestHeader, "1"); resp.StatusCode != http.StatusOK {
			t.Errorf("?%s: %d %s, want 200", q, resp.StatusCode, body)
		}
	}
}

// FuzzQueryCredential: whatever net/url reads as a credential name (in any
// case), the refusal sees too.
func FuzzQueryCredential(f *testing.F) {
	for _, s := range []string{"secret=x", "Secret=x", "a=1;secret=x", "%73ecret=1", "token", "x=%zz&token=y", "ſecret=1", "limit=1"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, raw string) {
		got := queryHasCredential(raw)
		q, _ := url.ParseQuery(raw)
		for name := range q {
			for _, c := range queryCredentials {
				if strings.EqualFold(strings.TrimSpace(name), c) && !got {
					t.Fatalf("%q holds %q, which the refusal missed", raw, name)
				}
			}
		}
	})
}

// FuzzParseAuthorization: the parser never panics, and what it accepts is
// exactly "<scheme> <token68>" with nothing else in the header.
func FuzzParseAuthorization(f *testing.F) {
	for _, s := range []string{"Consensus-Participant csp_abc", "Bearer x", "bearer  x", "Consensus-Session a, Consensus-Session b", "", " ", "Basic", "Bearer x=", "Bearer \xff"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, h string) {
		scheme, token, ok := parseAuthorization(h)
		if !ok {
			return
		}
		if scheme == "" || token == "" || strings.ContainsAny(scheme+token, " \t,\"") || !strings.HasPrefix(h, scheme) || !strings.HasSuffix(h, token) {
			t.Fatalf("%q parsed as %q %q", h, scheme, token)
		}
		for _, c := range []byte(token) {
			if c >= 0x80 || c < 0x21 {
				t.Fatalf("%q: token %q holds byte %#x", h, token, c)
			}
		}
	})
}
