package envelope_test

import (
	"testing"

	"github.com/consensus-md/consensus/internal/envelope"
)

func TestPolicyValidate(t *testing.T) {
	t.Parallel()
	good := []envelope.Policy{{}, {Origin: "https://consensus.md"}, {Origin: "https://Example.COM:8443/"},
		{Origin: "http://localhost:3000", AllowHTTPLoopback: true}, {Origin: "http://[::1]:80", AllowHTTPLoopback: true}}
	for _, p := range good {
		if err := p.Validate(); err != nil {
			t.Errorf("%+v: %v", p, err)
		}
	}
	bad := []envelope.Policy{{Origin: "https://consensus.md/path"}, {Origin: "https://u@consensus.md"}, {Origin: "ftp://consensus.md"},
		{Origin: "https://consensus.md?q"}, {Origin: "consensus.md"}, {Origin: "http://127.0.0.2", AllowHTTPLoopback: true},
		{Origin: "https://consensus.md:99999"}}
	for _, p := range bad {
		if err := p.Validate(); err == nil {
			t.Errorf("%+v accepted", p)
		}
	}
}
