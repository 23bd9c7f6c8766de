package consensusd

import (
	"errors"
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/consensus-md/consensus/internal/cli/command"
	"github.com/consensus-md/consensus/internal/room"
	"github.com/consensus-md/consensus/internal/venue"
)

// operatorCommand is `consensusd operator link`: the deployment's
// administrator gives an existing operator a new enrollment link, when
// theirs was used or expired or their passkeys are lost.
func operatorCommand(env Env) *cobra.Command {
	group := &cobra.Command{
		Use:   "operator COMMAND",
		Short: "Give an operator a new enrollment link (needs DATABASE_URL)",
		Long: `Manage a workspace's operators directly in the database: only DATABASE_URL (or
DATABASE_URL_FILE) and, for the link's origin, CONSENSUS_PUBLIC_ORIGIN (or
CONSENSUS_ENV=local) are read. Owners invite, change and remove operators from
the console.`,
		Example: "  consensusd operator link --workspace acme --email ops@acme.example",
		Args:    command.AnyGroupArgs,
		RunE:    command.Group,
	}
	var ws, email string
	link := &cobra.Command{
		Use:   "link --workspace NAME --email EMAIL",
		Short: "Print a new single-use enrollment link for an existing operator",
		Long: `Print a new enrollment link for the operator EMAIL of the workspace NAME, for
when their link was used or expired, or their passkeys are lost. The link works
once, within 24 hours, and registers one more passkey; the operator's unused
links are withdrawn and stop working. Passkeys already registered keep working:
remove a lost one from the console's Passkeys page once signed in. The link is
recorded in the workspace's audit log (operator.link, made by the command line).
Pending migrations are applied first.`,
		Example: "  consensusd operator link --workspace acme --email ops@acme.example",
		Args:    command.NoArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			if ws == "" || email == "" {
				return command.Usagef("--workspace and --email are required")
			}
			origin := linkOrigin(env)
			if origin == "" {
				return command.Usagef("set CONSENSUS_PUBLIC_ORIGIN (or CONSENSUS_ENV=local), the origin the link opens")
			}
			st, err := openStore(c.Context(), env)
			if err != nil {
				return err
			}
			defer st.Close()
			out, err := (&venue.Venue{Store: st, Now: time.Now, Origin: origin}).NewOperatorLink(c.Context(), ws, email)
			if err != nil {
				return flagError(err)
			}
			fmt.Fprintf(env.Stdout, "operator   %s  %s  (%s)\n", out.OperatorID, out.Email, out.Role)
			fmt.Fprintf(env.Stdout, "enroll     %s\n", out.Link)
			fmt.Fprintf(env.Stderr, "consensusd: the link works once, within 24 hours; %d unused older link(s) withdrawn\n", out.Withdrawn)
			return nil
		},
	}
	link.Flags().StringVar(&ws, "workspace", "", "the workspace's `NAME` (required)")
	link.Flags().StringVar(&email, "email", "", "the operator's `EMAIL` (required)")
	group.AddCommand(link)
	return group
}

// flagError words a validation error as the flag it names: --workspace
// or --email.
func flagError(err error) error {
	var ve *room.ValidationError
	if errors.As(err, &ve) {
		return fmt.Errorf("--%s: %s", ve.Field, ve.Reason)
	}
	return err
}
