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

// notGlobal4 are the IPv4 ranges IANA's IPv4 Special-Purpose Address
// Registry does not mark globally reachable, with multicast (not a unicast
// destination) and Alibaba Cloud's instance-metadata address.
var notGlobal4 = prefixes(
	"0.0.0.0/8",          // "this network"
	"10.0.0.0/8",         // private use
	"100.64.0.0/10",      // shared address space
	"127.0.0.0/8",        // loopback
	"169.254.0.0/16",     // link-local (instance metadata too)
	"172.16.0.0/12",      // private use
	"192.0.0.0/24",       // IETF protocol assignments (but see global4)
	"192.0.2.0/24",       // documentation
	"192.88.99.0/24",     // 6to4 relay anycast (deprecated)
	"192.168.0.0/16",     // private use
	"198.18.0.0/15",      // benchmarking
	"198.51.100.0/24",    // documentation
	"203.0.113.0/24",     // documentation
	"224.0.0.0/4",        // multicast
	"240.0.0.0/4",        // reserved, and the limited broadcast address
	"100.100.100.200/32", // Alibaba Cloud instance metadata
)

// global4 are the globally reachable exceptions inside notGlobal4.
var global4 = prefixes("192.0.0.9/32", "192.0.0.10/32")

// global6 is the IPv6 space a webhook may reach: global unicast. Everything
// outside it (loopback, unspecified, IPv4-compatible and IPv4-translated
// forms, discard-only, local-use NAT64, unique local, link-local, site-local,
// multicast, the SRv6 SID block) is refused; the well-known NAT64 prefix and
// IPv4-mapped addresses are judged by the IPv4 address inside.
var global6 = prefixes("2000::/3")

// notGlobal6 are the ranges inside global6 that IANA's IPv6 Special-Purpose
// Address Registry does not mark globally reachable.
var notGlobal6 = prefixes(
	"2001::/23",     // IETF protocol assignments: Teredo, benchmarking, ORCHID… (but see globalIn6)
	"2001:db8::/32", // documentation
	"3fff::/20",     // documentation
)

// globalIn6 are the globally reachable exceptions inside notGlobal6.
var globalIn6 = prefixes("2001:1::1/128", "2001:1::2/128", "2001:1::3/128", "2001:3::/32", "2001:4:112::/48", "2001:20::/28", "2001:30::/28")

var (
	nat64     = netip.MustParsePrefix("64:ff9b::/96")
	sixToFour = netip.MustParsePrefix("2002::/16")
)

func prefixes(ss ...string) []netip.Prefix {
	out := make([]netip.Prefix, len(ss))
	for i, s := range ss {
		out[i] = netip.MustParsePrefix(s)
	}
	return out
}

func within(a netip.Addr, ps []netip.Prefix) bool {
	for _, p := range ps {
		if p.Contains(a) {
			return true
		}
	}
	return false
}

// errNotGlobal is every address refusal. It never names the address: the
// URL may hold a name, and what an internal name resolves to is not for a
// participant to learn.
var errNotGlobal = refused("its host is not a globally reachable address (loopback is accepted only in local runs)")

// CheckAddr accepts only addresses that IANA's special-purpose registries
// mark globally reachable, judging an IPv4 address embedded in an IPv6
// form (IPv4-mapped, the well-known NAT64 prefix, 6to4) as itself; loopback
// passes too when allowLoopback (local runs).
func CheckAddr(a netip.Addr, allowLoopback bool) error {
	a = a.WithZone("")
	if allowLoopback && a.IsLoopback() {
		return nil
	}
	if a.Is4In6() {
		a = a.Unmap()
	}
	if a.Is6() {
		switch {
		case nat64.Contains(a):
			b := a.As16()
			return CheckAddr(netip.AddrFrom4([4]byte(b[12:16])), false)
		case sixToFour.Contains(a):
			b := a.As16()
			return CheckAddr(netip.AddrFrom4([4]byte(b[2:6])), false)
		case !within(a, global6) || (within(a, notGlobal6) && !within(a, globalIn6)):
			return errNotGlobal
		}
		return nil
	}
	if !a.Is4() || (within(a, notGlobal4) && !within(a, global4)) {
		return errNotGlobal
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
		return refused("its host does not resolve")
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
			return refused("an unparsable address was dialled")
		}
		return CheckAddr(ap.Addr(), allowLoopback)
	}}
}
