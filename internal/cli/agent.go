package cli

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/consensus-md/consensus/internal/agentclient"
	"github.com/consensus-md/consensus/internal/cli/command"
	"github.com/consensus-md/consensus/internal/config"
	"github.com/consensus-md/consensus/internal/envelope"
	"github.com/consensus-md/consensus/internal/ingest"
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

// watchOptions are the flags of agent watch.
type watchOptions struct {
	imapURL, maildir, origin, program, endpoint, inbox string
	allowHTTP, untilFinal, sign, local                 bool
}

func agentWatchCommand(env Env, open openAgent) *cobra.Command {
	var o watchOptions
	c := &cobra.Command{
		Use:   "watch (--imap URL | --maildir DIR --inbox ADDRESS)",
		Short: "Read invitation emails, check, exchange, verify and claim them",
		Long: `Read invitation emails from an IMAP mailbox or a Maildir. For each: apply the
guide's five checks against the pinned --origin, exchange the secret, recompute
both digests, claim with the email proof, store the participant token, and only
then mark the email seen. It never opens invite_uri.

URL is imaps://USER@HOST[:PORT]/MAILBOX (imap:// for STARTTLS, imap+plain:// for a
loopback test server). The password comes from CONSENSUS_IMAP_PASSWORD or the file
CONSENSUS_IMAP_PASSWORD_FILE names, never from the URL.

--inbox ADDRESS is the one address this watcher serves: an invitation whose
envelope names another inbox is left alone, so several watchers can share one
Maildir (make run delivers every participant's mail into .data/mail). It is
required with --maildir. --local is for invitations from a local server (make
run): it pins --origin http://localhost:8080 (unless --origin names another)
and allows http:// on a loopback host.

A person's invitation (participant.kind human) is for a browser: watch stops
with an error before any request, saying to hand the email to that person.

Each pending claimed room is followed through its event stream (resumed with
Last-Event-ID after a disconnect), or by long polls (Prefer: wait=60) where the
stream is refused, and read at once when it changes; every room is also read
once a minute. Following stops when the outcome is final. A new revision is verified like the
first (both digests and the terms digest recomputed) and reported on stdout
with what changed. When its terms (title, objective, rules, decision rule) are
unchanged, a decision made earlier still counts and nobody is asked again; when
they changed, that decision is stale and must be made again.

PROGRAM runs directly (no shell, no arguments) after each claim and whenever a
pending room changes (except for a revision that kept the terms), with the
room JSON on stdin; it prints one JSON command:
{"action":"comment","body":"..."}, {"action":"agree"} or {"action":"none"}. Its
environment holds no credential. Choosing --exec delegates decisions to it.

With --sign each claim binds a fresh Ed25519 key (participant-binding/v2), so the
room counts this agent's decisions as its signatures: every later command, from
watch, comment or decide, carries a Consensus-Signature made with that key. The
private key stays in the state directory (keys/<invitation_id>.json, 0600).`,
		Example: `  CONSENSUS_IMAP_PASSWORD_FILE=~/.imap-password consensus agent watch --imap imaps://inbox@imap.example/INBOX
  consensus agent watch --maildir ~/Maildir --inbox release-agent@example.com --exec ./decide --until-final
  consensus agent watch --maildir .data/mail --inbox release-agent@example.com --local`,
		Args: command.NoArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			if (o.imapURL == "") == (o.maildir == "") {
				return command.Usagef("give exactly one of --imap URL and --maildir DIR")
			}
			if o.maildir != "" && o.inbox == "" {
				return command.Usagef("--maildir needs --inbox ADDRESS: a Maildir may hold other participants' invitations, and this watcher claims only its own")
			}
			if o.local {
				o.allowHTTP = true
				if !c.Flags().Changed("origin") {
					o.origin = agentclient.LocalOrigin
				}
			}
			return agentWatch(c.Context(), open, o, env)
		},
	}
	f := c.Flags()
	f.StringVar(&o.imapURL, "imap", "", "read the IMAP mailbox at `URL`")
	f.StringVar(&o.maildir, "maildir", "", "read the Maildir `DIR`")
	f.StringVar(&o.origin, "origin", envelope.DefaultOrigin, "the pinned service `ORIGIN` every invitation URL must be on")
	f.BoolVar(&o.allowHTTP, "allow-http-loopback", false, "accept an http:// origin on a loopback host (local runs; with --origin, or use --local)")
	f.BoolVar(&o.local, "local", false, "invitations from a local server (make run): --origin "+agentclient.LocalOrigin+" --allow-http-loopback")
	f.StringVar(&o.inbox, "inbox", "", "serve only invitations to `ADDRESS` (required with --maildir)")
	f.StringVar(&o.program, "exec", "", "run `PROGRAM` to decide after each claim and room change")
	f.StringVar(&o.endpoint, "runtime-endpoint", "", "the agent's runtime endpoint `URL` to bind at claim")
	f.BoolVar(&o.untilFinal, "until-final", false, "exit once every claimed room has a final outcome")
	f.BoolVar(&o.sign, "sign", false, "bind a new Ed25519 key per invitation at claim (kept 0600 under the state directory's keys/, never sent) and sign every command with it")
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

