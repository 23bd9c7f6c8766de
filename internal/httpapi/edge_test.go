package httpapi_test

import (
	"bytes"
	"crypto/sha256"
	"crypto/tls"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/consensus-md/consensus/internal/httpapi"
	"github.com/consensus-md/consensus/internal/pgtest"
	"github.com/consensus-md/consensus/internal/secret"
	"github.com/consensus-md/consensus/internal/venue"
)

// seen records what a RequestObserver hears.
type seen struct {
	mu      sync.Mutex
	started int
	done    []string
}

func (o *seen) RequestStarted() { o.mu.Lock(); o.started++; o.mu.Unlock() }
func (o *seen) RequestDone(route, method string, status int, _ time.Duration) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.done = append(o.done, method+" "+route+" "+http.StatusText(status))
}

// lockedBuffer is a log destination several handlers may write at once.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}
func (l *lockedBuffer) String() string { l.mu.Lock(); defer l.mu.Unlock(); return l.b.String() }

const operatorToken = "cso_edge-test-operator-token"

// edgeServer serves the API with a rate limit of 2 and the given proxies.
// Not servertest: these tests inject handler options a daemon cannot take
// from its configuration (a request observer, HSTS behind httptest's TLS).
func edgeServer(t *testing.T, o httpapi.Options) (string, *http.Client, *lockedBuffer) {
	t.Helper()
	st := pgtest.Store(t)
	keys, err := secret.DeriveKeys(bytes.Repeat([]byte{7}, 32))
	if err != nil {
		t.Fatal(err)
	}
	logs := &lockedBuffer{}
	origin, client := httpapi.ServeContract(t, func(origin string) http.Handler {
		o.Venue = &venue.Venue{Store: st, Keys: keys, Origin: origin, Now: time.Now}
		o.Pinger, o.Origin, o.OperatorTokenHash = st, origin, sha256.Sum256([]byte(operatorToken))
		o.Logger, o.RateLimit, o.Version = slog.New(slog.NewJSONHandler(logs, nil)), 2, "test"
		return httpapi.New(o).Handler()
	})
	return origin, client, logs
}

const exchangePath = "/api/v1/agent/invitations/7d3c5a8e-4b1f-4c2d-9e6a-0f1b2c3d4e5f/exchange"

var exchangeBody = []byte(`{"secret":"csi_AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA"}`)

// exchange posts to the exchange route with an X-Forwarded-For header
// (none when xff is empty) and returns the status.
func exchange(t *testing.T, client *http.Client, origin, xff string) int {
	t.Helper()
	var h []string
	if xff != "" {
		h = []string{"X-Forwarded-For", xff}
	}
	resp, _ := httpapi.DoRequest(t, client, origin, http.MethodPost, exchangePath, exchangeBody, h...)
	return resp.StatusCode
}

// TestForwardedForIgnoredWithoutTrustedProxies: a client cannot escape its
// limit by naming other addresses when no proxy is trusted.
func TestForwardedForIgnoredWithoutTrustedProxies(t *testing.T) {
	t.Parallel()
	origin, client, logs := edgeServer(t, httpapi.Options{})
	got := []int{exchange(t, client, origin, "203.0.113.1"), exchange(t, client, origin, "203.0.113.2"), exchange(t, client, origin, "203.0.113.3")}
	if got[0] != 404 || got[1] != 404 || got[2] != 429 {
		t.Fatalf("statuses %v, want 404 404 429: the header must not pick the bucket", got)
	}
	if strings.Contains(logs.String(), "203.0.113.") || !strings.Contains(logs.String(), `"client":"127.0.0.1"`) {
		t.Fatalf("the log names a forwarded address or not the peer:\n%s", logs)
	}
}

