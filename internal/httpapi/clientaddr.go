package httpapi

import (
	"context"
	"net"
	"net/http"
	"net/netip"

	"github.com/go-chi/chi/v5/middleware"
)

const clientAddrKey ctxKey = iota + 100

// clientAddr is the request's client address as clientAddress resolved
// it; the zero Addr when the middleware did not run.
func clientAddr(ctx context.Context) netip.Addr {
	a, _ := ctx.Value(clientAddrKey).(netip.Addr)
	return a
}

// clientAddress decides who the client is. Without trusted proxies it is
// the connection's peer, whatever the headers say. With them, a
// connection from one of those networks may name the client in
// X-Forwarded-For: the rightmost address outside the trusted networks
// counts (chi's ClientIPFromXFF), so a client cannot choose its address by
// sending the header itself. When that leaves no address (no header, or an
// unparsable entry), the peer counts: the request then shares the proxy's
// rate limit rather than escaping it.
func clientAddress(trusted []netip.Prefix) func(http.Handler) http.Handler {
	resolve := middleware.ClientIPFromRemoteAddr
	if len(trusted) > 0 {
		cidrs := make([]string, len(trusted))
		for i, p := range trusted {
			cidrs[i] = p.String()
		}
		resolve = middleware.ClientIPFromXFF(cidrs...)
	}
	return func(next http.Handler) http.Handler {
		return resolve(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			a := middleware.GetClientIPAddr(r.Context())
			if !a.IsValid() {
				a = peerAddr(r)
			}
			next.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), clientAddrKey, a)))
		}))
	}
}

// peerAddr is the connection's remote address, IPv4-mapped IPv6 unmapped.
func peerAddr(r *http.Request) netip.Addr {
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		host = r.RemoteAddr
	}
	a, err := netip.ParseAddr(host)
	if err != nil {
		return netip.Addr{}
	}
	return a.Unmap()
}

// hstsValue asks browsers to use HTTPS only for a year. It names no
// subdomains: the operator's other hosts are not ours to decide.
const hstsValue = "max-age=31536000"

// strictTransport sets Strict-Transport-Security on responses sent over
// TLS, and on every response when the public origin is https (a proxy in
// front terminated TLS; browsers ignore the header over plain HTTP).
func strictTransport(always bool) func(http.Handler) http.Handler {
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if always || r.TLS != nil {
				w.Header().Set("Strict-Transport-Security", hstsValue)
			}
			next.ServeHTTP(w, r)
		})
	}
}
