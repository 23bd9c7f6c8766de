package e2e

import (
	"context"
	"crypto/ed25519"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/consensus-md/consensus/internal/jwk"
	"github.com/consensus-md/consensus/internal/servertest"
	"github.com/consensus-md/consensus/internal/webhook"
	"github.com/jackc/pgx/v5"
)

// receiver is a real HTTPS webhook receiver; answer decides each status.
type receiver struct {
	*httptest.Server
	caFile string

	mu         sync.Mutex
	got        []delivery
	answer     func(path string) int
	redirected int
}

type delivery struct {
	id, timestamp, signature, path string
	body                           []byte
	at                             time.Time
	header                         http.Header
}

func newReceiver(t *testing.T) *receiver {
	rc := &receiver{answer: func(string) int { return 200 }}
	rc.Server = httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		rc.mu.Lock()
		if r.URL.Path == "/target" {
			rc.redirected++
			rc.mu.Unlock()
			return
		}
		rc.got = append(rc.got, delivery{id: r.Header.Get("webhook-id"), timestamp: r.Header.Get("webhook-timestamp"),
			signature: r.Header.Get("webhook-signature"), path: r.URL.Path, body: b, at: time.Now(), header: r.Header.Clone()})
		status := rc.answer(r.URL.Path)
		rc.mu.Unlock()
		if status >= 300 && status < 400 {
			w.Header().Set("Location", "/target")
		}
		w.WriteHeader(status)
	}))
	t.Cleanup(rc.Close)
	rc.caFile = filepath.Join(t.TempDir(), "ca.pem")
	pemBytes := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: rc.Certificate().Raw})
	if err := os.WriteFile(rc.caFile, pemBytes, 0o600); err != nil {
		t.Fatal(err)
	}
	return rc
}

