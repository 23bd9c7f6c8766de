// Package cli implements the consensus command: `admin` (operator API),
// `verify` (digests and artifacts) and `agent` (an invited agent's runtime).
package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
)

// Env is what a command may read and write; tests supply their own.
type Env struct {
	Stdout, Stderr io.Writer
	Stdin          io.Reader
	Getenv         func(string) string
	// Context, when set, bounds long-running commands (agent watch); nil
	// means until SIGINT or SIGTERM.
	Context context.Context
}

func jsonUnmarshal(b []byte, v any) error { return json.Unmarshal(b, v) }

// usageError is a mistake in the command line: exit status 2.
type usageError struct{ msg string }

func (e *usageError) Error() string { return e.msg }

const usage = `usage:
  consensus admin create -f agreement.json     lock an agreement and queue its invitations
  consensus admin list [--limit N] [--cursor C]
  consensus admin get AGREEMENT_ID
  consensus admin revoke PARTICIPANT_ID
  consensus admin resend INVITATION_ID
  consensus agent watch|rooms|room|comment|question|change-request|agree|disagree|abstain|artifact ...
                                               an invited agent's runtime ('consensus agent help')
  consensus verify revision EXCHANGE.json      recompute revisionDigest and markdownDigest
  consensus verify artifact CONSENSUS.md [--headers FILE] [--sha256 HEX]

admin reads CONSENSUS_URL (default http://127.0.0.1:8080) and the operator token
from CONSENSUS_OPERATOR_TOKEN, CONSENSUS_OPERATOR_TOKEN_FILE or .data/operator-token.
`

// Main runs the command and returns the exit status.
func Main(args []string, env Env) int {
	if env.Getenv == nil {
		env.Getenv = os.Getenv
	}
	err := dispatch(args, env)
	if err == nil {
		return 0
	}
	fmt.Fprintln(env.Stderr, "consensus:", err)
	var ue *usageError
	if errors.As(err, &ue) {
		fmt.Fprint(env.Stderr, usage)
		return 2
	}
	return 1
}

func dispatch(args []string, env Env) error {
	if len(args) == 0 {
		return &usageError{"missing command"}
	}
	switch args[0] {
	case "admin":
		return runAdmin(args[1:], env)
	case "verify":
		return runVerify(args[1:], env)
	case "agent":
		return runAgent(args[1:], env)
	case "help", "-h", "--help":
		fmt.Fprint(env.Stdout, usage)
		return nil
	default:
		return &usageError{fmt.Sprintf("unknown command %q", args[0])}
	}
}

// flagValue extracts "--name value" or "--name=value" (and -short forms) from args.
func flagValue(args []string, names ...string) (string, []string, error) {
	var rest []string
	value := ""
	for i := 0; i < len(args); i++ {
		a := args[i]
		matched := false
		for _, n := range names {
			if a == n {
				if i+1 >= len(args) {
					return "", nil, &usageError{n + " needs a value"}
				}
				value, i, matched = args[i+1], i+1, true
				break
			}
			if strings.HasPrefix(a, n+"=") {
				value, matched = strings.TrimPrefix(a, n+"="), true
				break
			}
		}
		if !matched {
			rest = append(rest, a)
		}
	}
	return value, rest, nil
}
