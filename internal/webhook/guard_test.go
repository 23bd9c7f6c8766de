package webhook

import (
	"errors"
	"net/netip"
	"strings"
	"testing"
)

func TestCheckURL(t *testing.T) {
	t.Parallel()
	for raw, ok := range map[string]bool{
		"https://hooks.example.com/consensus?x=1":   true,
		"https://8.8.8.8/hook":                      true,
		"http://hooks.example.com/":                 false,
		"ftp://hooks.example.com/":                  false,
		"https:///nohost":                           false,
		"https://user:pass@hooks.example.com/":      false,
		"https://hooks.example.com/#frag":           false,
		"https://127.0.0.1/":                        false,
		"https://[::1]/":                            false,
		"https://10.1.2.3/":                         false,
		"https://192.168.0.1:8443/":                 false,
		"https://169.254.169.254/latest/meta-data/": false,
		"https://[fe80::1]/":                        false,
		"https://224.0.0.1/":                        false,
		"https://0.0.0.0/":                          false,
		"https://100.64.0.1/":                       false,
		"https://[::ffff:10.0.0.1]/":                false,
		"https://[fd00:ec2::254]/":                  false,
		"https://100.100.100.200/":                  false,
		"hooks.example.com":                         false,
	} {
		_, err := CheckURL(raw, false)
		if (err == nil) != ok || (err != nil && !errors.Is(err, ErrRefusedURL)) {
			t.Errorf("CheckURL(%q) = %v, want ok=%v", raw, err, ok)
		}
	}
	if _, err := CheckURL("https://127.0.0.1:8443/hook", true); err != nil {
		t.Errorf("loopback in a local run: %v", err)
	}
	if _, err := CheckURL("https://10.0.0.1/hook", true); err == nil {
		t.Error("a local run still refuses private addresses")
	}
}

func TestCheckAddrPublic(t *testing.T) {
	t.Parallel()
	for _, s := range []string{"8.8.8.8", "1.1.1.1", "2606:4700::1111"} {
		if err := CheckAddr(netip.MustParseAddr(s), false); err != nil {
			t.Errorf("%s: %v", s, err)
		}
	}
}

// TestCheckAddrGlobalOnly: only addresses that IANA's special-purpose
// registries mark globally reachable are accepted, and an IPv4 address
// embedded in an IPv6 form is judged as itself.
func TestCheckAddrGlobalOnly(t *testing.T) {
	t.Parallel()
	for s, ok := range map[string]bool{
		// IPv4
		"8.8.8.8":         true,
		"192.0.0.9":       true, // PCP anycast: globally reachable
		"192.31.196.1":    true, // AS112
		"10.1.2.3":        false,
		"172.16.0.1":      false,
		"192.168.1.1":     false,
		"127.0.0.1":       false,
		"0.1.2.3":         false,
		"100.64.0.1":      false,
		"169.254.1.1":     false,
		"192.0.0.1":       false,
		"192.0.2.1":       false,
		"192.88.99.1":     false, // 6to4 relay anycast, deprecated
		"198.18.0.1":      false,
		"198.51.100.1":    false,
		"203.0.113.1":     false,
		"224.0.0.1":       false,
		"240.0.0.1":       false,
		"255.255.255.255": false,
		// IPv6
		"2606:4700::1111":      true,
		"2001:4860:4860::8888": true,
		"64:ff9b::808:808":     true, // NAT64 of 8.8.8.8
		"2002:808:808::1":      true, // 6to4 of 8.8.8.8
		"::1":                  false,
		"::":                   false,
		"::127.0.0.1":          false, // IPv4-compatible, deprecated
		"::8.8.8.8":            false,
		"::ffff:10.0.0.1":      false,
		"::ffff:0:10.0.0.1":    false, // IPv4-translated
		"64:ff9b::a00:1":       false, // NAT64 of 10.0.0.1
		"64:ff9b::7f00:1":      false, // NAT64 of 127.0.0.1
		"64:ff9b:1::a00:1":     false, // local-use NAT64
		"100::1":               false, // discard-only
		"2001::1":              false, // Teredo
		"2001:2::1":            false, // benchmarking
		"2001:10::1":           false, // ORCHID
		"2001:db8::1":          false, // documentation
		"2002:a00:1::":         false, // 6to4 of 10.0.0.1
		"2002:7f00:1::1":       false, // 6to4 of 127.0.0.1
		"3fff::1":              false, // documentation
		"5f00::1":              false, // SRv6 SIDs
		"fc00::1":              false,
		"fd12:3456::1":         false,
		"fe80::1":              false,
		"fec0::1":              false, // site-local, deprecated
		"ff02::1":              false,
		"fd00:ec2::254":        false,
		"4000::1":              false, // outside global unicast space
	} {
		err := CheckAddr(netip.MustParseAddr(s), false)
		if (err == nil) != ok || (err != nil && !errors.Is(err, ErrRefusedURL)) {
			t.Errorf("CheckAddr(%s) = %v, want ok=%v", s, err, ok)
		}
	}
	for _, raw := range []string{"https://[::127.0.0.1]/", "https://[64:ff9b:1::a00:1]/", "https://[2002:a00:1::]/", "https://[fec0::1]/"} {
		if _, err := CheckURL(raw, false); err == nil {
			t.Errorf("CheckURL(%q) accepted a non-global address", raw)
		}
	}
}

// TestRefusalNamesNoAddress: a refusal says why, never which address, so
// registering a name cannot reveal what it resolves to.
func TestRefusalNamesNoAddress(t *testing.T) {
	t.Parallel()
	for _, s := range []string{"10.1.2.3", "127.0.0.1", "169.254.169.254", "100.100.100.200", "fd00:ec2::254", "64:ff9b::a00:1", "2002:a00:1::"} {
		a := netip.MustParseAddr(s)
		err := CheckAddr(a, false)
		if err == nil {
			t.Fatalf("%s accepted", s)
		}
		for _, form := range []string{s, a.Unmap().String(), "10.0.0.1", "127.0.0.1"} {
			if strings.Contains(err.Error(), form) {
				t.Errorf("the refusal of %s names %s: %v", s, form, err)
			}
		}
	}
}
