// Package consensusd is the command line of the consensusd binary: serve
// (the default), migrate, workspace create and list, operator link,
// config check, healthcheck,
// version. Settings come from the environment through the table in
// internal/config, which --help lists.
package consensusd

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"runtime/debug"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/consensus-md/consensus/internal/cli/command"
	"github.com/consensus-md/consensus/internal/config"
	"github.com/consensus-md/consensus/internal/daemon"
	"github.com/consensus-md/consensus/internal/logwriter"
	"github.com/consensus-md/consensus/internal/store"
)

// Env is what the commands read and write; tests supply their own.
type Env struct {
	Stdout, Stderr io.Writer
	Getenv         func(string) string
}

// Main runs consensusd with args until ctx ends and returns the exit status:
// 0 success, 1 a runtime failure, 2 a usage error.
func Main(ctx context.Context, args []string, env Env) int {
	return command.Execute(ctx, NewCommand(env), args, nil, env.Stdout, env.Stderr)
}

// NewCommand builds the consensusd command tree. The environment is read
// only when a command runs, never for --help.
func NewCommand(env Env) *cobra.Command {
	if env.Getenv == nil {
		env.Getenv = os.Getenv
	}
	var settings strings.Builder
	_ = config.WriteHelp(&settings)
	root := &cobra.Command{
		Use:   "consensusd",
		Short: "The Consensus service",
		Long: `The Consensus service. Without a command it applies pending database migrations
(under an advisory lock, so replicas may start together), then serves the API,
the web pages and the invitation outbox until SIGINT or SIGTERM. It reads its
settings from the environment and refuses to start, naming the setting, when
one is wrong. The settings are listed below and in docs/configuration.md.`,
		Example: `  DATABASE_URL=postgres:///consensus CONSENSUS_ENV=local CONSENSUS_MAIL_URL=maildir:///tmp/mail \
    CONSENSUS_OPERATOR_TOKEN_FILE=.data/operator-token CONSENSUS_TOKEN_KEY_FILE=.data/token-key consensusd
  consensusd config check
  consensusd migrate`,
		Args: command.NoArgs,
		Annotations: map[string]string{
			command.FooterAnnotation: settings.String(),
		},
		RunE: func(c *cobra.Command, _ []string) error {
			cfg, err := config.Load(env.Getenv)
			if err != nil {
				return err
			}
			cfg.Version = command.Version("consensusd").Short()
			// Lines are written together at most every 100 ms: one write
			// per request line cost a system call each.
			lines := logwriter.New(env.Stderr, 100*time.Millisecond, 64<<10)
			defer lines.Close()
			log := slog.New(slog.NewJSONHandler(lines, nil))
			if env.Getenv("GOGC") == "" {
				// Collect when the heap has grown by 40%, not doubled: a
				// collection's work is what is live, so this costs little
				// CPU, and keeps the peak RSS of the bench's long append
				// run near 60 MiB instead of 70, and that of its 4,000
				// listeners attaching at once near 200-225 MiB, where 50
				// let it reach 254-276 (docs/operations.md); admitting
				// connections a bounded number at a time has since brought
				// that storm to 181-203 MiB.
				debug.SetGCPercent(40)
			}
			return daemon.Run(c.Context(), cfg, log, daemon.Options{})
		},
	}
	migrate := &cobra.Command{
		Use:   "migrate",
		Short: "Apply pending database migrations, then exit",
		Long: `Apply pending database migrations, then exit. Only DATABASE_URL (or
DATABASE_URL_FILE) is read; serving migrates too, so this is for a separate
migration step (a Kubernetes Job, a deploy hook).`,
		Example: "  DATABASE_URL_FILE=/run/secrets/database-url consensusd migrate",
		Args:    command.NoArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			url, err := config.Lookup(env.Getenv, "DATABASE_URL")
			if err != nil {
				return err
			}
			return store.Migrate(c.Context(), url)
		},
	}
	cfg := &cobra.Command{
		Use:     "config COMMAND",
		Short:   "Inspect the configuration",
		Long:    "Inspect the configuration the service would start with.",
		Example: "  consensusd config check",
		Args:    command.AnyGroupArgs,
		RunE:    command.Group,
	}
	cfg.AddCommand(&cobra.Command{
		Use:   "check",
		Short: "Print the effective configuration (secrets masked); fail on any error",
		Long: `Read every setting as the service would, print each effective value and where
it came from (environment, file, default) on stdout with secrets masked, and
print every invalid setting on stderr, one line each, naming the setting. Exit
status 1 when any setting is wrong. No database or network is touched.

Only this process's environment is read: in a second terminal it does not see
what make run sets (CONSENSUS_ENV=local, the files under .data/), and without
CONSENSUS_ENV it checks the production defaults. To check make run's own
settings, run deploy/local/run.sh check.`,
		Example: "  consensusd config check\n  deploy/local/run.sh check",
		Args:    command.NoArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			if env.Getenv("CONSENSUS_ENV") == "" {
				fmt.Fprintln(env.Stderr, "consensusd: CONSENSUS_ENV is not set, so these are the production settings, not make run's (deploy/local/run.sh check checks those)")
			}
			cfg, report := config.Inspect(env.Getenv)
			if err := report.Write(env.Stdout); err != nil {
				return err
			}
			errs := report.Errs()
			for _, w := range cfg.Warnings() {
				fmt.Fprintln(env.Stderr, "consensusd: warning: "+w)
			}
			for _, err := range errs {
				fmt.Fprintln(env.Stderr, "consensusd: "+err.Error())
			}
			if len(errs) > 0 {
				return command.ErrReported
			}
			fmt.Fprintln(env.Stderr, "consensusd: configuration ok")
			return nil
		},
	})
	root.AddCommand(migrate, cfg, workspaceCommand(env), operatorCommand(env), healthcheckCommand(env), command.Completion(root))
	return root
}
