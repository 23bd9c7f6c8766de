package deliver

import (
	"context"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strings"
	"testing"

	"golang.org/x/net/dns/dnsmessage"

	"github.com/consensus-md/consensus/internal/webhook"
)

// privateDNS is a DNS server on loopback that answers every A query with
// 10.0.0.7, as a hostile or misconfigured name would.
func privateDNS(t *testing.T) *net.Resolver {
	t.Helper()
	pc, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { pc.Close() })
	go func() {
		buf := make([]byte, 1500)
		for {
			n, addr, err := pc.ReadFrom(buf)
			if err != nil {
				return
			}
			var p dnsmessage.Parser
			h, err := p.Start(buf[:n])
			if err != nil {
				continue
			}
			q, err := p.Question()
			if err != nil {
				continue
			}
			b := dnsmessage.NewBuilder(nil, dnsmessage.Header{ID: h.ID, Response: true, Authoritative: true})
			_ = b.StartQuestions()
			_ = b.Question(q)
			_ = b.StartAnswers()
			if q.Type == dnsmessage.TypeA {
				_ = b.AResource(dnsmessage.ResourceHeader{Name: q.Name, Class: dnsmessage.ClassINET, TTL: 60}, dnsmessage.AResource{A: [4]byte{10, 0, 0, 7}})
			}
			out, err := b.Finish()
			if err == nil {
				_, _ = pc.WriteTo(out, addr)
			}
		}
	}()
	server := pc.LocalAddr().String()
	return &net.Resolver{PreferGo: true, Dial: func(ctx context.Context, _, _ string) (net.Conn, error) {
		var d net.Dialer
		return d.DialContext(ctx, "udp", server)
	}}
}

// TestNameResolvingToPrivateAddress: a name is refused at registration
// when it resolves to a private address, and the connection is refused at
// delivery even if registration had let it through (rebinding).
func TestNameResolvingToPrivateAddress(t *testing.T) {
	t.Parallel()
	r := privateDNS(t)
	addrs, err := r.LookupNetIP(context.Background(), "ip4", "hooks.internal.example")
	if err != nil || len(addrs) != 1 || addrs[0] != netip.MustParseAddr("10.0.0.7") {
		t.Fatalf("fake DNS: %v %v", addrs, err)
	}
	err = webhook.Resolve(context.Background(), r, "hooks.internal.example", true)
	if !errors.Is(err, webhook.ErrRefusedURL) {
		t.Fatalf("Resolve: %v", err)
	}
	// the refusal must not tell a participant what the name resolves to
	if strings.Contains(err.Error(), "10.0.0.7") {
		t.Fatalf("the refusal names the resolved address: %v", err)
	}
	_, err = NewClient(true, nil, r).Get("https://hooks.internal.example/hook")
	if !errors.Is(err, webhook.ErrRefusedURL) {
		t.Fatalf("connect: %v", err)
	}
}

// TestDialerRefusesAtConnectTime: the check runs on the address dialled,
// whatever name led there.
func TestDialerRefusesAtConnectTime(t *testing.T) {
	t.Parallel()
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}))
	defer srv.Close()
	pool := srv.Client().Transport.(*http.Transport).TLSClientConfig.RootCAs
	_, port, _ := net.SplitHostPort(srv.Listener.Addr().String())
	// "localhost" resolves to loopback: refused when dialled outside local runs
	c := NewClient(false, pool, nil)
	_, err := c.Get("https://localhost:" + port + "/")
	if err == nil || !errors.Is(err, webhook.ErrRefusedURL) {
		t.Fatalf("a name resolving to loopback: %v", err)
	}
	if _, err := NewClient(true, pool, nil).Get(srv.URL); err != nil {
		t.Fatalf("loopback allowed: %v", err)
	}
	if err := webhook.Resolve(context.Background(), nil, "localhost", false); err == nil {
		t.Fatal("Resolve accepted a name with a loopback address")
	}
}