// agentWatch checks the flags, then opens the state directory and the
// mailbox and runs the agent until ctx ends (or every room is final).
func agentWatch(ctx context.Context, open openAgent, o watchOptions, env Env) error {
	imapURL, maildir, program := o.imapURL, o.maildir, o.program
	policy := envelope.Policy{Origin: o.origin, AllowHTTPLoopback: o.allowHTTP}
	if err := policy.Validate(); err != nil {
		if strings.HasPrefix(o.origin, "http://") && !o.allowHTTP {
			return fmt.Errorf("--origin: %w; an http:// origin on a loopback host also needs --allow-http-loopback (--local sets both for %s)", err, agentclient.LocalOrigin)
		}
		return fmt.Errorf("--origin: %w", err)
	}
	if program != "" {
		p, err := filepath.Abs(program)
		if err != nil {
			return err
		}
		if fi, err := os.Stat(p); err != nil || fi.IsDir() || fi.Mode()&0o111 == 0 {
			return fmt.Errorf("--exec: %s is not an executable file", program)
		}
		program = p
	}
	a, err := open()
	if err != nil {
		return err
	}
	a.Policy, a.RuntimeEndpoint, a.Sign = policy, o.endpoint, o.sign
	var src ingest.Source
	if imapURL != "" {
		cfg, err := ingest.ParseIMAPURL(imapURL)
		if err != nil {
			return fmt.Errorf("--imap: %w", err)
		}
		if cfg.Password != "" {
			return errors.New("--imap: put the password in CONSENSUS_IMAP_PASSWORD or CONSENSUS_IMAP_PASSWORD_FILE, not in the URL")
		}
		if cfg.Password, err = secretFromEnv(env, "CONSENSUS_IMAP_PASSWORD"); err != nil {
			return err
		}
		s, err := ingest.NewIMAPSource(cfg)
		if err != nil {
			return fmt.Errorf("--imap: %w", err)
		}
		src = s
	} else {
		s, err := ingest.NewMaildirSource(maildir, time.Second)
		if err != nil {
			return fmt.Errorf("--maildir: %w", err)
		}
		src = s
	}
	defer src.Close()
	claimed := func(r *agentclient.Record) {
		fmt.Fprintf(env.Stdout, "claimed %s (agreement %s, %q, revision %d %s)\n", r.InvitationID, r.AgreementID, r.Title, r.RevisionNumber, r.RevisionDigest)
	}
	revised := func(c *agentclient.RevisionChange) {
		fmt.Fprintln(env.Stdout, c.String())
		if c.TermsChanged && program == "" {
			fmt.Fprintf(env.Stdout, "  read it with 'consensus agent room %s', then decide again with 'consensus agent agree|disagree|abstain %s'\n", c.InvitationID, c.InvitationID)
		}
	}
	return a.Watch(ctx, agentclient.WatchOptions{Source: src, Exec: program, ExecStderr: env.Stderr, Claimed: claimed, Revised: revised, UntilFinal: o.untilFinal, Inbox: o.inbox})
}

// secretFromEnv reads a required secret from NAME or NAME_FILE.
func secretFromEnv(env Env, name string) (string, error) {
	v, err := config.Secret(env.Getenv, name)
	if err == nil && v == "" {
		err = fmt.Errorf("%s: required for --imap (or %s_FILE)", name, name)
	}
	return v, err
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
