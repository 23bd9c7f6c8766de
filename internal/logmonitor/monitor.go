package logmonitor

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"golang.org/x/mod/sumdb/note"
	"golang.org/x/mod/sumdb/tlog"

	"github.com/consensus-md/consensus/internal/translog"
)

// Config is one run's input.
type Config struct {
	// URL is the service (its origin, e.g. https://consensus.md); the log
	// is under URL/log/.
	URL string
	// StatePath is the state file (see State).
	StatePath string
	// LogKey, when set, is the log's verifier key; otherwise the key
	// pinned in the state, or at the first run the one the service
	// publishes (trust on first use).
	LogKey string
	// Seen are checkpoints of this log seen elsewhere, which must be
	// consistent with the monitor's view.
	Seen []Seen
	// Witnesses whose cosignatures count; MinCosignatures of them must
	// have cosigned the log's checkpoint.
	Witnesses       []note.Verifier
	MinCosignatures int
	// Rooms to check against the log, and how recent a room's change may
	// be before its absence from the log is a failure.
	Rooms []Room
	Grace time.Duration
	// Client makes every request (nil: one with a 30 s timeout).
	Client *http.Client
}

// Seen is a checkpoint seen elsewhere: the signed note, and a name to
// report it by (its file).
type Seen struct {
	Name   string
	Signed []byte
}

// hashesPerRead bounds the leaf hashes read with one TileHashReader call.
const hashesPerRead = 64 << translog.TileHeight

type run struct {
	cfg Config
	f   *fetcher
	rep *Report
	key note.Verifier
	// keyText is the key in its signed-note form, as the state pins it.
	keyText string
	st      *State
	t       *tree
}

// Run checks the log once and returns what it found. A failed check is a
// line of the report; an error is a failure to check at all (an
// *UnavailableError for an unreadable file or an unreachable server), with
// the report of what was checked before it. The state is saved only when
// the log itself checked out: its signature, its consistency with the
// state and every new entry (the cosignatures, the other checkpoints and
// the rooms do not hold it back).
func Run(ctx context.Context, cfg Config) (*Report, error) {
	if cfg.Client == nil {
		cfg.Client = &http.Client{Timeout: 30 * time.Second}
	}
	r := &run{cfg: cfg, rep: &Report{}, f: newFetcher(ctx, cfg.Client, cfg.URL)}
	err := r.run()
	if err != nil {
		r.rep.add("monitor", Unchecked, "%v", err)
	}
	return r.rep, err
}

func (r *run) run() error {
	cfg := r.cfg
	st, hashes, err := loadState(cfg.StatePath)
	if err != nil {
		return err
	}
	if st != nil && st.URL != r.f.base {
		return unavailable("state: %s belongs to %s, not %s", cfg.StatePath, st.URL, r.f.base)
	}
	if err := r.chooseKey(st); err != nil {
		return err
	}
	old, err := r.restore(st, hashes)
	if err != nil {
		return err
	}
	// The rooms are read before the checkpoint, so that a room head older
	// than the grace period when it was read must be in the checkpoint.
	rooms := r.readRooms()
	raw, err := r.f.checkpoint()
	if err != nil {
		return err
	}
	cp, err := openCheckpoint(raw, r.key)
	if err != nil {
		r.rep.add("checkpoint", Fail, "the log's checkpoint: %v", err)
		return nil
	}
	r.rep.add("checkpoint", OK, "%d leaves, root %s, signed by %s", cp.Size, b64(cp.Root), r.key.Name())
	r.cosignatures(raw)
	ok, err := r.advance(old, cp)
	if err != nil || !ok {
		return err
	}
	if ok, err = r.entries(old.Size, cp.Size); err != nil || !ok {
		return err
	}
	if err := r.others(cp); err != nil {
		return err
	}
	r.checkRooms(rooms)
	r.st.Checkpoint, r.st.Size = string(raw), cp.Size
	if err := saveState(cfg.StatePath, r.st, r.t.leaves, old.Size); err != nil {
		return unavailable("%w", err)
	}
	return nil
}