// TestForwardedForFromTrustedProxies: behind a trusted proxy each client
// has its own limit, keyed on the rightmost untrusted address, so
// prepending addresses does not help; a request without the header counts
// as the proxy's own.
func TestForwardedForFromTrustedProxies(t *testing.T) {
	t.Parallel()
	origin, client, logs := edgeServer(t, httpapi.Options{TrustedProxies: []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8"), netip.MustParsePrefix("10.0.0.0/8")}})
	steps := []struct {
		xff  string
		want int
	}{
		{"203.0.113.7", 404},
		{"198.51.100.1, 203.0.113.7", 404}, // spoofed left part; the proxy appended the real client
		{"192.0.2.99, 203.0.113.7, 10.1.2.3", 429},
		{"203.0.113.8", 404}, // another client, its own budget
		{"", 404},            // the proxy itself
		{"not-an-address, 203.0.113.9", 404},
		{"2001:db8:1:2::1", 404},
		{"2001:db8:1:2::2", 404},
		{"2001:db8:1:2::3", 429}, // the same /64
	}
	for i, s := range steps {
		if got := exchange(t, client, origin, s.xff); got != s.want {
			t.Fatalf("step %d (%q): status %d, want %d", i, s.xff, got, s.want)
		}
	}
	for _, want := range []string{`"client":"203.0.113.7"`, `"client":"203.0.113.8"`, `"client":"127.0.0.1"`, `"client":"2001:db8:1:2::3"`} {
		if !strings.Contains(logs.String(), want) {
			t.Errorf("logs lack %s", want)
		}
	}
	if strings.Contains(logs.String(), "198.51.100.1") || strings.Contains(logs.String(), "192.0.2.99") {
		t.Errorf("a spoofed address reached the log:\n%s", logs)
	}
}

// TestRateLimitedAnswer: the 429 is the contract's problem with
// Retry-After (the window), without other rate-limit headers.
func TestRateLimitedAnswer(t *testing.T) {
	t.Parallel()
	origin, client, _ := edgeServer(t, httpapi.Options{})
	for range 2 {
		exchange(t, client, origin, "")
	}
	resp, body := httpapi.DoRequest(t, client, origin, http.MethodPost, exchangePath, exchangeBody)
	if resp.StatusCode != 429 || resp.Header.Get("Retry-After") != "60" || !bytes.Contains(body, []byte(`"code":"rate-limited"`)) {
		t.Fatalf("%d Retry-After %q %s", resp.StatusCode, resp.Header.Get("Retry-After"), body)
	}
	for name := range resp.Header {
		if strings.HasPrefix(name, "X-Ratelimit") {
			t.Errorf("header %s sent", name)
		}
	}
}

// TestStrictTransportSecurity: HSTS with an https origin and over TLS,
// never on a plain-HTTP local run.
func TestStrictTransportSecurity(t *testing.T) {
	t.Parallel()
	st := pgtest.Store(t)
	handler := func(hsts bool) http.Handler {
		return httpapi.New(httpapi.Options{Pinger: st, Logger: slog.New(slog.DiscardHandler), HSTS: hsts}).Handler()
	}
	check := func(name string, srv *httptest.Server, want string) {
		t.Helper()
		defer srv.Close()
		client := srv.Client()
		if tr, ok := client.Transport.(*http.Transport); ok && tr.TLSClientConfig != nil {
			tr.TLSClientConfig.MinVersion = tls.VersionTLS12
		}
		resp, err := client.Get(srv.URL + "/llms.txt")
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if got := resp.Header.Get("Strict-Transport-Security"); got != want {
			t.Errorf("%s: Strict-Transport-Security %q, want %q", name, got, want)
		}
	}
	check("plain HTTP, http origin", httptest.NewServer(handler(false)), "")
	check("plain HTTP behind a proxy, https origin", httptest.NewServer(handler(true)), "max-age=31536000")
	check("TLS", httptest.NewTLSServer(handler(false)), "max-age=31536000")
}

// TestRequestObserver: every request is reported with its route pattern,
// never its path, and its status.
func TestRequestObserver(t *testing.T) {
	t.Parallel()
	o := &seen{}
	origin, client, _ := edgeServer(t, httpapi.Options{Requests: o})
	exchange(t, client, origin, "")
	resp, _ := httpapi.DoRequest(t, client, origin, http.MethodGet, "/no/such/7d3c5a8e-4b1f-4c2d-9e6a-0f1b2c3d4e5f", nil)
	if resp.StatusCode != 404 {
		t.Fatalf("unknown path: %d", resp.StatusCode)
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	want := []string{"POST /api/v1/agent/invitations/{invitationId}/exchange Not Found", "GET unmatched Not Found"}
	if o.started != 2 || strings.Join(o.done, "|") != strings.Join(want, "|") {
		t.Fatalf("started %d, done %q, want %q", o.started, o.done, want)
	}
}
