package cli

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/consensus-md/consensus/internal/agent"
	"github.com/consensus-md/consensus/internal/config"
	"github.com/consensus-md/consensus/internal/ingest"
)

const agentUsage = `consensus agent: an invited agent's runtime. ID is the invitation id
(shown by 'consensus agent rooms'); the state directory holds one 0600 file per
claimed invitation, with its participant token.

  consensus agent watch (--imap URL | --maildir DIR) [--origin URL] [--allow-http-loopback]
                        [--exec PROGRAM] [--runtime-endpoint URL] [--until-final]
      URL is imaps://USER@HOST[:PORT]/MAILBOX (imap:// for STARTTLS, imap+plain:// for a
      loopback test server); the password comes from CONSENSUS_IMAP_PASSWORD or
      CONSENSUS_IMAP_PASSWORD_FILE, never from the URL. --origin defaults to
      https://consensus.md. PROGRAM runs directly (no shell, no arguments) after each
      claim and whenever a pending room changes, with the room JSON on stdin; it prints
      one JSON command: {"action":"comment","body":"..."}, {"action":"agree"} or
      {"action":"none"}. Its environment holds no credential.
  consensus agent rooms
  consensus agent room ID
  consensus agent comment|question|change-request ID TEXT
  consensus agent agree|disagree|abstain ID [--yes]     asks on the terminal unless --yes
  consensus agent artifact ID -o FILE                   written only if its digests match

Every command takes --state DIR (default $CONSENSUS_AGENT_STATE, else
$XDG_STATE_HOME/consensus/agent, else ~/.local/state/consensus/agent).
`

// boolFlag removes every --name from args and reports whether it was there.
func boolFlag(args []string, name string) (bool, []string) {
	var rest []string
	found := false
	for _, a := range args {
		if a == name {
			found = true
			continue
		}
		rest = append(rest, a)
	}
	return found, rest
}

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

func runAgent(args []string, env Env) error {
	if len(args) == 0 {
		return &usageError{"agent needs a subcommand: watch, rooms, room, comment, question, change-request, agree, disagree, abstain, artifact"}
	}
	sub, args := args[0], args[1:]
	if sub == "help" || sub == "-h" || sub == "--help" {
		fmt.Fprint(env.Stdout, agentUsage)
		return nil
	}
	dir, args, err := flagValue(args, "--state")
	if err != nil {
		return err
	}
	st, err := agent.OpenState(stateDir(dir, env))
	if err != nil {
		return err
	}
	log := slog.New(slog.NewTextHandler(env.Stderr, nil))
	a := &agent.Agent{State: st, Client: agent.NewClient(), Log: log}
	ctx := env.Context
	if ctx == nil {
		var stop context.CancelFunc
		ctx, stop = signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
		defer stop()
	}
	switch sub {
	case "watch":
		return agentWatch(ctx, a, args, env)
	case "rooms":
		if len(args) != 0 {
			return &usageError{"agent rooms takes no arguments"}
		}
		recs, err := st.List()
		if err != nil {
			return err
		}
		for _, r := range recs {
			fmt.Fprintf(env.Stdout, "%s  agreement %s  %q  as %q  revision %d %s\n", r.InvitationID, r.AgreementID, r.Title, r.DisplayName, r.RevisionNumber, r.RevisionDigest)
		}
		return nil
	case "room":
		if len(args) != 1 {
			return &usageError{"agent room needs ID"}
		}
		room, _, err := a.Room(ctx, args[0])
		if err != nil {
			return err
		}
		return printJSON(env.Stdout, room.Raw)
	case "comment", "question", "change-request", "change_request":
		if len(args) != 2 {
			return &usageError{"agent " + sub + " needs ID and TEXT"}
		}
		p, err := a.Post(ctx, args[0], strings.ReplaceAll(sub, "-", "_"), args[1], nil)
		if err != nil {
			return err
		}
		return printPosted(env, p)
	case "agree", "disagree", "abstain":
		yes, rest := boolFlag(args, "--yes")
		if len(rest) != 1 {
			return &usageError{"agent " + sub + " needs ID"}
		}
		confirm := func(r *agent.Room) error { return confirmDecision(env, sub, r) }
		if yes {
			confirm = nil
		}
		p, err := a.Post(ctx, rest[0], sub, "", confirm)
		if err != nil {
			return err
		}
		return printPosted(env, p)
	case "artifact":
		out, rest, err := flagValue(args, "-o", "--output")
		if err != nil {
			return err
		}
		if out == "" || len(rest) != 1 {
			return &usageError{"agent artifact needs ID and -o FILE"}
		}
		body, sum, err := a.Artifact(ctx, rest[0])
		if err != nil {
			return err
		}
		if err := writeFileAtomic(out, body); err != nil {
			return err
		}
		fmt.Fprintf(env.Stdout, "verified %s (%d bytes): sha256 %s matches Content-Digest and X-Consensus-SHA256\n", out, len(body), sum)
		return nil
	default:
		return &usageError{fmt.Sprintf("unknown agent subcommand %q", sub)}
	}
}

