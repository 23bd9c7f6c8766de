package cli

import (
	"bufio"
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"

	"github.com/consensus-md/consensus/internal/agentclient"
	"github.com/consensus-md/consensus/internal/cli/command"
)

// agentCommand is `consensus agent`: an invited agent's runtime. Every
// subcommand opens the state directory only when it runs.
func agentCommand(env Env) *cobra.Command {
	var state string
	open := func() (*agentclient.Agent, error) {
		st, err := agentclient.OpenState(stateDir(state, env))
		if err != nil {
			return nil, err
		}
		return &agentclient.Agent{State: st, Client: agentclient.NewClient(), Log: slog.New(slog.NewTextHandler(env.Stderr, nil))}, nil
	}
	c := &cobra.Command{
		Use:   "agent COMMAND",
		Short: "An invited agent's runtime: watch an inbox, claim, read rooms, decide",
		Long: `An invited agent's runtime. 'watch' reads invitation emails, checks them, exchanges,
verifies the digests and claims; the other commands read a claimed room, post to
it and fetch its artifact. ID is the invitation id ('consensus agent rooms' lists
them). The state directory holds one 0600 file per claimed invitation, with its
participant token.`,
		Example: `  consensus agent watch --imap imaps://inbox@imap.example/INBOX --exec ./decide
  consensus agent rooms
  consensus agent agree 0190a6b2-7c3d-7e4f-8a9b-0c1d2e3f4a5b`,
		Args: command.AnyGroupArgs,
		RunE: command.Group,
	}
	c.PersistentFlags().StringVar(&state, "state", "", "keep claimed invitations in `DIR` (default $CONSENSUS_AGENT_STATE, else $XDG_STATE_HOME/consensus/agent, else ~/.local/state/consensus/agent)")
	c.AddCommand(agentWatchCommand(env, open), agentRoomsCommand(env, open), agentRoomCommand(env, open), agentArtifactCommand(env, open))
	for _, action := range []string{"comment", "question", "change-request"} {
		c.AddCommand(agentPostCommand(env, open, action))
	}
	for _, action := range []string{"agree", "disagree", "abstain"} {
		c.AddCommand(agentDecideCommand(env, open, action))
	}
	return c
}

type openAgent func() (*agentclient.Agent, error)

func agentRoomsCommand(env Env, open openAgent) *cobra.Command {
	return &cobra.Command{
		Use:     "rooms",
		Short:   "List the claimed invitations in the state directory",
		Long:    "List the claimed invitations in the state directory: invitation id, agreement, title, display name and revision.",
		Example: "  consensus agent rooms\n  consensus agent rooms --state ./agent-state",
		Args:    command.NoArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			a, err := open()
			if err != nil {
				return err
			}
			recs, err := a.State.List()
			if err != nil {
				return err
			}
			for _, r := range recs {
				fmt.Fprintf(env.Stdout, "%s  agreement %s  %q  as %q  revision %d %s\n", r.InvitationID, r.AgreementID, r.Title, r.DisplayName, r.RevisionNumber, r.RevisionDigest)
			}
			return nil
		},
	}
}

func agentRoomCommand(env Env, open openAgent) *cobra.Command {
	return &cobra.Command{
		Use:     "room ID",
		Short:   "Print a claimed room as JSON",
		Long:    "Print the room of a claimed invitation as JSON: revision, roster, events and outcome.",
		Example: "  consensus agent room 0190a6b2-7c3d-7e4f-8a9b-0c1d2e3f4a5b | jq .outcome",
		Args:    command.Args("ID"),
		RunE: func(c *cobra.Command, args []string) error {
			a, err := open()
			if err != nil {
				return err
			}
			room, _, err := a.Room(c.Context(), args[0])
			if err != nil {
				return err
			}
			return printJSON(env.Stdout, room.Raw)
		},
	}
}

func agentPostCommand(env Env, open openAgent, action string) *cobra.Command {
	c := &cobra.Command{
		Use:     action + " ID TEXT",
		Short:   "Post a " + strings.ReplaceAll(action, "-", " ") + " to a claimed room (advisory, not a decision)",
		Long:    "Post a " + strings.ReplaceAll(action, "-", " ") + " to the room of a claimed invitation, pinned to the current revision. It is advisory: it decides nothing.",
		Example: "  consensus agent " + action + " 0190a6b2-7c3d-7e4f-8a9b-0c1d2e3f4a5b \"Rollback tested.\"",
		Args:    command.Args("ID", "TEXT"),
		RunE: func(c *cobra.Command, args []string) error {
			a, err := open()
			if err != nil {
				return err
			}
			p, err := a.Post(c.Context(), args[0], strings.ReplaceAll(action, "-", "_"), args[1], nil)
			if err != nil {
				return err
			}
			return printPosted(env, p)
		},
	}
	if action == "change-request" {
		c.Aliases = []string{"change_request"}
	}
	return c
}

