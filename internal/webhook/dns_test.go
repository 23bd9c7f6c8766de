package webhook

import (
	"context"
	"errors"
	"net"
	"net/netip"
	"testing"

	"golang.org/x/net/dns/dnsmessage"
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
	if err := Resolve(context.Background(), r, "hooks.internal.example", true); !errors.Is(err, ErrRefusedURL) {
		t.Fatalf("Resolve: %v", err)
	}
	_, err = NewClient(true, nil, r).Get("https://hooks.internal.example/hook")
	if !errors.Is(err, ErrRefusedURL) {
		t.Fatalf("connect: %v", err)
	}
}
