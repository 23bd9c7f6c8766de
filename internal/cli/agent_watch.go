package cli

import (
	"context"
	"errors"
	"fmt"
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
