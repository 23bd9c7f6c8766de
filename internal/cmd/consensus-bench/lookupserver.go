package main

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// lookupEnv, when set to a database URL, turns this program into the 304
// path's second baseline: a minimal net/http server that answers each
// request with one indexed lookup through pgx and a 304. It is the naive
// design of the service's conditional read (look the credential up, answer
// "not modified"), with none of its batching or caching.
const lookupEnv = "CONSENSUS_BENCH_LOOKUP_URL"

// lookupPoolConns is the pool the lookup server keeps: consensusd's default.
const lookupPoolConns = 16

// serveLookup serves GET /lookup with "Authorization: Bearer N": the row of
// tokens whose hash is sha256 of N as a 4-byte big-endian integer (the
// baseline table's keys), 304 when it exists, 404 otherwise.
func serveLookup(dbURL string, out io.Writer) error {
	cfg, err := pgxpool.ParseConfig(dbURL)
	if err != nil {
		return err
	}
	cfg.MaxConns = lookupPoolConns
	pool, err := pgxpool.NewWithConfig(context.Background(), cfg)
	if err != nil {
		return err
	}
	defer pool.Close()
	mux := http.NewServeMux()
	mux.HandleFunc("GET /lookup", func(w http.ResponseWriter, r *http.Request) {
		k, err := strconv.ParseUint(strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer "), 10, 32)
		if err != nil {
			http.Error(w, "bad credential", http.StatusUnauthorized)
			return
		}
		var key [4]byte
		binary.BigEndian.PutUint32(key[:], uint32(k))
		h := sha256.Sum256(key[:])
		var participant, agreement uuid.UUID
		var revoked *time.Time
		err = pool.QueryRow(r.Context(), `SELECT participant_id, agreement_id, revoked_at FROM tokens WHERE token_hash = $1`, h[:]).Scan(&participant, &agreement, &revoked)
		switch {
		case errors.Is(err, pgx.ErrNoRows) || revoked != nil:
			http.NotFound(w, r)
		case err != nil:
			http.Error(w, "database", http.StatusServiceUnavailable)
		default:
			w.Header().Set("ETag", `"`+participant.String()[:8]+`"`)
			w.WriteHeader(http.StatusNotModified)
		}
	})
	return serveBaseline(mux, out)
}

// startLookup runs this executable as the lookup server on dbURL.
func startLookup(dbURL string) (*baselineProcess, error) {
	return startBaseline(lookupEnv, dbURL, "lookup server")
}

// lookupLoad sends the tokens' keys, a random one per request.
func (b *bench) lookupLoad(name string, d time.Duration) wrkLoad {
	n := b.cfg.Agreements * b.cfg.Parts
	ts := make([]readTarget, n)
	for i := range ts {
		ts[i] = readTarget{Path: "/lookup", Auth: "Bearer " + strconv.Itoa(i+1)}
	}
	return wrkLoad{Name: name, Script: readLua(ts), BaseURL: "http://" + b.lookup.addr, Conns: b.cfg.Conns, Duration: d}
}
