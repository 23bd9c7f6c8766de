package consensusd

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/consensus-md/consensus/internal/cli/command"
	"github.com/consensus-md/consensus/internal/config"
	"github.com/consensus-md/consensus/internal/room"
	"github.com/consensus-md/consensus/internal/secret"
	"github.com/consensus-md/consensus/internal/store"
	"github.com/consensus-md/consensus/internal/venue"
)

// workspaceCommand is `consensusd workspace create` and `list`: the
// deployment's administrator (whoever holds DATABASE_URL) creates a
// workspace and its first owner, and lists the workspaces.
func workspaceCommand(env Env) *cobra.Command {
	group := &cobra.Command{
		Use:   "workspace COMMAND",
		Short: "Create and list workspaces (needs DATABASE_URL)",
		Long: `Manage the deployment's workspaces directly in the database: only DATABASE_URL
(or DATABASE_URL_FILE) is read. Every agreement, API key, operator and audit
entry belongs to one workspace; the workspace named default holds the
agreements made before workspaces existed and is the one the bootstrap
CONSENSUS_OPERATOR_TOKEN acts in.`,
		Example: "  consensusd workspace create --name acme --owner-email ops@acme.example --key deploy\n  consensusd workspace list",
		Args:    command.AnyGroupArgs,
		RunE:    command.Group,
	}
	var name, owner, key string
	var printLink bool
	create := &cobra.Command{
		Use:   "create --name NAME --owner-email EMAIL [--key KEY_NAME]",
		Short: "Create a workspace with its first owner, and optionally an owner API key",
		Long: `Create a workspace named NAME whose first owner (an operator with the role
owner) is EMAIL, applying pending migrations first. With --key, also create an
owner API key named KEY_NAME holding every scope, and print its token once:
it is stored only as a hash and cannot be shown again. The creation is the
first entries of the workspace's audit log, made by the command line.

The owner signs in to the web console (/console/) with a passkey, which an
enrollment link registers: it works once, within 24 hours. The link is
emailed to the owner through the service's durable mail queue when
CONSENSUS_TOKEN_KEY and CONSENSUS_PUBLIC_ORIGIN are set (the running service
sends it); --print-link prints it instead (for a local run), which needs
CONSENSUS_PUBLIC_ORIGIN (or CONSENSUS_ENV=local). Without either, no link is
made: an owner can invite more operators from the console, or use --key.`,
		Example: `  consensusd workspace create --name acme --owner-email ops@acme.example
  consensusd workspace create --name ci --owner-email ci@acme.example --key bootstrap > ci.txt`,
		Args: command.NoArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			if name == "" || owner == "" {
				return command.Usagef("--name and --owner-email are required")
			}
			origin := linkOrigin(env)
			link := venue.LinkNone
			var keys *secret.Keys
			switch {
			case printLink && origin == "":
				return command.Usagef("--print-link: set CONSENSUS_PUBLIC_ORIGIN (or CONSENSUS_ENV=local), the origin the link opens")
			case printLink:
				link = venue.LinkPrint
			case origin != "" && env.Getenv("CONSENSUS_TOKEN_KEY") != "":
				raw, err := config.TokenKey(env.Getenv)
				if err != nil {
					return err
				}
				k, err := secret.DeriveKeys(raw)
				if err != nil {
					return fmt.Errorf("CONSENSUS_TOKEN_KEY: %w", err)
				}
				keys, link = k, venue.LinkEmail
			}
			st, err := openStore(c.Context(), env)
			if err != nil {
				return err
			}
			defer st.Close()
			v := &venue.Venue{Store: st, Now: time.Now, Origin: origin, Keys: keys}
			out, err := v.CreateWorkspace(c.Context(), venue.NewWorkspace{Name: name, OwnerEmail: owner, KeyName: key, Link: link})
			if errors.Is(err, room.ErrConflict) {
				return fmt.Errorf("--name: a workspace named %q exists already", name)
			}
			if err != nil {
				return err
			}
			fmt.Fprintf(env.Stdout, "workspace  %s  %s\n", out.WorkspaceID, name)
			fmt.Fprintf(env.Stdout, "owner      %s  (operator %s)\n", out.OwnerEmail, out.OperatorID)
			switch {
			case out.EnrollmentLink != "":
				fmt.Fprintf(env.Stdout, "enroll     %s\n", out.EnrollmentLink)
				fmt.Fprintln(env.Stderr, "consensusd: the enrollment link works once, within 24 hours: open it in the owner's browser to register a passkey")
			case out.EnrollmentQueued:
				fmt.Fprintf(env.Stdout, "enroll     emailed to %s (the running service sends it)\n", out.OwnerEmail)
			default:
				fmt.Fprintln(env.Stderr, "consensusd: no enrollment link was made: set CONSENSUS_TOKEN_KEY and CONSENSUS_PUBLIC_ORIGIN to email one, or use --print-link")
			}
			if out.KeyToken != "" {
				fmt.Fprintf(env.Stdout, "key        %s  %s  (every scope)\n", out.KeyID, key)
				fmt.Fprintf(env.Stdout, "token      %s\n", out.KeyToken)
				fmt.Fprintln(env.Stderr, "consensusd: the token is shown this once; store it now (Authorization: Bearer <token>)")
			}
			return nil
		},
	}
	create.Flags().StringVar(&name, "name", "", "the workspace's `NAME`, unique in the deployment (required)")
	create.Flags().StringVar(&owner, "owner-email", "", "the first owner's `EMAIL` (required)")
	create.Flags().StringVar(&key, "key", "", "also create an owner API key named `KEY_NAME` and print its token once")
	create.Flags().BoolVar(&printLink, "print-link", false, "print the owner's enrollment link instead of emailing it")
	group.AddCommand(create, workspaceListCommand(env))
	return group
}