func agentDecideCommand(env Env, open openAgent, action string) *cobra.Command {
	var yes bool
	c := &cobra.Command{
		Use:   action + " ID",
		Short: "Post the terminal decision " + action + " to a claimed room",
		Long: "Post the terminal decision " + action + ` to the room of a claimed invitation, pinned
to the revision digest. It is final. The command shows the revision and asks for
"yes" on the terminal unless --yes is given.`,
		Example: "  consensus agent " + action + " 0190a6b2-7c3d-7e4f-8a9b-0c1d2e3f4a5b\n  consensus agent " + action + " 0190a6b2-7c3d-7e4f-8a9b-0c1d2e3f4a5b --yes",
		Args:    command.Args("ID"),
		RunE: func(c *cobra.Command, args []string) error {
			a, err := open()
			if err != nil {
				return err
			}
			confirm := func(r *agentclient.Room) error { return confirmDecision(env, action, r) }
			if yes {
				confirm = nil
			}
			p, err := a.Post(c.Context(), args[0], action, "", confirm)
			if err != nil {
				return err
			}
			return printPosted(env, p)
		},
	}
	c.Flags().BoolVar(&yes, "yes", false, "decide without asking for confirmation")
	return c
}

func agentArtifactCommand(env Env, open openAgent) *cobra.Command {
	var out, old string
	c := &cobra.Command{
		Use:   "artifact ID --file FILE",
		Short: "Download a room's CONSENSUS.md, written only if its digests match",
		Long: `Download the CONSENSUS.md of a claimed room and write it to FILE only when its
bytes match both Content-Digest and X-Consensus-SHA256. (-o/--output, which
elsewhere names an output format, is kept here as a deprecated spelling of
--file.)`,
		Example: "  consensus agent artifact 0190a6b2-7c3d-7e4f-8a9b-0c1d2e3f4a5b --file CONSENSUS.md",
		Args:    command.Args("ID"),
		RunE: func(c *cobra.Command, args []string) error {
			if out == "" {
				out = old
			}
			if out == "" {
				return command.Usagef("missing --file FILE")
			}
			a, err := open()
			if err != nil {
				return err
			}
			body, sum, err := a.Artifact(c.Context(), args[0])
			if err != nil {
				return err
			}
			if err := writeFileAtomic(out, body); err != nil {
				return err
			}
			fmt.Fprintf(env.Stdout, "verified %s (%d bytes): sha256 %s matches Content-Digest and X-Consensus-SHA256\n", out, len(body), sum)
			return nil
		},
	}
	c.Flags().StringVar(&out, "file", "", "write the verified artifact to `FILE` (required)")
	c.Flags().StringVarP(&old, "output", "o", "", "the same as --file `FILE`")
	_ = c.Flags().MarkDeprecated("output", "use --file FILE (-o names an output format in the other commands)")
	c.Flags().SetOutput(env.Stderr) // where the deprecation notice goes
	return c
}

// stateDir is --state, else $CONSENSUS_AGENT_STATE, else
// $XDG_STATE_HOME/consensus/agent, else ~/.local/state/consensus/agent.
func stateDir(flag string, env Env) string {
	if flag != "" {
		return flag
	}
	if d := env.Getenv("CONSENSUS_AGENT_STATE"); d != "" {
		return d
	}
	if d := env.Getenv("XDG_STATE_HOME"); d != "" {
		return filepath.Join(d, "consensus", "agent")
	}
	home, err := os.UserHomeDir()
	if err != nil {
		return ".consensus-agent"
	}
	return filepath.Join(home, ".local", "state", "consensus", "agent")
}

func printPosted(env Env, p *agentclient.Posted) error {
	verb := "recorded"
	if p.Replayed {
		verb = "already recorded (replayed)"
	}
	fmt.Fprintf(env.Stdout, "%s %s event %s (seq %d); outcome %s\n", verb, p.Event.Action, p.Event.ID, p.Event.Seq, p.Outcome.Status)
	return nil
}

// confirmDecision shows what is being decided and asks for "yes".
func confirmDecision(env Env, action string, r *agentclient.Room) error {
	var title struct {
		Title string `json:"title"`
	}
	_ = json.Unmarshal(r.Revision.CanonicalRevision, &title)
	fmt.Fprintf(env.Stderr, "%s is final and cannot be changed.\n  agreement %s: %q\n  revision %d, digest %s\n  outcome so far: %s\nType yes to %s: ",
		action, r.AgreementID, title.Title, r.Revision.Number, r.Revision.RevisionDigest, r.Outcome.Status, action)
	if env.Stdin == nil {
		return agentclient.ErrDeclined
	}
	line, err := bufio.NewReader(env.Stdin).ReadString('\n')
	if err != nil && line == "" {
		return agentclient.ErrDeclined
	}
	if a := strings.ToLower(strings.TrimSpace(line)); a != "yes" && a != "y" {
		return agentclient.ErrDeclined
	}
	return nil
}

// writeFileAtomic writes b to path through a temporary file and a rename,
// so a partial file never carries the final name.
func writeFileAtomic(path string, b []byte) error {
	f, err := os.CreateTemp(filepath.Dir(path), ".consensus-artifact-*")
	if err != nil {
		return err
	}
	defer os.Remove(f.Name())
	if _, err := f.Write(b); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	if err := os.Chmod(f.Name(), 0o644); err != nil {
		return err
	}
	return os.Rename(f.Name(), path)
}