// chooseKey settles the log key: --log-key, else the pinned one, else the
// published one (pinned from now on).
func (r *run) chooseKey(st *State) error {
	key, how := r.cfg.LogKey, "given with --log-key"
	switch {
	case key != "" && st != nil && st.LogKey != key:
		return unavailable("the log key given differs from the key %s pinned in %s; to trust another key, move the state file aside", st.LogKey, r.cfg.StatePath)
	case key == "" && st != nil:
		key, how = st.LogKey, "pinned in the state file"
	case key == "":
		var err error
		if key, err = r.f.logKey(); err != nil {
			return err
		}
		how = "read from " + r.f.base + "/.well-known/consensus-keys on this first run (trust on first use), pinned from now on"
	}
	v, err := note.NewVerifier(key)
	if err != nil {
		return unavailable("the log key %q is not an Ed25519 signed-note verifier key: %v", key, err)
	}
	r.key, r.keyText = v, key
	r.rep.add("log-key", OK, "%s (%s)", key, how)
	return nil
}

// restore rebuilds the monitor's tree from the state and checks it against
// the stored checkpoint: a state file that does not hold together is
// unreadable, not evidence against the log.
func (r *run) restore(st *State, hashes []tlog.Hash) (translog.Checkpoint, error) {
	var old translog.Checkpoint
	if st == nil {
		st = &State{Type: StateType, URL: r.f.base, Heads: map[string]Head{}}
	}
	st.LogKey = r.keyText
	r.st = st
	t, err := newTree(hashes)
	if err != nil {
		return old, unavailable("state: %v", err)
	}
	r.t = t
	if st.Checkpoint == "" {
		old.Root, err = t.root(0)
		return old, err
	}
	old, err = openCheckpoint([]byte(st.Checkpoint), r.key)
	if err == nil && old.Size != st.Size {
		err = fmt.Errorf("it counts %d leaves, its checkpoint %d", st.Size, old.Size)
	}
	if err != nil {
		return old, unavailable("state: %s: %v", r.cfg.StatePath, err)
	}
	if root, err := t.root(old.Size); err != nil || root != old.Root {
		return old, unavailable("state: the leaf hashes in %s do not make the root of its checkpoint", hashesPath(r.cfg.StatePath))
	}
	return old, nil
}

// openCheckpoint verifies a signed checkpoint with the log's key: the
// signature, the body and the origin, which must be the key's name.
func openCheckpoint(signed []byte, key note.Verifier) (translog.Checkpoint, error) {
	n, err := note.Open(signed, note.VerifierList(key))
	if err != nil {
		return translog.Checkpoint{}, fmt.Errorf("not signed by the log's key %s: %v", key.Name(), err)
	}
	c, err := translog.ParseCheckpoint(n.Text)
	if err != nil {
		return c, err
	}
	if c.Origin != key.Name() {
		return c, fmt.Errorf("its origin %q is not the log key's name %q", c.Origin, key.Name())
	}
	return c, nil
}

// cosignatures reports which of the named witnesses cosigned the log's
// checkpoint; fewer than MinCosignatures, or a cosignature line in a
// witness's name that does not verify, fails.
func (r *run) cosignatures(signed []byte) {
	if len(r.cfg.Witnesses) == 0 && r.cfg.MinCosignatures == 0 {
		return
	}
	var cosigned, bad []string
	for _, w := range r.cfg.Witnesses {
		n, err := note.Open(signed, note.VerifierList(w))
		var invalid *note.InvalidSignatureError
		switch {
		case err == nil && len(n.Sigs) > 0:
			cosigned = append(cosigned, w.Name())
		case errors.As(err, &invalid):
			bad = append(bad, w.Name())
		}
	}
	switch {
	case len(bad) > 0:
		r.rep.add("cosignatures", Fail, "the cosignature of %s does not verify", strings.Join(bad, ", "))
	case len(cosigned) < r.cfg.MinCosignatures:
		r.rep.add("cosignatures", Fail, "%d of the %d named witnesses cosigned (%s), at least %d wanted",
			len(cosigned), len(r.cfg.Witnesses), strings.Join(cosigned, ", "), r.cfg.MinCosignatures)
	default:
		r.rep.add("cosignatures", OK, "%d of the %d named witnesses cosigned (%s)", len(cosigned), len(r.cfg.Witnesses), strings.Join(cosigned, ", "))
	}
}

func b64(h tlog.Hash) string { return base64.StdEncoding.EncodeToString(h[:]) }
