package logmonitor

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"

	"golang.org/x/mod/sumdb/tlog"
)

// StateType is the type member of the state file.
const StateType = "consensus-log-monitor-state/v1"

// State is what the monitor keeps between runs, in the JSON file named by
// --state. The leaf hashes it verified live beside it, in FILE.hashes: 32
// bytes per leaf, in leaf order, of which the first Size×32 bytes count
// (a run appends the new hashes there before it renames the new JSON into
// place, so a run that dies between the two leaves extra bytes that the
// next run ignores and overwrites).
type State struct {
	Type string `json:"type"`
	// URL is the service the state belongs to.
	URL string `json:"url"`
	// LogKey is the log's verifier key, pinned at the first run.
	LogKey string `json:"logKey"`
	// Checkpoint is the last accepted checkpoint, the signed note as
	// served (cosignature lines included); empty before the first run.
	Checkpoint string `json:"checkpoint"`
	// Size is the checkpoint's tree size: how many hashes count in
	// FILE.hashes.
	Size int64 `json:"size"`
	// Heads is, per agreement id, the latest head the log holds for it (its
	// last head or record leaf).
	Heads map[string]Head `json:"heads"`
}

// Head is an agreement's latest head in the log.
type Head struct {
	Index     int64  `json:"index"`
	Kind      string `json:"kind"`
	Seq       int64  `json:"seq"`
	ChainHead string `json:"chainHead"`
	At        string `json:"at"`
}

// hashesPath is the sidecar file of the leaf hashes.
func hashesPath(statePath string) string { return statePath + ".hashes" }

// loadState reads the state file and its leaf hashes; a missing state file
// is a first run (nil state, no error).
func loadState(path string) (*State, []tlog.Hash, error) {
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil, nil
	}
	if err != nil {
		return nil, nil, unavailable("state: %w", err)
	}
	var st State
	d := json.NewDecoder(bytes.NewReader(b))
	d.DisallowUnknownFields()
	if err := d.Decode(&st); err != nil || st.Type != StateType || st.Size < 0 {
		return nil, nil, unavailable("state: %s is not a %s file", path, StateType)
	}
	if st.Heads == nil {
		st.Heads = map[string]Head{}
	}
	f, err := os.Open(hashesPath(path))
	if err != nil {
		return nil, nil, unavailable("state: %w", err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, nil, unavailable("state: %w", err)
	}
	if fi.Size()/tlog.HashSize < st.Size {
		return nil, nil, unavailable("state: %s holds fewer than the %d leaf hashes the state counts", hashesPath(path), st.Size)
	}
	raw := make([]byte, st.Size*tlog.HashSize)
	if _, err := io.ReadFull(f, raw); err != nil {
		return nil, nil, unavailable("state: %s holds fewer than the %d leaf hashes the state counts", hashesPath(path), st.Size)
	}
	hashes := make([]tlog.Hash, st.Size)
	for i := range hashes {
		copy(hashes[i][:], raw[i*tlog.HashSize:])
	}
	return &st, hashes, nil
}

// saveState writes the hashes from index from on (those before are on disk
// already) and then the JSON, atomically: a temporary file renamed over
// the old one, so a reader sees the old state or the new, never a mixture.
func saveState(path string, st *State, hashes []tlog.Hash, from int64) error {
	if err := writeHashes(hashesPath(path), hashes, from); err != nil {
		return fmt.Errorf("state: %w", err)
	}
	b, err := json.MarshalIndent(st, "", "  ")
	if err != nil {
		return err
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), filepath.Base(path)+".tmp*")
	if err != nil {
		return fmt.Errorf("state: %w", err)
	}
	defer os.Remove(tmp.Name()) // after a successful rename there is nothing to remove
	if _, err := tmp.Write(append(b, '\n')); err != nil {
		tmp.Close()
		return fmt.Errorf("state: %w", err)
	}
	if err := tmp.Sync(); err != nil {
		tmp.Close()
		return fmt.Errorf("state: %w", err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("state: %w", err)
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return fmt.Errorf("state: %w", err)
	}
	return nil
}

// writeHashes writes hashes[from:] at their place in the sidecar file,
// cutting off whatever a dead run left beyond it, and syncs.
func writeHashes(path string, hashes []tlog.Hash, from int64) error {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return err
	}
	buf := make([]byte, 0, (int64(len(hashes))-from)*tlog.HashSize)
	for _, h := range hashes[from:] {
		buf = append(buf, h[:]...)
	}
	_, err = f.WriteAt(buf, from*tlog.HashSize)
	if err == nil {
		err = f.Truncate(int64(len(hashes)) * tlog.HashSize)
	}
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}
