package cli

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"golang.org/x/mod/sumdb/note"

	"github.com/consensus-md/consensus/internal/cli/command"
	"github.com/consensus-md/consensus/internal/logmonitor"
	"github.com/consensus-md/consensus/internal/translog"
)

func logCommand(env Env) *cobra.Command {
	c := &cobra.Command{
		Use:   "log COMMAND",
		Short: "Watch the service's transparency log from outside",
		Long: `Watch the transparency log a Consensus service keeps of its rooms (every
revision locked, every room head, every final record; SPEC §21): check that it
only grows, that everyone is shown the same log, and that the rooms you can read
are in it.`,
		Example: `  consensus log monitor https://consensus.md --state /var/lib/consensus-monitor/state.json`,
		Args:    command.AnyGroupArgs,
		RunE:    command.Group,
	}
	c.AddCommand(logMonitorCommand(env))
	return c
}

// monitorFlags are the flags of log monitor.
type monitorFlags struct {
	state, logKey, rooms string
	checkpoints, witness []string
	witnesses            int
	grace, timeout       time.Duration
}

func logMonitorCommand(env Env) *cobra.Command {
	var f monitorFlags
	c := &cobra.Command{
		Use:   "monitor URL --state FILE [--log-key VKEY] [--checkpoint FILE]... [--witness NAME=KEY]... [--rooms FILE]",
		Short: "Check once that the log only grew, shows one history, and holds your rooms",
		Long: `Check the transparency log of the service at URL once, and keep what it
verified in the state file (--state, JSON, written atomically, with the leaf
hashes beside it in FILE.hashes, 32 bytes a leaf), so that the next run can
compare. Run it from cron.

Each run fetches URL/log/checkpoint and checks the log's signature with the
log's key: --log-key, else the key pinned in the state, else, on the first
run, the key URL/.well-known/consensus-keys publishes (trust on first use;
pinned from then on). Against the checkpoint accepted before: fewer leaves is
a rollback, the same number with another root a rewritten log or a split
view, more leaves must keep the old tree as their prefix (a consistency proof
from the served tiles, and the root recomputed from the leaf hashes the
monitor keeps and the new ones). An inconsistency names the first leaf index
whose served hash differs from the one the monitor verified. Every new entry
must hash to its leaf and be a canonical consensus-log-leaf/v1, and a room's
logged head must only move forward.

--witness NAME=KEY (repeatable) names witnesses whose cosignatures count;
--witnesses N of them must have cosigned (default: all named).
--checkpoint FILE (repeatable) is a checkpoint of this log seen elsewhere
(another client's, a witness's): it must carry the log's signature and be
consistent with what the monitor sees; two different trees of one size are a
split view. --rooms FILE lists rooms you can read, one "ROOM_URL TOKEN" a line
(your participant room URL and participant token; # starts a comment): each
room's head (last seq and chainHead) must be the latest head the log holds for
its agreement; a head that changed less than --grace before the room was read
is reported pending.

One line per check ("ok", "FAIL", "pending", "unchecked"), then "ok" or
"FAIL: " and what failed. The state moves on only when the log itself checked
out. Exit status: 0 everything checked out; 1 a check failed: the log is
inconsistent, or a room is not in it as shown (an alert: keep the state and the
output as evidence); 3 nothing inconsistent was found but something could not
be checked (the server did not answer, a file could not be read).`,
		Example: `  consensus log monitor https://consensus.md --state monitor.json
  consensus log monitor https://consensus.md --state monitor.json --witness witness.example=BASE64KEY --checkpoint witness-checkpoint.txt
  consensus log monitor https://consensus.md --state monitor.json --rooms rooms.txt --grace 30s`,
		Args: command.Args("URL"),
		RunE: func(c *cobra.Command, args []string) error {
			if f.state == "" {
				return command.Usagef("give --state FILE, where the monitor keeps what it verified")
			}
			return logMonitor(c.Context(), args[0], f, env)
		},
	}
	fl := c.Flags()
	fl.StringVar(&f.state, "state", "", "the state `FILE` (created on the first run; FILE.hashes beside it)")
	fl.StringVar(&f.logKey, "log-key", "", "the log's signed-note verifier `VKEY` (default: pinned in the state, or published by the service on the first run)")
	fl.StringArrayVar(&f.checkpoints, "checkpoint", nil, "a signed checkpoint `FILE` of this log seen elsewhere (repeatable)")
	fl.StringArrayVar(&f.witness, "witness", nil, "a witness whose cosignature counts, `NAME=KEY` (base64 Ed25519 key) or a verifier key (repeatable)")
	fl.IntVar(&f.witnesses, "witnesses", -1, "how many of the named witnesses must have cosigned, `N` (default: all)")
	fl.StringVar(&f.rooms, "rooms", "", "a `FILE` of rooms to check, one \"ROOM_URL TOKEN\" a line")
	fl.DurationVar(&f.grace, "grace", 10*time.Second, "how long after a room's head changed it may still be missing from the log")
	fl.DurationVar(&f.timeout, "timeout", 30*time.Second, "the longest one request may take")
	return c
}

// logMonitor runs the monitor once, prints its report and maps it to the
// exit status.
func logMonitor(ctx context.Context, rawURL string, f monitorFlags, env Env) error {
	u, err := url.Parse(rawURL)
	if err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" || u.RawQuery != "" {
		return command.Usagef("URL: want the service's http(s) URL, such as https://consensus.md")
	}
	cfg := logmonitor.Config{URL: strings.TrimRight(rawURL, "/"), StatePath: f.state, LogKey: f.logKey,
		Grace: f.grace, Client: &http.Client{Timeout: f.timeout}}
	for _, w := range f.witness {
		v, err := translog.WitnessKey(w)
		if err != nil {
			return command.Usagef("--witness: %v", err)
		}
		cfg.Witnesses = append(cfg.Witnesses, v)
	}
	cfg.MinCosignatures = f.witnesses
	if f.witnesses < 0 {
		cfg.MinCosignatures = len(cfg.Witnesses)
	} else if f.witnesses > len(cfg.Witnesses) {
		return command.Usagef("--witnesses %d: only %d witnesses named with --witness", f.witnesses, len(cfg.Witnesses))
	}
	for _, file := range f.checkpoints {
		b, err := os.ReadFile(file)
		if err != nil {
			return unreadable(err)
		}
		cfg.Seen = append(cfg.Seen, logmonitor.Seen{Name: file, Signed: b})
	}
	if f.rooms != "" {
		b, err := os.ReadFile(f.rooms)
		if err != nil {
			return unreadable(err)
		}
		if cfg.Rooms, err = logmonitor.ParseRooms(b); err != nil {
			return unreadable(fmt.Errorf("%s: %w", f.rooms, err))
		}
	}
	if f.logKey != "" {
		if _, err := note.NewVerifier(f.logKey); err != nil {
			return command.Usagef("--log-key: not a signed-note verifier key: %v", err)
		}
	}
	rep, err := logmonitor.Run(ctx, cfg)
	if werr := rep.Write(env.Stdout); werr != nil {
		return werr
	}
	switch {
	case len(rep.Failed()) > 0:
		return errors.New("the log does not check out: " + strings.Join(rep.Failed(), ", ") + " failed")
	case err != nil && logmonitor.IsUnavailable(err):
		return unreadable(fmt.Errorf("nothing inconsistent found, but the check did not finish: %w", err))
	case err != nil:
		return err
	case len(rep.Unchecked()) > 0:
		return unreadable(errors.New("nothing inconsistent found, but not everything was checked: " + strings.Join(rep.Unchecked(), ", ")))
	}
	return nil
}
