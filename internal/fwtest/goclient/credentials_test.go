package goclient_test

import (
	"context"
	"io"
	"net/http"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/consensus-md/consensus/internal/fwtest/goclient/oapiclient"
)

// TestCredentialEditors: each kind's editor writes its own scheme, refuses
// a token of another kind by its prefix, and the typed client's credential
// is applied after the caller's editors.
func TestCredentialEditors(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		editor oapiclient.RequestEditorFn
		want   string
	}{
		{oapiclient.InviteSecret("s3cret").Editor(), "Consensus-Invite s3cret"},
		{oapiclient.SessionToken("css_a").Editor(), "Consensus-Session css_a"},
		{oapiclient.ParticipantToken("csp_b").Editor(), "Consensus-Participant csp_b"},
		{oapiclient.OperatorKey("cok_c").Editor(), "Bearer cok_c"},
	} {
		r, _ := http.NewRequest(http.MethodGet, "http://127.0.0.1/", nil)
		if err := c.editor(context.Background(), r); err != nil || r.Header.Get("Authorization") != c.want {
			t.Errorf("Authorization %q (%v), want %q", r.Header.Get("Authorization"), err, c.want)
		}
	}
	for _, bad := range []oapiclient.RequestEditorFn{
		oapiclient.ParticipantToken("css_a").Editor(), oapiclient.SessionToken("csp_b").Editor(), oapiclient.InviteSecret("two words").Editor(), oapiclient.OperatorKey("").Editor(),
	} {
		r, _ := http.NewRequest(http.MethodGet, "http://127.0.0.1/", nil)
		if err := bad(context.Background(), r); err == nil || r.Header.Get("Authorization") != "" {
			t.Errorf("a wrong credential was sent: %q", r.Header.Get("Authorization"))
		}
	}
	if got := oapiclient.Credentials["readRoom"]; got.Method != http.MethodGet || len(got.Credentials) != 1 || got.Credentials[0] != oapiclient.CredentialParticipant {
		t.Errorf("readRoom: %+v", got)
	}

	// The caller's editor cannot replace the credential.
	var sent string
	hc := &http.Client{Transport: roundTrip(func(r *http.Request) (*http.Response, error) {
		sent = r.Header.Get("Authorization")
		return &http.Response{StatusCode: http.StatusNoContent, Body: http.NoBody, Header: http.Header{}, Request: r}, nil
	})}
	c, err := oapiclient.NewClientWithResponses("http://127.0.0.1", oapiclient.WithHTTPClient(hc))
	if err != nil {
		t.Fatal(err)
	}
	p := oapiclient.NewParticipantClient(c, oapiclient.ParticipantToken("csp_b"))
	_, _ = p.DeleteWebhookWithResponse(context.Background(), uuid.New(), func(_ context.Context, r *http.Request) error {
		r.Header.Set("Authorization", "Consensus-Session css_a")
		return nil
	})
	if sent != "Consensus-Participant csp_b" {
		t.Errorf("sent %q", sent)
	}
}

type roundTrip func(*http.Request) (*http.Response, error)

func (f roundTrip) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// TestWrongCredentialDoesNotCompile builds testdata/wrongcredential, a
// participant client calling claim, and expects the compiler to refuse it
// for exactly that.
func TestWrongCredentialDoesNotCompile(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	out, err := exec.CommandContext(ctx, "go", "build", "-o", "/dev/null", "./testdata/wrongcredential").CombinedOutput()
	want := "p.ClaimSlotWithResponse undefined (type *oapiclient.ParticipantClient has no field or method ClaimSlotWithResponse)"
	if err == nil || !strings.Contains(string(out), want) || strings.Count(string(out), "\n") != 2 {
		t.Fatalf("go build testdata/wrongcredential: %v, want only %q:\n%s", err, want, out)
	}
}

// TestStreamMessageReader: keep-alive comments are skipped, data split
// over lines is joined, only room.event carries an id, a non-JSON data
// line is an error, and a refusal is returned as the error.
func TestStreamMessageReader(t *testing.T) {
	t.Parallel()
	answer := func(status int, ctype, body string) *http.Response {
		return &http.Response{StatusCode: status, Header: http.Header{"Content-Type": {ctype}}, Body: io.NopCloser(strings.NewReader(body))}
	}
	r, err := oapiclient.NewStreamMessageReader(answer(http.StatusOK, "text/event-stream",
		": keep-alive\n\nevent: room.outcome\ndata: {\"status\":\ndata: \"pending\"}\n\nevent: room.revision\ndata: {\"revision\":2}\n\nevent: room.outcome\ndata: nope\n\n"))
	if err != nil {
		t.Fatal(err)
	}
	m, err := r.Next()
	if err != nil {
		t.Fatal(err)
	}
	if o, err := m.AsStreamRoomOutcome(); err != nil || o.Data.Status != oapiclient.OutcomeStatusPending {
		t.Fatalf("outcome %+v, %v", o, err)
	}
	m, err = r.Next()
	if v, _ := m.ValueByDiscriminator(); err != nil || v.(oapiclient.StreamRoomRevision).Data.Revision != 2 {
		t.Fatalf("revision %+v, %v", v, err)
	}
	if _, err := r.Next(); err == nil || !strings.Contains(err.Error(), "not JSON") {
		t.Fatalf("non-JSON data: %v", err)
	}
	if _, err := r.Next(); err != io.EOF {
		t.Fatalf("the end: %v", err)
	}
	if _, err := oapiclient.NewStreamMessageReader(answer(http.StatusUnauthorized, "application/problem+json", `{"code":"unauthorized"}`)); err == nil || !strings.Contains(err.Error(), "HTTP 401") {
		t.Fatalf("a refusal: %v", err)
	}
}