func printPosted(env Env, p *agent.Posted) error {
	verb := "recorded"
	if p.Replayed {
		verb = "already recorded (replayed)"
	}
	fmt.Fprintf(env.Stdout, "%s %s event %s (seq %d); outcome %s\n", verb, p.Event.Action, p.Event.ID, p.Event.Seq, p.Outcome.Status)
	return nil
}

// confirmDecision shows what is being decided and asks for "yes".
func confirmDecision(env Env, action string, r *agent.Room) error {
	var title struct {
		Title string `json:"title"`
	}
	_ = jsonUnmarshal(r.Revision.CanonicalRevision, &title)
	fmt.Fprintf(env.Stderr, "%s is final and cannot be changed.\n  agreement %s: %q\n  revision %d, digest %s\n  outcome so far: %s\nType yes to %s: ",
		action, r.AgreementID, title.Title, r.Revision.Number, r.Revision.RevisionDigest, r.Outcome.Status, action)
	if env.Stdin == nil {
		return agent.ErrDeclined
	}
	line, err := bufio.NewReader(env.Stdin).ReadString('\n')
	if err != nil && line == "" {
		return agent.ErrDeclined
	}
	if a := strings.ToLower(strings.TrimSpace(line)); a != "yes" && a != "y" {
		return agent.ErrDeclined
	}
	return nil
}

func agentWatch(ctx context.Context, a *agent.Agent, args []string, env Env) error {
	allowHTTP, args := boolFlag(args, "--allow-http-loopback")
	untilFinal, args := boolFlag(args, "--until-final")
	var imapURL, maildir, origin, program, endpoint string
	for _, f := range []struct {
		name string
		dst  *string
	}{{"--imap", &imapURL}, {"--maildir", &maildir}, {"--origin", &origin}, {"--exec", &program}, {"--runtime-endpoint", &endpoint}} {
		v, rest, err := flagValue(args, f.name)
		if err != nil {
			return err
		}
		*f.dst, args = v, rest
	}
	if len(args) != 0 {
		return &usageError{fmt.Sprintf("agent watch: unexpected %q", args[0])}
	}
	if (imapURL == "") == (maildir == "") {
		return &usageError{"agent watch needs exactly one of --imap URL and --maildir DIR"}
	}
	a.Policy = ingest.Policy{Origin: origin, AllowHTTPLoopback: allowHTTP}
	if err := a.Policy.Validate(); err != nil {
		return fmt.Errorf("--origin: %w", err)
	}
	a.RuntimeEndpoint = endpoint
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
	claimed := func(r *agent.Record) {
		fmt.Fprintf(env.Stdout, "claimed %s (agreement %s, %q, revision %d %s)\n", r.InvitationID, r.AgreementID, r.Title, r.RevisionNumber, r.RevisionDigest)
	}
	return a.Watch(ctx, agent.WatchOptions{Source: src, Exec: program, ExecStderr: env.Stderr, Claimed: claimed, UntilFinal: untilFinal})
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
