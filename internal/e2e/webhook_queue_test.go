package e2e

import (
	"encoding/pem"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/consensus-md/consensus/internal/servertest"
)

// caFile writes the certificates of servers into one PEM file, for
// CONSENSUS_WEBHOOK_CA_FILE.
func caFile(t *testing.T, servers ...*httptest.Server) string {
	t.Helper()
	var b []byte
	for _, s := range servers {
		b = append(b, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: s.Certificate().Raw})...)
	}
	f := filepath.Join(t.TempDir(), "cas.pem")
	if err := os.WriteFile(f, b, 0o600); err != nil {
		t.Fatal(err)
	}
	return f
}

// hangingReceiver accepts TLS and reads each request, then never answers
// (until the test ends); it counts the requests it holds.
func hangingReceiver(t *testing.T) (*httptest.Server, *atomic.Int32) {
	t.Helper()
	var held atomic.Int32
	stop := make(chan struct{})
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		held.Add(1)
		select {
		case <-stop:
		case <-r.Context().Done():
		}
	}))
	t.Cleanup(func() { close(stop); srv.Close() })
	return srv, &held
}

// TestWebhookSlowReceiverDelaysNoOther: one participant's receiver accepts
// TLS and never answers while eight comments queue deliveries to it; a
// delivery of another agreement to a prompt receiver still arrives at
// once, not after the slow receiver's timeouts.
func TestWebhookSlowReceiverDelaysNoOther(t *testing.T) {
	t.Parallel()
	slow, held := hangingReceiver(t)
	rc := newReceiver(t)
	s := startServer(t, servertest.Options{Settings: map[string]string{"CONSENSUS_WEBHOOK_CA_FILE": caFile(t, slow, rc.Server)}})

	a := s.create("Slow receiver", s.future(), participantSpec{"Hanging", "agent", true}, participantSpec{"Talker", "agent", true})
	hanging := s.agent(a.Participants[0].InvitationID).join()
	talker := s.agent(a.Participants[1].InvitationID).join()
	expect(t, hanging.webhook("PUT", map[string]string{"url": slow.URL + "/hook"}), 200, "")
	for i := range 8 {
		expect(t, talker.post(fmt.Sprintf("slow-%04d", i), "comment", "to a receiver that never answers"), 201, "")
	}
	deadline := time.Now().Add(10 * time.Second)
	for held.Load() == 0 {
		if time.Now().After(deadline) {
			t.Fatal("the hanging receiver was never called")
		}
		time.Sleep(10 * time.Millisecond)
	}

	b := s.create("Prompt receiver", s.future(), participantSpec{"Prompt", "agent", true}, participantSpec{"Poster", "agent", true})
	prompt := s.agent(b.Participants[0].InvitationID).join()
	poster := s.agent(b.Participants[1].InvitationID).join()
	expect(t, prompt.webhook("PUT", map[string]string{"url": rc.URL + "/hook"}), 200, "")
	var delays []time.Duration
	for i := range 3 {
		start := time.Now()
		expect(t, poster.post(fmt.Sprintf("prompt-%04d", i), "comment", "to a prompt receiver"), 201, "")
		got := rc.wait(t, i+1, 15*time.Second)
		delays = append(delays, got[i].at.Sub(start))
	}
	report(t, "webhook to a prompt receiver while another hangs (POST start to receipt)", delays)
	for _, d := range delays {
		if d > 2*time.Second {
			t.Fatalf("a delivery to a prompt receiver took %v while another receiver hung (held %d requests)", d, held.Load())
		}
	}
	if n := held.Load(); n > 2 {
		t.Fatalf("the hanging receiver holds %d attempts at once; at most two per replica", n)
	}
}

// TestWebhookDroppedDeliveryStaysDropped: with an attempt in flight,
// DELETE then PUT of a new URL; the attempt then fails. The dropped
// notification is never retried, neither to the old URL nor to the new
// one; the new URL hears only what happens after it was registered.
func TestWebhookDroppedDeliveryStaysDropped(t *testing.T) {
	t.Parallel()
	calling := make(chan struct{}, 1)
	release := make(chan struct{})
	var oldCalls atomic.Int32
	old := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if oldCalls.Add(1) == 1 {
			calling <- struct{}{}
			<-release
		}
		w.WriteHeader(http.StatusInternalServerError)
	}))
	t.Cleanup(old.Close)
	next := newReceiver(t)
	s := startServer(t, servertest.Options{Settings: map[string]string{"CONSENSUS_WEBHOOK_CA_FILE": caFile(t, old, next.Server)}})
	c := s.create("Dropped", s.future(), participantSpec{"Hooked", "agent", true}, participantSpec{"Poster", "agent", true})
	hooked := s.agent(c.Participants[0].InvitationID).join()
	poster := s.agent(c.Participants[1].InvitationID).join()
	expect(t, hooked.webhook("PUT", map[string]string{"url": old.URL + "/hook"}), 200, "")
	expect(t, poster.post("dropped-0001", "comment", "in flight"), 201, "")
	select {
	case <-calling:
	case <-time.After(10 * time.Second):
		t.Fatal("the first receiver was never called")
	}
	expect(t, hooked.webhook("DELETE", nil), 204, "")
	expect(t, hooked.webhook("PUT", map[string]string{"url": next.URL + "/hook"}), 200, "")
	close(release)              // the attempt in flight now fails with a 500
	time.Sleep(8 * time.Second) // past the schedule's first pause (5 s)
	if got := next.wait(t, 0, time.Second); len(got) != 0 {
		t.Fatalf("the new URL received %d deliveries of the dropped notification: %s", len(got), got[0].body)
	}
	if n := oldCalls.Load(); n != 1 {
		t.Fatalf("the removed URL was called %d times, want 1", n)
	}
	expect(t, poster.post("dropped-0002", "comment", "after the new URL"), 201, "")
	if got := next.wait(t, 1, 10*time.Second); len(got) != 1 {
		t.Fatalf("the new URL received %d deliveries, want 1", len(got))
	}
}
