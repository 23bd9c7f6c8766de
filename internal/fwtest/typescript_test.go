package fwtest_test

import (
	"bytes"
	"context"
	"encoding/json"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/consensus-md/consensus/internal/fwtest"
	"github.com/consensus-md/consensus/internal/servertest"
)

// TestTypeScriptClientFlow generates a TypeScript client from the served
// /openapi-agent.json with openapi-typescript, type-checks tools/fw/flow.mts
// against it with tsc, and runs it with node (openapi-fetch) against the
// server. The generated credential layer (tools/fw/credentials.gen.mts)
// types the Authorization header: credentials-ok.mts compiles, its misuses
// marked as expected errors, and credentials-fail.mts does not.
func TestTypeScriptClientFlow(t *testing.T) {
	t.Parallel()
	bin := fwtest.NodeTools(t)
	s := servertest.New(t, servertest.Options{})
	inv := fwtest.Agreement(t, s, "TypeScript client")
	fwtest.Run(t, 2*time.Minute, nil, filepath.Join(bin, "openapi-typescript"), s.URL+"/openapi-agent.json", "-o", "tools/fw/gen/consensus.d.ts")
	// flow.mts and credentials-ok.mts compile; credentials-fail.mts, a
	// participant client calling claim, must not.
	fwtest.Run(t, 3*time.Minute, nil, filepath.Join(bin, "tsc"), "-p", "tools/fw/tsconfig.json")
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	bad := exec.CommandContext(ctx, filepath.Join(bin, "tsc"), "-p", "tools/fw/tsconfig.credentials-fail.json")
	bad.Dir = fwtest.Root(t)
	msg, err := bad.CombinedOutput()
	if want := "credentials-fail.mts(11,26): error TS2345: Argument of type '\"/api/v1/agent/invitations/{invitationId}/claim\"'"; err == nil || !strings.Contains(string(msg), want) || strings.Count(string(msg), "error TS") != 1 {
		t.Fatalf("tsc on credentials-fail.mts: %v, want the one error %s:\n%s", err, want, msg)
	}
	out := fwtest.Run(t, time.Minute, []string{
		"CONSENSUS_BASE_URL=" + s.URL, "CONSENSUS_INVITATION_ID=" + inv.InvitationID, "CONSENSUS_SECRET=" + inv.Secret,
		"CONSENSUS_EMAIL_PROOF=" + inv.EmailProof, "CONSENSUS_INBOX=" + inv.Inbox,
	}, "node", "tools/fw/out/flow.mjs")
	var res struct {
		OK      bool   `json:"ok"`
		Outcome string `json:"outcome"`
		Events  int    `json:"events"`
		// Streamed counts the events read back from the stream as its
		// typed messages.
		Streamed int `json:"streamed"`
	}
	if err := json.Unmarshal(bytes.TrimSpace(out), &res); err != nil || !res.OK || res.Outcome != "reached" || res.Events != 2 || res.Streamed != 2 {
		t.Fatalf("flow.mts printed %s (%v)", out, err)
	}
}