// wait returns the deliveries once at least n arrived, failing after d.
func (rc *receiver) wait(t *testing.T, n int, d time.Duration) []delivery {
	t.Helper()
	deadline := time.Now().Add(d)
	for {
		rc.mu.Lock()
		got := append([]delivery(nil), rc.got...)
		rc.mu.Unlock()
		if len(got) >= n {
			return got
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d deliveries after %v, want %d", len(got), d, n)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func (rc *receiver) setAnswer(f func(string) int) {
	rc.mu.Lock()
	rc.answer = f
	rc.mu.Unlock()
}

// publishedKeys reads the service keys from /.well-known/consensus-keys.
func publishedKeys(t *testing.T, s *server) []ed25519.PublicKey {
	t.Helper()
	r := s.do("GET", "/.well-known/consensus-keys", nil, nil)
	expect(t, r, 200, "")
	set, err := jwk.ParseSet(r.body)
	if err != nil {
		t.Fatal(err)
	}
	keys := set.PublicKeys()
	if len(keys) != len(set.Keys) {
		t.Fatalf("the JWKS publishes %d members, %d of them usable Ed25519 keys", len(set.Keys), len(keys))
	}
	return keys
}

func (a *agent) webhook(method string, body any) *response {
	return a.s.do(method, a.s.agentPath(a.inv.InvitationID, "webhook"), a.auth(), body)
}

// TestWebhookDeliveries: a participant's endpoint on replica one hears of
// events posted on replica two, every delivery signed with a published
// key and thin; a 500 is retried after the schedule's first pause under
// the same webhook-id; a redirect is not followed; 410 disables it.
func TestWebhookDeliveries(t *testing.T) {
	t.Parallel()
	rc := newReceiver(t)
	one := startServer(t, servertest.Options{Settings: map[string]string{"CONSENSUS_WEBHOOK_CA_FILE": rc.caFile}})
	two := startServer(t, withSettings(one.ReplicaOptions(), map[string]string{"CONSENSUS_WEBHOOK_CA_FILE": rc.caFile}))
	c := one.create("Hooks", one.future(), participantSpec{"Hooked", "agent", true}, participantSpec{"Poster", "agent", true})
	hooked := one.agent(c.Participants[0].InvitationID).join()
	p := one.agent(c.Participants[1].InvitationID).join()
	poster := &agent{s: two, inv: p.inv, session: p.session, token: p.token, digest: p.digest, pid: p.pid}

	r := hooked.webhook("PUT", map[string]string{"url": rc.URL + "/hook?tenant=42"})
	expect(t, r, 200, "")
	if m := r.json(t); m["state"] != "active" || m["url"] != rc.URL+"/hook?tenant=42" {
		t.Fatalf("registered: %s", r.body)
	}

	const n = 30
	started := make([]time.Time, n)
	for i := range n {
		started[i] = time.Now()
		expect(t, poster.post(fmt.Sprintf("hook-%04d", i), "comment", fmt.Sprintf("secret text %d", i)), 201, "")
	}
	got := rc.wait(t, n, 10*time.Second)
	keys := publishedKeys(t, one)
	var latencies []time.Duration
	for _, d := range got {
		if err := webhook.Verify(keys, d.id, d.timestamp, d.signature, d.body, time.Now()); err != nil {
			t.Fatalf("delivery %s: %v", d.id, err)
		}
		var pl map[string]any
		if err := json.Unmarshal(d.body, &pl); err != nil || len(pl) != 5 || pl["type"] != "room.event" || pl["invitationId"] != hooked.inv.InvitationID || pl["agreementId"] != c.AgreementID {
			t.Fatalf("payload %s", d.body)
		}
		raw := string(d.body) + fmt.Sprint(d.header)
		for _, secret := range []string{"secret text", hooked.token, p.token, hooked.inv.Secret, hooked.inv.EmailProof} {
			if strings.Contains(raw, secret) {
				t.Fatalf("a delivery carries %q", secret)
			}
		}
		seq := int(pl["seq"].(float64))
		latencies = append(latencies, d.at.Sub(started[seq-1]))
	}
	report(t, "webhook (from the POST start on the other replica to receipt)", latencies)

	// a 500, then success: the retry comes about 5 s later, same webhook-id
	failed := false
	rc.setAnswer(func(string) int {
		if !failed {
			failed = true
			return 500
		}
		return 200
	})
	expect(t, poster.post("hook-retry", "comment", "retry me"), 201, "")
	got = rc.wait(t, n+2, 15*time.Second)
	first, retry := got[n], got[n+1]
	if first.id != retry.id || string(first.body) != string(retry.body) {
		t.Fatalf("a retry changed the notification: %s %s", first.id, retry.id)
	}
	if gap := retry.at.Sub(first.at); gap < 4*time.Second || gap > 9*time.Second {
		t.Fatalf("retried after %v; the schedule's first pause is 5 s", gap)
	}
	if err := webhook.Verify(keys, retry.id, retry.timestamp, retry.signature, retry.body, time.Now()); err != nil {
		t.Fatal(err)
	}
	// the receiver answers before the worker commits what it heard
	hookState(t, hooked, func(m map[string]any) bool {
		last := m["lastDelivery"].(map[string]any)
		return last["attempts"].(float64) == 2 && last["state"] == "delivered"
	})

	// a redirect is an answer, not a path to follow: the delivery waits for
	// its retry (5 min) and the target is never reached
	rc.setAnswer(func(string) int { return http.StatusTemporaryRedirect })
	expect(t, poster.post("hook-redirect", "comment", "moved"), 201, "")
	rc.wait(t, n+3, 10*time.Second)
	hookState(t, hooked, func(m map[string]any) bool {
		last := m["lastDelivery"].(map[string]any)
		return last["state"] == "retrying" && last["status"] == float64(307) && m["pending"].(float64) == 1
	})
	rc.mu.Lock()
	if rc.redirected != 0 {
		t.Fatal("the redirect was followed")
	}
	rc.mu.Unlock()

	// 410 disables the endpoint: nothing more is delivered
	rc.setAnswer(func(string) int { return http.StatusGone })
	expect(t, hooked.webhook("PUT", map[string]string{"url": rc.URL + "/gone"}), 200, "") // the queued one goes here now
	expect(t, poster.post("hook-gone", "comment", "gone"), 201, "")
	rc.wait(t, n+4, 10*time.Second)
	hookState(t, hooked, func(m map[string]any) bool { return m["state"] == "disabled" })
	before := len(rc.wait(t, 0, time.Second))
	expect(t, poster.post("hook-after", "comment", "unheard"), 201, "")
	time.Sleep(1500 * time.Millisecond)
	if after := len(rc.wait(t, 0, time.Second)); after != before {
		t.Fatalf("%d deliveries after the endpoint was disabled", after-before)
	}
	expect(t, hooked.webhook("DELETE", nil), 204, "")
	expect(t, hooked.webhook("GET", nil), 404, "not-found")
}

func withSettings(o servertest.Options, s map[string]string) servertest.Options {
	o.Settings = s
	return o
}

// TestWebhookRefusedURLs: only https:// URLs of public addresses are
// registered; loopback only where the local setting allows it.
func TestWebhookRefusedURLs(t *testing.T) {
	t.Parallel()
	s := startServer(t, servertest.Options{Settings: map[string]string{"CONSENSUS_WEBHOOK_ALLOW_LOOPBACK": "false"}})
	c := s.create("Refusals", s.future(), participantSpec{"Alpha", "agent", true})
	a := s.agent(c.Participants[0].InvitationID).join()
	for _, url := range []string{
		"http://hooks.example.com/hook",          // not https
		"https://10.0.0.1/hook",                  // private
		"https://192.168.1.10/hook",              // private
		"https://127.0.0.1:8443/hook",            // loopback outside a local setting
		"https://localhost:8443/hook",            // a name resolving to loopback
		"https://[::1]/hook",                     // loopback
		"https://169.254.169.254/latest",         // metadata, link-local
		"https://user:secret@hooks.example.com/", // a credential in the URL
		"https://no-such-host.invalid/hook",      // does not resolve
	} {
		r := a.s.do("PUT", a.s.agentPath(a.inv.InvitationID, "webhook"), invalid(a.auth()), map[string]string{"url": url})
		expect(t, r, 400, "invalid-request")
		if strings.Contains(string(r.body), "secret") {
			t.Fatalf("a refusal echoes the credential: %s", r.body)
		}
	}
	expect(t, a.webhook("GET", nil), 404, "not-found")
	// revoked: no webhook routes
	expect(t, s.do("POST", "/api/v1/admin/participants/"+a.pid+"/revoke", operator(), nil), 200, "")
	expect(t, a.webhook("GET", nil), 401, "unauthorized")
}

// hookState waits until the webhook's GET satisfies ok.
func hookState(t *testing.T, a *agent, ok func(map[string]any) bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		m := a.webhook("GET", nil).json(t)
		if ok(m) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("webhook state: %v", m)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestWebhookHearsTheDeadline: a room whose deadline passes while pending
// is settled as expired without anyone reading it, and the endpoint hears
// room.outcome expired.
func TestWebhookHearsTheDeadline(t *testing.T) {
	t.Parallel()
	rc := newReceiver(t)
	s := startServer(t, servertest.Options{Settings: map[string]string{"CONSENSUS_WEBHOOK_CA_FILE": rc.caFile}})
	c := s.create("Lapses", s.future(), participantSpec{"Hooked", "agent", true}, participantSpec{"Silent", "agent", true})
	hooked := s.agent(c.Participants[0].InvitationID).join()
	expect(t, hooked.webhook("PUT", map[string]string{"url": rc.URL + "/hook"}), 200, "")
	s.Clock.Advance(49 * time.Hour)
	for _, d := range rc.wait(t, 1, 10*time.Second) {
		var pl map[string]any
		if err := json.Unmarshal(d.body, &pl); err != nil || pl["type"] != "room.outcome" || pl["outcome"] != "expired" {
			t.Fatalf("delivery %s, want room.outcome expired", d.body)
		}
	}
}

// TestWebhookEndsWithRevocation: a revoked participant's endpoint hears
// nothing more of the room, queued deliveries included.
func TestWebhookEndsWithRevocation(t *testing.T) {
	t.Parallel()
	rc := newReceiver(t)
	s := startServer(t, servertest.Options{Settings: map[string]string{"CONSENSUS_WEBHOOK_CA_FILE": rc.caFile}})
	c := s.create("Revoked hook", s.future(), participantSpec{"Hooked", "agent", true}, participantSpec{"Poster", "agent", true})
	hooked := s.agent(c.Participants[0].InvitationID).join()
	poster := s.agent(c.Participants[1].InvitationID).join()
	expect(t, hooked.webhook("PUT", map[string]string{"url": rc.URL + "/hook"}), 200, "")
	rc.setAnswer(func(string) int { return 500 }) // the first delivery fails and waits for its retry
	expect(t, poster.post("before-0001", "comment", "before"), 201, "")
	rc.wait(t, 1, 10*time.Second)
	rc.setAnswer(func(string) int { return 200 })
	expect(t, s.do("POST", "/api/v1/admin/participants/"+hooked.pid+"/revoke", operator(), nil), 200, "")
	expect(t, poster.post("after-0001", "comment", "after"), 201, "")
	time.Sleep(7 * time.Second) // past the first retry's 5 s
	if got := rc.wait(t, 1, time.Second); len(got) != 1 {
		t.Fatalf("%d deliveries to a revoked participant's endpoint, want only the one before", len(got))
	}
}

// TestWebhookSendHoldsNoTransaction: while a slow receiver is being
// called, no database connection of the service waits in an open
// transaction (a pool of 16 would otherwise lend one to every slow
// receiver, for up to the delivery timeout).
func TestWebhookSendHoldsNoTransaction(t *testing.T) {
	t.Parallel()
	rc := newReceiver(t)
	s := startServer(t, servertest.Options{Settings: map[string]string{"CONSENSUS_WEBHOOK_CA_FILE": rc.caFile}})
	c := s.create("Slow hook", s.future(), participantSpec{"Hooked", "agent", true}, participantSpec{"Poster", "agent", true})
	hooked := s.agent(c.Participants[0].InvitationID).join()
	poster := s.agent(c.Participants[1].InvitationID).join()
	expect(t, hooked.webhook("PUT", map[string]string{"url": rc.URL + "/hook"}), 200, "")
	calling := make(chan struct{}, 1)
	release := make(chan struct{})
	rc.setAnswer(func(string) int {
		calling <- struct{}{}
		<-release
		return 200
	})
	expect(t, poster.post("slow-0001", "comment", "slow"), 201, "")
	select {
	case <-calling:
	case <-time.After(10 * time.Second):
		t.Fatal("the receiver was never called")
	}
	ctx := context.Background()
	db, err := pgx.Connect(ctx, s.DatabaseURL)
	if err != nil {
		close(release)
		t.Fatal(err)
	}
	defer db.Close(ctx)
	// The job queue's own short transactions may be caught between two
	// statements; one that held a delivery's call would be as old as the
	// call is.
	time.Sleep(600 * time.Millisecond)
	var open int
	err = db.QueryRow(ctx, `SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() AND state LIKE 'idle in transaction%'
		AND xact_start < now() - interval '500 milliseconds'`).Scan(&open)
	close(release)
	if err != nil {
		t.Fatal(err)
	}
	if open != 0 {
		t.Fatalf("%d connections wait in an open transaction while the receiver is called", open)
	}
	rc.wait(t, 1, 10*time.Second)
}
