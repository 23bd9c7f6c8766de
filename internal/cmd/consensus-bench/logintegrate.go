package main

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"golang.org/x/mod/sumdb/tlog"

	"github.com/consensus-md/consensus/internal/roomnotify"
)

// integrationResult is the log integrator's throughput: cfg.LogRooms
// rooms written straight into the service's tables (the scale loader),
// then announced as a replica announces the rooms its commits changed;
// timed until /log/checkpoint holds their leaves.
type integrationResult struct {
	rooms      int
	load       scaleResult
	sizeBefore int64         // before the load
	sizeAtT0   int64         // when the announcements were sent (a periodic full integration may have taken some during the load)
	leaves     int64         // leaves the log gained over the timed window
	total      int64         // leaves the log gained from the load
	hashes     int64         // stored hashes the load's leaves added
	leafBytes  float64       // mean leaf size
	took       time.Duration // announcements sent → the checkpoint holding every leaf
	svcCPU     time.Duration // consensusd's CPU over that time
	pgCPU      time.Duration // the PostgreSQL cluster's
	base       time.Duration // the baseline: the same rows by INSERT … SELECT
	// steps are the checkpoint's sizes as the polls saw them change: one
	// per integration (a transaction of at most venue.LogIntegrationMax
	// rooms), when each became visible.
	steps []sizeStep
}

type sizeStep struct {
	at   time.Duration // since the announcements
	size int64
}

// leavesPerRoom: a loaded room is at revision 1 with an event, so the log
// gains its revision and its head.
const leavesPerRoom = 2

// logSeed is the scale generator's seed for the log step's rooms: other
// rows than the scale phase's (seed 1), so both can be in one database.
const logSeed = 44

func (b *bench) integrationThroughput(ctx context.Context) (*integrationResult, error) {
	cfg := b.cfg
	r := &integrationResult{rooms: cfg.LogRooms}
	var err error
	if r.sizeBefore, err = b.checkpointSize(ctx); err != nil {
		return nil, err
	}
	// One participant and one event a room: what the integrator reads of
	// a room does not grow with them, and the load is shorter.
	// One transaction: the rooms appear at once, so the integrations that
	// run every 30 s over every room cannot take some while they load.
	spec := scaleSpec{Agreements: cfg.LogRooms, Parts: 1, Events: 1, Workspaces: 1, Seed: logSeed,
		Workers: 1, Chunk: cfg.LogRooms, Origin: b.svc.origin, TokenKey: b.svc.key, Now: time.Now()}
	cfg.logf("== log: integration of %s rooms (%s leaves) written into the tables; the log holds %d leaves", thousands(float64(cfg.LogRooms)), thousands(float64(cfg.LogRooms*leavesPerRoom)), r.sizeBefore)
	if r.load, err = loadScale(ctx, b.cl.appURL(serviceDB), spec, io.Discard); err != nil {
		return nil, err
	}
	cfg.logf("   %s rows in %s, one transaction", thousands(float64(r.load.Rows)), r.load.Took.Round(100*time.Millisecond))
	// As after the scale load: statistics of the new rows, and no
	// checkpoint left for the integration to pay.
	admin, err := pgx.Connect(ctx, b.cl.url(serviceDB))
	if err != nil {
		return nil, err
	}
	defer admin.Close(context.WithoutCancel(ctx))
	if _, err := admin.Exec(ctx, "ANALYZE"); err != nil {
		return nil, fmt.Errorf("ANALYZE: %w", err)
	}
	if err := b.cl.checkpoint(ctx); err != nil {
		return nil, err
	}
	want := r.sizeBefore + int64(cfg.LogRooms*leavesPerRoom)
	ids := make([]uuid.UUID, cfg.LogRooms)
	for i := range ids {
		a, err := spec.agreement(i, nil)
		if err != nil {
			return nil, err
		}
		ids[i] = a.ID
	}
	if r.sizeAtT0, err = b.checkpointSize(ctx); err != nil {
		return nil, err
	}
	// Profiles over the expected time at the target's rate (and a second).
	prof := b.startProfiles(ctx, "log-integrate", int(float64(want-r.sizeAtT0)/targetLeavesPerSec)+2)
	svcBefore, pgBefore := procCPU(b.svc.pid), b.cl.cpu()
	began := time.Now()
	if err := announce(ctx, admin, ids); err != nil {
		return nil, err
	}
	size := int64(0)
	var readErr error
	last := r.sizeAtT0
	err = waitUntil(ctx, 5*time.Minute, func() bool {
		size, readErr = b.checkpointSize(ctx)
		if readErr == nil && size != last {
			r.steps = append(r.steps, sizeStep{at: time.Since(began), size: size})
			last = size
		}
		return readErr != nil || size >= want
	})
	if err == nil {
		err = readErr
	}
	r.took = time.Since(began)
	r.svcCPU, r.pgCPU = procCPU(b.svc.pid)-svcBefore, b.cl.cpu()-pgBefore
	if err != nil {
		return nil, fmt.Errorf("the log did not reach %d leaves (it holds %d): %w", want, size, err)
	}
	if err := prof.wait(); err != nil {
		b.note("profile of the log's integration failed: %v", err)
	}
	r.leaves, r.total = size-r.sizeAtT0, size-r.sizeBefore
	r.hashes = tlog.StoredHashCount(size) - tlog.StoredHashCount(r.sizeBefore)
	if err := admin.QueryRow(ctx, "SELECT avg(octet_length(body))::float8 FROM log_leaves WHERE idx >= $1", r.sizeBefore).Scan(&r.leafBytes); err != nil {
		return nil, err
	}
	cfg.logf("   %d leaves in %s from the announcements (%d more integrated during the load): %s leaves/s", r.leaves, r.took.Round(time.Millisecond), r.sizeAtT0-r.sizeBefore, thousands(r.rate()))
	if r.base, err = b.integrationBaseline(ctx, r); err != nil {
		return nil, err
	}
	cfg.logf("   baseline: the same rows by INSERT … SELECT in %s: %s leaves/s", r.base.Round(time.Millisecond), thousands(r.baseRate()))
	return r, nil
}

