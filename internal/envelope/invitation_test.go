package envelope_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"log/slog"
	"strings"
	"testing"

	"github.com/consensus-md/consensus/internal/envelope"
	"github.com/consensus-md/consensus/internal/envelope/envelopetest"
)

func TestInvitationRedaction(t *testing.T) {
	t.Parallel()
	inv, err := envelope.Parse(envelopetest.Valid(t), envelope.Policy{})
	if err != nil {
		t.Fatal(err)
	}
	var logBuf bytes.Buffer
	logger := slog.New(slog.NewJSONHandler(&logBuf, nil))
	logger.Info("got", "inv", inv, "env", inv.Envelope, "invv", *inv)
	js, err := json.Marshal(inv)
	if err != nil {
		t.Fatal(err)
	}
	envJS, err := json.Marshal(inv.Envelope)
	if err != nil {
		t.Fatal(err)
	}
	outputs := []string{
		fmt.Sprint(inv), fmt.Sprint(*inv), fmt.Sprintf("%+v", inv), fmt.Sprintf("%#v", inv), fmt.Sprintf("%#v", *inv),
		fmt.Sprintf("%v", inv.Envelope), fmt.Sprintf("%+v", inv.Envelope), fmt.Sprintf("%#v", inv.Envelope),
		fmt.Sprintf("%v", []*envelope.Invitation{inv}), logBuf.String(), string(js), string(envJS),
	}
	for _, s := range outputs {
		envelopetest.AssertNoLeak(t, s)
	}
	if !strings.Contains(fmt.Sprint(inv), envelopetest.InvitationID) || !strings.Contains(logBuf.String(), envelopetest.InvitationID) {
		t.Error("redacted forms should still name the invitation")
	}
	// Redaction must not touch the values themselves.
	if inv.Secret != envelopetest.Secret || inv.Envelope.AgentClaim.EmailProof != envelopetest.Proof {
		t.Error("redaction modified the invitation")
	}
}
