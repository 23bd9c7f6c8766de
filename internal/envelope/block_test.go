package envelope_test

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/consensus-md/consensus/internal/envelope"
	"github.com/consensus-md/consensus/internal/envelope/envelopetest"
)

func TestExtractBlock(t *testing.T) {
	t.Parallel()
	js := `{"a":1}`
	tests := []struct {
		name    string
		body    string
		want    string // expected block when ok
		wantErr bool
	}{
		{"lf", envelopetest.Body(js), js + "\n", false},
		{"crlf", strings.ReplaceAll(envelopetest.Body(js), "\n", "\r\n"), js + "\r\n", false},
		{"markers at the very ends", envelope.BeginMarker + "\n" + js + "\n" + envelope.EndMarker, js + "\n", false},
		{"empty block", envelope.BeginMarker + "\n" + envelope.EndMarker + "\n", "", false},
		{"none", "just a note\n", "", true},
		{"empty body", "", "", true},
		{"two blocks", envelopetest.Body(js) + envelopetest.Body(js), "", true},
		{"begin without end", "x\n" + envelope.BeginMarker + "\n" + js + "\n", "", true},
		{"end before begin", envelope.EndMarker + "\n" + envelope.BeginMarker + "\n" + js + "\n" + envelope.EndMarker + "\n", "", true},
		{"end only", js + "\n" + envelope.EndMarker + "\n", "", true},
		{"nested begin", envelope.BeginMarker + "\n" + envelope.BeginMarker + "\n" + js + "\n" + envelope.EndMarker + "\n", "", true},
		{"leading space on marker", " " + envelope.BeginMarker + "\n" + js + "\n" + envelope.EndMarker + "\n", "", true},
		{"trailing space on marker", envelope.BeginMarker + "\n" + js + "\n" + envelope.EndMarker + " \n", "", true},
		{"marker inside a line", "see " + envelope.BeginMarker + " here\n" + js + "\n" + envelope.EndMarker + "\n", "", true},
		{"quoted reply is not a block", "> " + envelope.BeginMarker + "\n> " + js + "\n> " + envelope.EndMarker + "\n", "", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, err := envelope.ExtractBlock([]byte(tt.body))
			if tt.wantErr {
				var ce *envelope.CheckError
				if !errors.As(err, &ce) || ce.Check != envelope.CheckBlock {
					t.Fatalf("err = %v, want a %q CheckError", err, envelope.CheckBlock)
				}
				return
			}
			if err != nil {
				t.Fatalf("unexpected error: %v", err)
			}
			if string(got) != tt.want {
				t.Fatalf("block = %q, want %q", got, tt.want)
			}
		})
	}
}

// TestBlockRoundTrip writes an envelope as the issuer does and reads it back
// as an agent does: the markers are the published lines, the credentials
// survive the wire encoding, and the checks pass.
func TestBlockRoundTrip(t *testing.T) {
	t.Parallel()
	var env envelope.Envelope
	if err := json.Unmarshal(envelopetest.Valid(t), &env); err != nil {
		t.Fatal(err)
	}
	block, err := env.Block()
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(string(block), "---BEGIN CONSENSUS INVITATION V1---\n{\n  \"schema\": ") ||
		!strings.HasSuffix(string(block), "}\n---END CONSENSUS INVITATION V1---\n") {
		t.Fatalf("block is not framed by the published marker lines:\n%s", block)
	}
	raw, err := envelope.ExtractBlock(append([]byte("Hello,\n\n"), block...))
	if err != nil {
		t.Fatal(err)
	}
	inv, err := envelope.Parse(raw, envelope.Policy{})
	if err != nil {
		t.Fatalf("the issuer's encoding fails the checks: %v", err)
	}
	if inv.Secret != envelopetest.Secret || inv.EmailProof != envelopetest.Proof || inv.Envelope != env {
		t.Fatal("the wire encoding lost or changed a value")
	}
}