// rate is leaves a second over the timed window.
func (r *integrationResult) rate() float64 { return float64(r.leaves) / r.took.Seconds() }

// baseRate is the baseline's leaves a second.
func (r *integrationResult) baseRate() float64 { return float64(r.total) / r.base.Seconds() }

// announce tells the replicas that the rooms ids changed, as a replica
// does after its commits (roomnotify): comma-separated ids on the
// channel, payloads under PostgreSQL's 8,000 bytes.
func announce(ctx context.Context, c *pgx.Conn, ids []uuid.UUID) error {
	var payloads []string
	for len(ids) > 0 {
		n := min(len(ids), 200) // 200 × 37 bytes
		parts := make([]string, n)
		for i, id := range ids[:n] {
			parts[i] = id.String()
		}
		payloads = append(payloads, strings.Join(parts, ","))
		ids = ids[n:]
	}
	_, err := c.Exec(ctx, "SELECT pg_notify($1, p) FROM unnest($2::text[]) AS p", roomnotify.Channel, payloads)
	return err
}

// checkpointSize reads the tree size of the service's /log/checkpoint
// (0 before its first checkpoint).
func (b *bench) checkpointSize(ctx context.Context) (int64, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, b.svc.origin+"/log/checkpoint", nil)
	if err != nil {
		return 0, err
	}
	resp, err := b.http.Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return 0, err
	}
	if resp.StatusCode == http.StatusNotFound {
		return 0, nil
	}
	lines := strings.SplitN(string(body), "\n", 3)
	if resp.StatusCode != http.StatusOK || len(lines) < 3 {
		return 0, fmt.Errorf("GET /log/checkpoint: %d %.200s", resp.StatusCode, body)
	}
	return strconv.ParseInt(lines[1], 10, 64)
}

// integrationBaseline writes, in one transaction on the baseline database,
// what the integration wrote: as many leaves of the same mean size, the
// same number of stored hashes, a log_rooms row per room, into tables with
// the log's columns and keys, each by one INSERT … SELECT. What it leaves
// out (reading the rooms, hashing, signing) is the integrator's own work.
func (b *bench) integrationBaseline(ctx context.Context, r *integrationResult) (time.Duration, error) {
	c, err := pgx.Connect(ctx, b.cl.url(baselineDB))
	if err != nil {
		return 0, err
	}
	defer c.Close(context.WithoutCancel(ctx))
	for _, q := range []string{
		`DROP TABLE IF EXISTS bl_log_leaves, bl_log_hashes, bl_log_rooms`,
		`CREATE TABLE bl_log_leaves (idx bigint PRIMARY KEY CHECK (idx >= 0), agreement_id uuid NOT NULL, kind text NOT NULL, body bytea NOT NULL)`,
		`CREATE INDEX bl_log_leaves_agreement_idx ON bl_log_leaves (agreement_id, kind, idx)`,
		`CREATE TABLE bl_log_hashes (idx bigint PRIMARY KEY CHECK (idx >= 0), hash bytea NOT NULL CHECK (length(hash) = 32))`,
		`CREATE TABLE bl_log_rooms (agreement_id uuid PRIMARY KEY, revision integer NOT NULL, seq bigint NOT NULL, head_hash text NOT NULL, record boolean NOT NULL)`,
		`CHECKPOINT`,
	} {
		if _, err := c.Exec(ctx, q); err != nil {
			return 0, fmt.Errorf("integration baseline: %s: %w", q, err)
		}
	}
	t := time.Now()
	tx, err := c.Begin(ctx)
	if err != nil {
		return 0, err
	}
	defer tx.Rollback(context.WithoutCancel(ctx))
	// Room n's id is md5(n) as a uuid; its leaves are 2n and 2n+1.
	if _, err := tx.Exec(ctx, `INSERT INTO bl_log_leaves (idx, agreement_id, kind, body)
		SELECT g, md5((g / 2)::text)::uuid, CASE WHEN g % 2 = 0 THEN 'revision' ELSE 'head' END,
		       convert_to(rpad(g::text, $2, 'x'), 'UTF8')
		FROM generate_series(0, $1 - 1) g`, r.total, int(r.leafBytes+0.5)); err != nil {
		return 0, err
	}
	if _, err := tx.Exec(ctx, `INSERT INTO bl_log_hashes (idx, hash) SELECT g, sha256(int8send(g)) FROM generate_series(0, $1 - 1) g`, r.hashes); err != nil {
		return 0, err
	}
	if _, err := tx.Exec(ctx, `INSERT INTO bl_log_rooms (agreement_id, revision, seq, head_hash, record)
		SELECT md5(g::text)::uuid, 1, 10, encode(sha256(int8send(g)), 'hex'), false FROM generate_series(0, $1 - 1) g`, r.rooms); err != nil {
		return 0, err
	}
	if err := tx.Commit(ctx); err != nil {
		return 0, err
	}
	took := time.Since(t)
	_, err = c.Exec(ctx, `DROP TABLE bl_log_leaves, bl_log_hashes, bl_log_rooms`)
	return took, err
}
