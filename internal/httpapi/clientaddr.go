package httpapi

import (
	"context"
	"net"
	"net/http"
	"net/netip"

	"github.com/go-chi/chi/v5/middleware"
)

// clientAddr is the request's client address as front resolved it; the
// zero Addr when front did not run.
func clientAddr(ctx context.Context) netip.Addr {
	if i := infoFrom(ctx); i != nil {
		return i.client
	}
	return netip.Addr{}
}

// resolveClient decides who the client is. Without trusted proxies it is
// the connection's peer, whatever the headers say. With them, a
// connection from one of those networks may name the client in
// X-Forwarded-For: the rightmost address outside the trusted networks
// counts (chi's ClientIPFromXFF, which front runs behind), so a client
// cannot choose its address by sending the header itself. When that
// leaves no address (no header, or an unparsable entry), the peer counts:
// the request then shares the proxy's rate limit rather than escaping it.
func (s *Server) resolveClient(r *http.Request) netip.Addr {
	if len(s.trusted) > 0 {
		if a := middleware.GetClientIPAddr(r.Context()); a.IsValid() {
			return a
		}
	}
	return peerAddr(r)
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

// hstsValue (front sets it on responses sent over TLS, and on every
// response when the public origin is https: a proxy in front terminated
// TLS; browsers ignore the header over plain HTTP) asks browsers to use HTTPS only for a year. It names no
// subdomains: the operator's other hosts are not ours to decide.
const hstsValue = "max-age=31536000"
