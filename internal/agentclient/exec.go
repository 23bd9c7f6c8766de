package agentclient

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"time"
)

// ExecCommand is what an --exec program prints: {"action":"comment","body":"…"},
// {"action":"agree"} or {"action":"none"}.
type ExecCommand struct {
	Action string `json:"action"`
	Body   string `json:"body"`
}

// execActions are the actions a program may print; change-request is
// accepted for change_request.
var execActions = map[string]bool{"none": true, "comment": true, "question": true, "change_request": true, "agree": true, "disagree": true, "abstain": true}

// ExecTimeout bounds one run of an --exec program.
var ExecTimeout = 2 * time.Minute

// RunExec runs program directly (no shell, no arguments) with the room JSON
// on standard input and reads one JSON command from its standard output
// (at most 64 KiB). The child's environment is a short allow-list (PATH,
// HOME, LANG, LC_ALL, TZ, TMPDIR) plus CONSENSUS_INVITATION_ID and
// CONSENSUS_AGREEMENT_ID: no token, password or other credential reaches it
// through argv, environment or stdin.
func RunExec(ctx context.Context, program string, roomJSON []byte, rec *Record, stderr io.Writer) (*ExecCommand, error) {
	ctx, cancel := context.WithTimeout(ctx, ExecTimeout)
	defer cancel()
	c := exec.CommandContext(ctx, program)
	c.Env = childEnv(rec)
	c.Stdin = bytes.NewReader(roomJSON)
	if stderr == nil {
		stderr = io.Discard
	}
	c.Stderr = stderr
	var out limitedBuffer
	out.limit = 64 << 10
	c.Stdout = &out
	if err := c.Run(); err != nil {
		return nil, fmt.Errorf("agent: exec %s: %w", program, err)
	}
	if out.over {
		return nil, fmt.Errorf("agent: exec %s: output over 64 KiB", program)
	}
	dec := json.NewDecoder(bytes.NewReader(out.buf.Bytes()))
	dec.DisallowUnknownFields()
	var cmd ExecCommand
	if err := dec.Decode(&cmd); err != nil {
		return nil, fmt.Errorf("agent: exec %s: output is not one JSON command: %w", program, err)
	}
	cmd.Action = strings.ReplaceAll(cmd.Action, "-", "_")
	if !execActions[cmd.Action] {
		return nil, fmt.Errorf("agent: exec %s: unknown action %q", program, cmd.Action)
	}
	if Terminal(cmd.Action) && cmd.Body != "" {
		return nil, fmt.Errorf("agent: exec %s: %s takes no body (post the rationale as a comment first)", program, cmd.Action)
	}
	if !Terminal(cmd.Action) && cmd.Action != "none" && cmd.Body == "" {
		return nil, fmt.Errorf("agent: exec %s: %s needs a body", program, cmd.Action)
	}
	return &cmd, nil
}

func childEnv(rec *Record) []string {
	var env []string
	for _, k := range []string{"PATH", "HOME", "LANG", "LC_ALL", "TZ", "TMPDIR"} {
		if v, ok := os.LookupEnv(k); ok {
			env = append(env, k+"="+v)
		}
	}
	return append(env, "CONSENSUS_INVITATION_ID="+rec.InvitationID, "CONSENSUS_AGREEMENT_ID="+rec.AgreementID)
}

type limitedBuffer struct {
	buf   bytes.Buffer
	limit int
	over  bool
}

// Write keeps at most limit bytes and notes that more came; it never fails,
// so the program is not killed by a closed pipe.
func (b *limitedBuffer) Write(p []byte) (int, error) {
	if room := b.limit - b.buf.Len(); len(p) > room {
		b.over = true
		b.buf.Write(p[:max(room, 0)])
		return len(p), nil
	}
	return b.buf.Write(p)
}