// linkOrigin is the origin an enrollment link opens: CONSENSUS_PUBLIC_ORIGIN,
// else a local run's own (config.LocalOrigin), else "".
func linkOrigin(env Env) string {
	origin := strings.TrimRight(env.Getenv("CONSENSUS_PUBLIC_ORIGIN"), "/")
	if origin == "" && env.Getenv("CONSENSUS_ENV") == config.EnvLocal {
		listen, _ := config.Lookup(env.Getenv, "CONSENSUS_LISTEN")
		origin = config.LocalOrigin(listen)
	}
	return origin
}

// openStore migrates the database DATABASE_URL names and opens it.
func openStore(ctx context.Context, env Env) (*store.Store, error) {
	url, err := config.Lookup(env.Getenv, "DATABASE_URL")
	if err != nil {
		return nil, err
	}
	if err := store.Migrate(ctx, url); err != nil {
		return nil, err
	}
	return store.Open(ctx, url)
}

func workspaceListCommand(env Env) *cobra.Command {
	return &cobra.Command{
		Use:   "list",
		Short: "List the workspaces, oldest first, with their operators and agreements counted",
		Long: `List every workspace of the deployment, oldest first: its id, name, creation
time, present operators and agreements. Pending migrations are applied first.`,
		Example: "  consensusd workspace list",
		Args:    command.NoArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			st, err := openStore(c.Context(), env)
			if err != nil {
				return err
			}
			defer st.Close()
			list, err := (&venue.Venue{Store: st, Now: time.Now}).ListWorkspaces(c.Context())
			if err != nil {
				return err
			}
			tw := tabwriter.NewWriter(env.Stdout, 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "ID\tNAME\tCREATED\tOPERATORS\tAGREEMENTS")
			for _, w := range list {
				fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%d\n", w.ID, w.Name, w.CreatedAt.UTC().Format(time.RFC3339), w.Operators, w.Agreements)
			}
			return tw.Flush()
		},
	}
}
