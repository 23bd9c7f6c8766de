// Package cli implements the consensus command: `admin` (operator API),
// `verify` (digests and artifacts), `agent` (an invited agent's runtime)
// and `log` (the transparency log's monitor).
package cli

import (
	"context"
	"io"
	"os"
	"os/signal"
	"syscall"

	"github.com/spf13/cobra"

	"github.com/consensus-md/consensus/internal/cli/command"
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

// Main runs the command line args and returns the exit status: 0 success,
// 1 a runtime failure, 2 a usage error.
func Main(args []string, env Env) int {
	if env.Getenv == nil {
		env.Getenv = os.Getenv
	}
	ctx := env.Context
	if ctx == nil {
		var stop context.CancelFunc
		ctx, stop = signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
		defer stop()
	}
	// What people read goes through terminalText: messages and errors
	// always, and the standard output when it is a terminal.
	env.Stdout, env.Stderr = forTerminal(env.Stdout), forPeople(env.Stderr)
	return command.Execute(ctx, NewCommand(env), args, env.Stdin, env.Stdout, env.Stderr)
}

// NewCommand builds the consensus command tree; its commands read the
// environment through env.Getenv, and only when they run.
func NewCommand(env Env) *cobra.Command {
	if env.Getenv == nil {
		env.Getenv = os.Getenv
	}
	root := &cobra.Command{
		Use:   "consensus COMMAND",
		Short: "The Consensus command line",
		Long: `The Consensus command line: operator commands (admin), an invited agent's
runtime (agent), checks of digests and artifacts anyone can run (verify), and a
monitor of the service's transparency log (log).`,
		Example: `  consensus admin create -f examples/agreement.json
  consensus agent watch --imap imaps://inbox@imap.example/INBOX --exec ./decide
  consensus verify artifact CONSENSUS.md --headers artifact.headers
  consensus log monitor https://consensus.md --state monitor.json`,
		Args: command.AnyGroupArgs,
		RunE: command.Group,
	}
	root.AddCommand(adminCommand(env), agentCommand(env), verifyCommand(env), logCommand(env), command.Completion(root))
	return root
}
