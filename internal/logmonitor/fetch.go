package logmonitor

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"

	"golang.org/x/mod/sumdb/tlog"

	"github.com/consensus-md/consensus/internal/translog"
)

// Bounds on what the monitor reads from a server.
const (
	maxCheckpoint = 64 << 10
	maxBundle     = 16 << 20
	maxDocument   = 64 << 20
	fetchWorkers  = 8
)

// fetcher reads the log over HTTP. It is the tlog.TileReader of the
// served tiles; tiles fetched once in a run are kept for the run.
type fetcher struct {
	ctx  context.Context
	http *http.Client
	base string // the service URL, without a trailing slash

	mu    sync.Mutex
	tiles map[tlog.Tile][]byte
}

func newFetcher(ctx context.Context, c *http.Client, base string) *fetcher {
	return &fetcher{ctx: ctx, http: c, base: strings.TrimRight(base, "/"), tiles: map[tlog.Tile][]byte{}}
}

// get reads url; a transport failure or a status other than 200 is an
// *UnavailableError.
func (f *fetcher) get(url string, limit int64, auth string) ([]byte, error) {
	req, err := http.NewRequestWithContext(f.ctx, http.MethodGet, url, nil)
	if err != nil {
		return nil, unavailable("GET %s: %w", url, err)
	}
	if auth != "" {
		req.Header.Set("Authorization", auth)
		req.Header.Set("Accept", "application/json")
	}
	resp, err := f.http.Do(req)
	if err != nil {
		return nil, unavailable("GET %s: %w", url, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, limit+1))
	if err != nil {
		return nil, unavailable("GET %s: %w", url, err)
	}
	if resp.StatusCode != http.StatusOK {
		return nil, unavailable("GET %s: %s", url, resp.Status)
	}
	if int64(len(b)) > limit {
		return nil, fmt.Errorf("GET %s: the answer is longer than %d bytes", url, limit)
	}
	return b, nil
}

func (f *fetcher) checkpoint() ([]byte, error) {
	return f.get(f.base+"/log/checkpoint", maxCheckpoint, "")
}

// logKey reads the log's verifier key from /.well-known/consensus-keys
// (its top-level member "log").
func (f *fetcher) logKey() (string, error) {
	b, err := f.get(f.base+"/.well-known/consensus-keys", maxCheckpoint, "")
	if err != nil {
		return "", err
	}
	var doc struct {
		Log *struct {
			VerifierKey string `json:"verifierKey"`
		} `json:"log"`
	}
	if err := json.Unmarshal(b, &doc); err != nil || doc.Log == nil || doc.Log.VerifierKey == "" {
		return "", unavailable("%s/.well-known/consensus-keys publishes no log key (member log.verifierKey)", f.base)
	}
	return doc.Log.VerifierKey, nil
}

// Height implements tlog.TileReader.
func (f *fetcher) Height() int { return translog.TileHeight }

// ReadTiles implements tlog.TileReader: it fetches the tiles not read yet
// in this run, a few at a time. A tile of the wrong length is an error
// that is not an *UnavailableError: the server answered, wrongly.
func (f *fetcher) ReadTiles(tiles []tlog.Tile) ([][]byte, error) {
	out := make([][]byte, len(tiles))
	err := f.each(len(tiles), func(i int) error {
		b, err := f.tile(tiles[i])
		out[i] = b
		return err
	})
	return out, err
}

// SaveTiles implements tlog.TileReader; the monitor keeps hashes, not
// tiles.
func (f *fetcher) SaveTiles([]tlog.Tile, [][]byte) {}

func (f *fetcher) tile(t tlog.Tile) ([]byte, error) {
	f.mu.Lock()
	b, ok := f.tiles[t]
	f.mu.Unlock()
	if ok {
		return b, nil
	}
	b, err := f.get(f.base+"/log/"+translog.TilePath(t), int64(t.W)*tlog.HashSize, "")
	if err != nil {
		return nil, err
	}
	if len(b) != t.W*tlog.HashSize {
		return nil, fmt.Errorf("the log served %s with %d bytes, not %d", translog.TilePath(t), len(b), t.W*tlog.HashSize)
	}
	f.mu.Lock()
	f.tiles[t] = b
	f.mu.Unlock()
	return b, nil
}

// bundle reads the entry bundle t (level translog.EntriesLevel), which
// must hold exactly t.W entries.
func (f *fetcher) bundle(t tlog.Tile) ([][]byte, error) {
	b, err := f.get(f.base+"/log/"+translog.TilePath(t), maxBundle, "")
	if err != nil {
		return nil, err
	}
	entries, err := translog.ParseEntryBundle(b)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", translog.TilePath(t), err)
	}
	if len(entries) != t.W {
		return nil, fmt.Errorf("%s holds %d entries, not %d", translog.TilePath(t), len(entries), t.W)
	}
	return entries, nil
}

// each runs fn(0…n-1) on a few goroutines until one fails, and returns
// the first error, preferring one that is not an *UnavailableError (a
// wrong answer says more than a missing one).
func (f *fetcher) each(n int, fn func(int) error) error {
	var (
		mu    sync.Mutex
		first error
		next  int
		wg    sync.WaitGroup
	)
	for range min(n, fetchWorkers) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				mu.Lock()
				i, stop := next, next >= n || first != nil
				next++
				mu.Unlock()
				if stop {
					return
				}
				if err := fn(i); err != nil {
					mu.Lock()
					if first == nil || (IsUnavailable(first) && !IsUnavailable(err)) {
						first = err
					}
					mu.Unlock()
				}
			}
		}()
	}
	wg.Wait()
	return first
}
