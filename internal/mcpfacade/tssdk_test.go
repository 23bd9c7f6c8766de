package mcpfacade_test

import (
	"bufio"
	"bytes"
	"context"
	"crypto/ed25519"
	"crypto/sha256"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/consensus-md/consensus/internal/fwtest"
	"github.com/consensus-md/consensus/internal/servertest"
)

// TestMCPTypeScriptSDKAgent runs tools/fw/mcp-agent.mjs: a keyed agent on
// the official TypeScript SDK that knows only its token, its key and what
// tools/list says. It waits while the other participant (here, from Go)
// comments, signs what command_to_sign gives, decides, waits for the other
// decision, and verifies the embedded record with the verifier and keys it
// downloads from the server; a changed byte fails that verifier.
func TestMCPTypeScriptSDKAgent(t *testing.T) {
	t.Parallel()
	fwtest.NodeTools(t)
	s := servertest.New(t, servertest.Options{})
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	c, err := s.CreateAgreement(ctx, servertest.Agreement{
		Title: "TypeScript SDK room", Objective: "Agree on the release window.", Rules: []string{"Weekdays only"},
		Deadline: s.Clock.Now().Add(48 * time.Hour).Truncate(time.Second),
		Participants: []servertest.Participant{
			{DisplayName: "Ada", Kind: "agent", Email: "ada@agentmail.to", Required: true},
			{DisplayName: "Bo", Kind: "agent", Email: "bo@agentmail.to", Required: true},
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	seed := sha256.Sum256([]byte("consensus-md TEST KEY, never use for anything real: ts sdk ada"))
	priv := ed25519.NewKeyFromSeed(seed[:])
	adaToken := joinKeyed(t, s, fwtest.ReadInvite(t, s, c.Participants[0].InvitationID), priv)
	bo := &bearer{base: s.Client.Transport}
	bo.token.Store(fwtest.Join(t, s, fwtest.ReadInvite(t, s, c.Participants[1].InvitationID)))
	csBo := connect(t, s, bo)
	boRoom := structured[roomDigest](t, "read_room", call(t, csBo, "read_room", nil))

	jwk, _ := json.Marshal(map[string]string{"kty": "OKP", "crv": "Ed25519", "d": b64.EncodeToString(seed[:]), "x": b64.EncodeToString(priv.Public().(ed25519.PublicKey))})
	root := fwtest.Root(t)
	cmd := exec.CommandContext(ctx, "node", filepath.Join(root, "tools", "fw", "mcp-agent.mjs"))
	cmd.Dir = filepath.Join(root, "tools")
	cmd.Env = append(os.Environ(), "CONSENSUS_BASE_URL="+s.URL, "CONSENSUS_PARTICIPANT_TOKEN="+adaToken, "CONSENSUS_PRIVATE_JWK="+string(jwk))
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var lines []string
	var last struct {
		Step             string `json:"step"`
		OK               bool   `json:"ok"`
		Outcome          string `json:"outcome"`
		ChangedByteFails bool   `json:"changedByteFails"`
	}
	sc := bufio.NewScanner(stdout)
	for sc.Scan() {
		lines = append(lines, sc.Text())
		last.Step = ""
		if err := json.Unmarshal(sc.Bytes(), &last); err != nil {
			t.Errorf("mcp-agent.mjs printed %q", sc.Text())
			continue
		}
		// Give the agent's wait time to be held before the room changes.
		switch last.Step {
		case "waiting":
			time.Sleep(300 * time.Millisecond)
			if res := call(t, csBo, "post_advisory", map[string]any{"action": "comment", "body": "Tuesday suits me.", "revision": 1,
				"digest": boRoom.Revision.RevisionDigest, "idempotencyKey": "bo-comment-1"}); res.IsError {
				t.Errorf("Bo's comment: %s", text(res))
			}
		case "decided":
			time.Sleep(300 * time.Millisecond)
			if res := call(t, csBo, "decide", map[string]any{"decision": "agree", "revision": 1, "digest": boRoom.Revision.RevisionDigest,
				"confirm": true, "idempotencyKey": "bo-decide-1"}); res.IsError {
				t.Errorf("Bo's decision: %s", text(res))
			}
		}
	}
	if err := cmd.Wait(); err != nil {
		t.Fatalf("mcp-agent.mjs: %v\nstdout:\n%q\nstderr:\n%s", err, lines, stderr.Bytes())
	}
	if !last.OK || last.Outcome != "reached" || !last.ChangedByteFails {
		t.Fatalf("mcp-agent.mjs ended with %q\nstderr:\n%s", lines, stderr.Bytes())
	}
	t.Logf("mcp-agent.mjs: %s", lines[len(lines)-1])
}

// roomDigest is the part of read_room the other participant needs.
type roomDigest struct {
	Revision struct {
		RevisionDigest string `json:"revisionDigest"`
	} `json:"revision"`
}
