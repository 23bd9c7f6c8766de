package webhook

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"net/url"
	"strings"
	"syscall"
	"time"
)

// MaxURL is the longest endpoint URL accepted.
const MaxURL = 2048

// ErrRefusedURL: the endpoint URL or the address it resolves to may not
// receive webhooks. Every refusal matches it with errors.Is.
var ErrRefusedURL = errors.New("webhook URL refused")

type refusedError struct{ reason string }

func (e *refusedError) Error() string        { return "webhook URL refused: " + e.reason }
func (e *refusedError) Is(target error) bool { return target == ErrRefusedURL }

func refused(format string, args ...any) error {
	return &refusedError{reason: fmt.Sprintf(format, args...)}
}

// Refusal is the URL or address refusal inside err (the dialer's, wrapped
// by the HTTP client), without the wrapping; nil if there is none.
func Refusal(err error) error {
	var r *refusedError
	if errors.As(err, &r) {
		return r
	}
	return nil
}

// CheckURL parses an endpoint URL: https:// only, a host, no user
// information (a credential in a URL would end up in logs), no fragment, at
// most MaxURL bytes. A literal address is checked like a resolved one.
func CheckURL(raw string, allowLoopback bool) (*url.URL, error) {
	if len(raw) > MaxURL {
		return nil, refused("longer than %d bytes", MaxURL)
	}
	u, err := url.Parse(raw)
	if err != nil || u.Opaque != "" {
		return nil, refused("not an absolute URL")
	}
	switch {
	case u.Scheme != "https":
		return nil, refused("only https:// URLs receive webhooks")
	case u.Host == "" || u.Hostname() == "":
		return nil, refused("no host")
	case u.User != nil:
		return nil, refused("user information (a credential) is not allowed in the URL")
	case u.Fragment != "" || strings.Contains(raw, "#"):
		return nil, refused("no fragment")
	}
	if a, err := netip.ParseAddr(u.Hostname()); err == nil {
		if err := CheckAddr(a, allowLoopback); err != nil {
			return nil, err
		}
	}
	return u, nil
}

// metadata are cloud instance-metadata addresses outside the private
// ranges (169.254.169.254 is link-local anyway).
var metadata = []netip.Prefix{
	netip.MustParsePrefix("100.100.100.200/32"), // Alibaba Cloud
	netip.MustParsePrefix("fd00:ec2::254/128"),  // AWS IPv6
}

// nonPublic are ranges that are neither private nor loopback by netip but
// not public either: shared address space, benchmarking, documentation,
// IPv4-mapped or translated forms are unmapped first.
var nonPublic = []netip.Prefix{
	netip.MustParsePrefix("0.0.0.0/8"),
	netip.MustParsePrefix("100.64.0.0/10"),
	netip.MustParsePrefix("192.0.0.0/24"),
	netip.MustParsePrefix("192.0.2.0/24"),
	netip.MustParsePrefix("198.18.0.0/15"),
	netip.MustParsePrefix("198.51.100.0/24"),
	netip.MustParsePrefix("203.0.113.0/24"),
	netip.MustParsePrefix("240.0.0.0/4"),
	netip.MustParsePrefix("64:ff9b::/96"),
	netip.MustParsePrefix("2001:db8::/32"),
}

// CheckAddr refuses every address that is not public: loopback (unless
// allowLoopback), private, link-local, multicast, unspecified, metadata,
// and the reserved ranges.
func CheckAddr(a netip.Addr, allowLoopback bool) error {
	a = a.Unmap()
	switch {
	case a.IsLoopback():
		if allowLoopback {
			return nil
		}
		return refused("%s is a loopback address", a)
	case a.IsPrivate():
		return refused("%s is a private address", a)
	case a.IsLinkLocalUnicast() || a.IsLinkLocalMulticast():
		return refused("%s is a link-local address", a)
	case a.IsMulticast() || a.IsInterfaceLocalMulticast():
		return refused("%s is a multicast address", a)
	case a.IsUnspecified() || !a.IsValid():
		return refused("%s is the unspecified address", a)
	}
	for _, p := range metadata {
		if p.Contains(a) {
			return refused("%s is a metadata address", a)
		}
	}
	for _, p := range nonPublic {
		if p.Contains(a) {
			return refused("%s is not a public address", a)
		}
	}
	return nil
}

// Resolve looks host up and checks every address it has: a name with one
// private address is refused, since a later lookup could return that one.
func Resolve(ctx context.Context, r *net.Resolver, host string, allowLoopback bool) error {
	if r == nil {
		r = net.DefaultResolver
	}
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	addrs, err := r.LookupNetIP(ctx, "ip", host)
	if err != nil || len(addrs) == 0 {
		return refused("%s does not resolve", host)
	}
	for _, a := range addrs {
		if err := CheckAddr(a, allowLoopback); err != nil {
			return err
		}
	}
	return nil
}

// Dialer connects only to addresses CheckAddr accepts: the check runs on
// the address actually dialled, after resolution, so a name that resolves
// differently at delivery time (DNS rebinding) is still refused.
// A nil resolver is the system's.
func Dialer(allowLoopback bool, r *net.Resolver) *net.Dialer {
	return &net.Dialer{Timeout: 5 * time.Second, Resolver: r, Control: func(_, address string, _ syscall.RawConn) error {
		ap, err := netip.ParseAddrPort(address)
		if err != nil {
			return refused("unparsable address %q", address)
		}
		return CheckAddr(ap.Addr(), allowLoopback)
	}}
}
