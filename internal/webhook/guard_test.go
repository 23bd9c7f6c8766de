package webhook

import (
	"errors"
	"net/netip"
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
