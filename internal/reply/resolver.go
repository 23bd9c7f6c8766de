package reply

import (
	"errors"
	"fmt"
	"net"
	"strings"
	"time"

	"github.com/miekg/dns"
)

// Resolver returns the TXT lookup of DKIM keys: the system resolver when
// server is empty, otherwise queries to server (host:port) over UDP,
// retried over TCP when the answer was truncated.
func Resolver(server string) LookupTXT {
	if server == "" {
		return net.LookupTXT
	}
	return func(name string) ([]string, error) {
		m := new(dns.Msg)
		m.SetQuestion(dns.Fqdn(name), dns.TypeTXT)
		m.RecursionDesired = true
		c := &dns.Client{Timeout: 5 * time.Second}
		in, _, err := c.Exchange(m, server)
		if err == nil && in.Truncated {
			c.Net = "tcp"
			in, _, err = c.Exchange(m, server)
		}
		if err != nil {
			return nil, &net.DNSError{Err: err.Error(), Name: name, Server: server, IsTemporary: true}
		}
		switch in.Rcode {
		case dns.RcodeSuccess:
		case dns.RcodeNameError:
			return nil, &net.DNSError{Err: "no such host", Name: name, Server: server, IsNotFound: true}
		default:
			return nil, &net.DNSError{Err: fmt.Sprintf("rcode %s", dns.RcodeToString[in.Rcode]), Name: name, Server: server, IsTemporary: true}
		}
		var out []string
		for _, rr := range in.Answer {
			if t, ok := rr.(*dns.TXT); ok {
				out = append(out, strings.Join(t.Txt, ""))
			}
		}
		if len(out) == 0 {
			return nil, errors.New("no TXT record for " + name)
		}
		return out, nil
	}
}
