// Package logtest serves a transparency log from memory over loopback
// HTTP, as the service serves its own (C2SP tlog-tiles under /log/, the
// log key in /.well-known/consensus-keys), built from translog and
// golang.org/x/mod/sumdb/tlog; and rooms as a participant reads them. A
// test can rewrite, truncate or fork it, as a dishonest operator would.
// For tests only.
package logtest

import (
	"crypto/ed25519"
	"crypto/rand"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/mod/sumdb/tlog"

	"github.com/consensus-md/consensus/internal/translog"
)

// Origin is the origin line, and the key name, of every test log.
const Origin = "log.example/log"

// NewSigner returns a fresh log key named Origin.
func NewSigner(t testing.TB) *translog.Signer {
	t.Helper()
	_, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	s, err := translog.NewSigner(Origin, priv)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// Log is a log served over loopback HTTP.
type Log struct {
	t      testing.TB
	signer *translog.Signer
	srv    *httptest.Server

	mu      sync.Mutex
	entries [][]byte
	stored  []tlog.Hash
	signed  []byte
	served  map[int64][]byte // entries served in place of the logged ones
	rooms   map[string]room
}

type room struct {
	token string
	body  []byte
}

// New starts a log signed by signer, with no leaves yet; it stops when the
// test ends.
func New(t testing.TB, signer *translog.Signer) *Log {
	l := &Log{t: t, signer: signer, served: map[int64][]byte{}, rooms: map[string]room{}}
	l.srv = httptest.NewServer(http.HandlerFunc(l.serve))
	t.Cleanup(l.srv.Close)
	l.rebuild()
	return l
}

// URL is the service's URL.
func (l *Log) URL() string { return l.srv.URL }

// Append logs entries and signs the new checkpoint.
func (l *Log) Append(entries ...[]byte) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, e := range entries {
		hs, err := tlog.StoredHashes(int64(len(l.entries)), e, l.hashes())
		if err != nil {
			l.t.Fatal(err)
		}
		l.stored = append(l.stored, hs...)
		l.entries = append(l.entries, e)
	}
	l.sign()
}

// Rewrite replaces the entry of leaf index and rebuilds the tree, as an
// operator who rewrote history would.
func (l *Log) Rewrite(index int, entry []byte) {
	l.mu.Lock()
	l.entries[index] = entry
	l.mu.Unlock()
	l.rebuild()
}

// Truncate keeps the first n leaves only (a rollback).
func (l *Log) Truncate(n int) {
	l.mu.Lock()
	l.entries = l.entries[:n]
	l.mu.Unlock()
	l.rebuild()
}

// ServeEntry serves entry as leaf index's entry, while the tree keeps the
// hash of the logged one.
func (l *Log) ServeEntry(index int64, entry []byte) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.served[index] = entry
}

// Checkpoint is the signed checkpoint the log serves now.
func (l *Log) Checkpoint() []byte {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]byte(nil), l.signed...)
}

// Cosign adds a C2SP tlog-cosignature/v1 line by the witness name with
// priv to the checkpoint served now, and returns the witness's key as
// NAME=base64.
func (l *Log) Cosign(name string, priv ed25519.PrivateKey) string {
	l.mu.Lock()
	defer l.mu.Unlock()
	text := l.signed[:strings.LastIndex(string(l.signed), "\n\n")+1]
	pub := priv.Public().(ed25519.PublicKey)
	v, err := translog.NewVerifier(translog.CosignatureVerifierKey(name, pub))
	if err != nil {
		l.t.Fatal(err)
	}
	ts := uint64(time.Now().Unix())
	msg := append([]byte(fmt.Sprintf("cosignature/v1\ntime %d\n", ts)), text...)
	sig := binary.BigEndian.AppendUint32(nil, v.KeyHash())
	sig = binary.BigEndian.AppendUint64(sig, ts)
	sig = append(sig, ed25519.Sign(priv, msg)...)
	l.signed = translog.AddSignatureLines(l.signed, "— "+name+" "+base64.StdEncoding.EncodeToString(sig))
	return name + "=" + base64.StdEncoding.EncodeToString(pub)
}

// SetRoom serves body at path to the participant token.
func (l *Log) SetRoom(path, token string, body []byte) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.rooms[path] = room{token: token, body: body}
}

func (l *Log) rebuild() {
	l.mu.Lock()
	defer l.mu.Unlock()
	entries := l.entries
	l.entries, l.stored = nil, nil
	for _, e := range entries {
		hs, err := tlog.StoredHashes(int64(len(l.entries)), e, l.hashes())
		if err != nil {
			l.t.Fatal(err)
		}
		l.stored = append(l.stored, hs...)
		l.entries = append(l.entries, e)
	}
	l.sign()
}

func (l *Log) sign() {
	size := int64(len(l.entries))
	root, err := tlog.TreeHash(size, l.hashes())
	if err != nil {
		l.t.Fatal(err)
	}
	l.signed, err = l.signer.SignCheckpoint(translog.Checkpoint{Origin: Origin, Size: size, Root: root})
	if err != nil {
		l.t.Fatal(err)
	}
}

func (l *Log) hashes() tlog.HashReaderFunc {
	stored := l.stored
	return func(indexes []int64) ([]tlog.Hash, error) {
		out := make([]tlog.Hash, len(indexes))
		for i, x := range indexes {
			if x < 0 || x >= int64(len(stored)) {
				return nil, fmt.Errorf("no stored hash %d", x)
			}
			out[i] = stored[x]
		}
		return out, nil
	}
}

func (l *Log) serve(w http.ResponseWriter, r *http.Request) {
	l.mu.Lock()
	defer l.mu.Unlock()
	p := r.URL.Path
	switch {
	case p == "/log/checkpoint":
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		_, _ = w.Write(l.signed)
	case p == "/.well-known/consensus-keys":
		_ = json.NewEncoder(w).Encode(map[string]any{"keys": []any{}, "log": map[string]string{
			"origin": Origin, "verifierKey": l.signer.VerifierKey(), "checkpoint": l.srv.URL + "/log/checkpoint"}})
	case strings.HasPrefix(p, "/log/tile/"):
		b, ok := l.tile(strings.TrimPrefix(p, "/log/"))
		if !ok {
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Content-Type", "application/octet-stream")
		_, _ = w.Write(b)
	default:
		rm, ok := l.rooms[p]
		switch {
		case !ok:
			http.NotFound(w, r)
		case r.Header.Get("Authorization") != "Consensus-Participant "+rm.token:
			http.Error(w, "unauthorized", http.StatusUnauthorized)
		default:
			w.Header().Set("Content-Type", "application/json")
			_, _ = w.Write(rm.body)
		}
	}
}

// tile is the tile or entry bundle at path, if the tree has it.
func (l *Log) tile(path string) ([]byte, bool) {
	t, err := translog.ParseTilePath(path)
	if err != nil {
		return nil, false
	}
	size := int64(len(l.entries))
	first := t.N << translog.TileHeight
	if t.L == translog.EntriesLevel {
		if first+int64(t.W) > size {
			return nil, false
		}
		var bundle [][]byte
		for i := first; i < first+int64(t.W); i++ {
			e, ok := l.served[i]
			if !ok {
				e = l.entries[i]
			}
			bundle = append(bundle, e)
		}
		b, err := translog.EntryBundle(bundle)
		return b, err == nil
	}
	if first+int64(t.W) > size>>(t.L*translog.TileHeight) {
		return nil, false
	}
	b, err := tlog.ReadTileData(t, l.hashes())
	return b, err == nil
}
