package room

import (
	"testing"

	"github.com/consensus-md/consensus/internal/canon"
	"github.com/consensus-md/consensus/internal/jwk"
)

// TestBindingDigestsPinned: the digest of a fixed participant-binding/v1
// (what every claim without a key has hashed since V1) and of its v2 form
// with a fixed key, each recomputed independently with Python's json module
// (sort_keys, compact separators, ensure_ascii=False) and hashlib. A change
// to either is a change of the contract.
func TestBindingDigestsPinned(t *testing.T) {
	t.Parallel()
	endpoint := "https://agent.example.org/consensus"
	b := Binding{
		Schema: "https://consensus.md/schemas/participant-binding/v1", Version: 1, AgreementID: "3f0c2b9e-8d4a-4e61-9b7c-5a2d1e0f3c4b",
		InvitationID: "9a8b7c6d-5e4f-4a3b-8c2d-1e0f9a8b7c6d", ParticipantID: "1b2c3d4e-5f60-4718-9a0b-c1d2e3f40516", Inbox: "zoë@agentmail.to",
		RuntimeEndpoint: &endpoint, Assurance: Assurance, Revision: 1, RevisionDigest: "25fdf8253a5bac8250a62e38eb3a6bba01f572bb9cf8208d926c2b5e3a1793d7",
	}
	noEndpoint := b
	noEndpoint.RuntimeEndpoint = nil
	key := jwk.Key{Kty: "OKP", Crv: "Ed25519", X: "11qYAYKxCrfVS_7TyWQHOg7hcvPapiMlrwIaaPcHURo"}
	cases := []struct {
		name string
		v    any
		want string
	}{
		{"v1", b, "d61b3fc7c970d1be4e608ba633572f46cd23aad893a576f0254210148984b317"},
		{"v1 without endpoint", noEndpoint, "10bfbe1d6dae5c96e37bab917ebb44c84fd4686ece0ad8161fa19cd447345d18"},
		{"v2", noEndpoint.WithKey("https://consensus.md/schemas/participant-binding/v2", key), "ee8214803298eb7024507e02f0ec83a0393364b488784efb9919f5c635a8d419"},
	}
	for _, c := range cases {
		_, d, err := canon.DigestOf(c.v)
		if err != nil || d != c.want {
			t.Errorf("%s: digest %s, pinned %s (%v)", c.name, d, c.want, err)
		}
	}
}
