package httpapi

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/consensus-md/consensus/internal/contract"
	"github.com/consensus-md/consensus/internal/venue"
)

// TestMissingCredentialComesFirst: each route group refuses a request
// without its credential with 401 and the route's challenge, before the
// body is read (an oversize body still answers 401) and before any lookup
// (this server has no venue to look in).
func TestMissingCredentialComesFirst(t *testing.T) {
	t.Parallel()
	s := newProblemServer(t, pingFunc(func(context.Context) error { return nil }))
	base := "/api/v1/agent/invitations/7d3c5a8e-4b1f-4c2d-9e6a-0f1b2c3d4e5f"
	oversize := []byte(`{"x":"` + strings.Repeat("a", int(limitCreate.Wire)) + `"}`)
	for _, tc := range []struct {
		method, path string
		body         []byte
		headers      []string
		challenge    string
	}{
		{http.MethodPost, base + "/claim", oversize, nil, venue.SchemeSession},
		{http.MethodPost, base + "/claim", []byte(`{}`), []string{"Authorization", "Consensus-Participant csp_x"}, venue.SchemeSession},
		{http.MethodGet, base + "/room", nil, nil, venue.SchemeParticipant},
		{http.MethodGet, base + "/room", nil, []string{"Authorization", "Consensus-Session css_x"}, venue.SchemeParticipant},
		{http.MethodPost, base + "/events", oversize, []string{"Idempotency-Key", "not valid"}, venue.SchemeParticipant},
		{http.MethodGet, base + "/artifact", nil, nil, venue.SchemeParticipant},
		{http.MethodHead, base + "/artifact", nil, nil, venue.SchemeParticipant},
		{http.MethodPost, "/api/v1/admin/agreements", oversize, nil, operatorChallenge},
		{http.MethodGet, "/api/v1/admin/agreements", nil, []string{"Authorization", "Bearer wrong"}, operatorChallenge},
	} {
		headers := append([]string{contract.SkipRequestHeader, "1", "Content-Type", "application/json"}, tc.headers...)
		resp, body := s.do(t, tc.method, tc.path, tc.body, headers...)
		if resp.StatusCode != http.StatusUnauthorized || resp.Header.Get("WWW-Authenticate") != tc.challenge {
			t.Errorf("%s %s: %d, WWW-Authenticate %q, want 401 %q", tc.method, tc.path, resp.StatusCode, resp.Header.Get("WWW-Authenticate"), tc.challenge)
			continue
		}
		var p Problem
		if tc.method != http.MethodHead {
			if err := json.Unmarshal(body, &p); err != nil || p.Code != "unauthorized" {
				t.Errorf("%s %s: %s", tc.method, tc.path, body)
			}
		}
	}
}

// TestPrincipalWithoutMiddlewarePanics: a handler mounted without its
// authentication middleware fails loudly instead of serving anyone.
func TestPrincipalWithoutMiddlewarePanics(t *testing.T) {
	t.Parallel()
	for name, read := range map[string]func(context.Context){
		"participantFrom": func(ctx context.Context) { participantFrom(ctx) },
		"sessionFrom":     func(ctx context.Context) { sessionFrom(ctx) },
	} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("%s returned without a principal in the context", name)
				}
			}()
			read(context.Background())
		}()
	}
	p := &venue.Principal{}
	if got := participantFrom(context.WithValue(context.Background(), participantKey{}, p)); got != p {
		t.Error("participantFrom does not return the stored principal")
	}
}

// TestPrincipalInTheRequestRecord: under front, the credential middleware
// keeps the principal in the request's record, not in a copy of the
// request; it is read back under its own key only.
func TestPrincipalInTheRequestRecord(t *testing.T) {
	t.Parallel()
	info := &requestInfo{}
	r := httptest.NewRequest(http.MethodGet, "/", nil)
	r = r.WithContext(context.WithValue(r.Context(), requestInfoKey, info))
	p := &venue.Principal{}
	if got := withPrincipal(r, participantKey{}, p); got != r {
		t.Error("withPrincipal copied the request although front made a record")
	}
	if got := participantFrom(r.Context()); got != p {
		t.Error("participantFrom does not return the recorded principal")
	}
	defer func() {
		if recover() == nil {
			t.Error("sessionFrom returned the participant's principal")
		}
	}()
	sessionFrom(r.Context())
}
