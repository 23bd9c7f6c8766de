package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/consensus-md/consensus/internal/secret"
)

// The scale load's writer: parallel COPY of the generated rows into
// staging tables, moved into the service's tables under row-level security.

var (
	scaleAgreementCols  = []string{"id", "current_revision", "deadline", "outcome_status", "created_at", "version", "head_seq", "head_hash", "workspace_id", "webhooks_registered"}
	scaleRevisionCols   = []string{"agreement_id", "number", "canonical_json", "markdown", "revision_digest", "markdown_digest", "locked_at", "terms_digest", "workspace_id"}
	scaleParticipantCol = []string{"id", "agreement_id", "position", "display_name", "kind", "email", "required", "state", "binding_json", "binding_digest", "token_hash", "claimed_at", "events_revision", "event_count", "invitation_id", "workspace_id"}
	scaleInvitationCols = []string{"id", "participant_id", "agreement_id", "secret_hash", "proof_hash", "expires_at", "issued_at", "workspace_id"}
	scaleEventCols      = []string{"id", "agreement_id", "seq", "participant_id", "revision", "action", "body", "idempotency_key", "command_digest", "created_at", "prev_hash", "hash", "workspace_id"}
)

// scaleResult is what a load took.
type scaleResult struct {
	Agreements, Participants, Events int64
	Rows                             int64
	Took                             time.Duration
	Split                            string // the share of each step in the connections' time
}

// loadScale writes the spec's rooms into the database at dbURL through
// parallel COPY (see prepareStaging), as the service's role in the service
// scope (row-level security lets that scope write any workspace's rows),
// printing progress to progress every few seconds.
func loadScale(ctx context.Context, dbURL string, s scaleSpec, progress io.Writer) (scaleResult, error) {
	if s.Now.IsZero() {
		s.Now = time.Now()
	}
	if s.Workers < 1 {
		s.Workers = 1
	}
	if s.Chunk < 1 {
		s.Chunk = 500
	}
	if s.Agreements < 1 || s.Parts < 1 || s.Workspaces < 1 || s.Events < 0 || s.Events > s.Parts*eventLimit {
		return scaleResult{}, fmt.Errorf("scale load: bad spec %+v", s)
	}
	var keys *secret.Keys
	if s.TokenKey != nil {
		var err error
		if keys, err = secret.DeriveKeys(s.TokenKey); err != nil {
			return scaleResult{}, err
		}
	}
	cfg, err := pgx.ParseConfig(dbURL)
	if err != nil {
		return scaleResult{}, err
	}
	cfg.RuntimeParams["consensus.scope"] = "service"
	// Each COPY transaction commits once; a commit that waits for the
	// WAL flush is what the service's own commits do, so it stays on.
	connect := func() (*pgx.Conn, error) { return pgx.ConnectConfig(ctx, cfg) }

	began := time.Now()
	conn, err := connect()
	if err != nil {
		return scaleResult{}, fmt.Errorf("scale load: connect: %w", err)
	}
	for w := 1; w < s.Workspaces; w++ {
		if _, err := conn.Exec(ctx, `INSERT INTO workspaces (id, name, created_at) VALUES ($1, $2, $3) ON CONFLICT DO NOTHING`,
			s.workspaceID(w), fmt.Sprintf("scale-%d", w+1), s.Now.Add(-41*24*time.Hour)); err != nil {
			conn.Close(ctx)
			return scaleResult{}, fmt.Errorf("scale load: workspace: %w", err)
		}
	}
	conn.Close(ctx)

	var next, doneAgreements, doneRows atomic.Int64
	var spent [len(scaleSteps)]atomic.Int64
	chunks := (s.Agreements + s.Chunk - 1) / s.Chunk
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	errs := make(chan error, s.Workers)
	var wg sync.WaitGroup
	for range s.Workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c, err := connect()
			if err != nil {
				errs <- fmt.Errorf("scale load: connect: %w", err)
				cancel()
				return
			}
			defer c.Close(context.WithoutCancel(ctx))
			if err := prepareStaging(ctx, c); err != nil {
				errs <- fmt.Errorf("scale load: %w", err)
				cancel()
				return
			}
			for {
				k := int(next.Add(1) - 1)
				if k >= chunks || ctx.Err() != nil {
					return
				}
				from, to := k*s.Chunk, min((k+1)*s.Chunk, s.Agreements)
				n, err := s.copyChunk(ctx, c, keys, from, to, &spent)
				if err != nil {
					errs <- fmt.Errorf("scale load: agreements %d to %d: %w", from+1, to, err)
					cancel()
					return
				}
				doneAgreements.Add(int64(to - from))
				doneRows.Add(n)
			}
		}()
	}
	stop := make(chan struct{})
	var pw sync.WaitGroup
	pw.Add(1)
	go func() {
		defer pw.Done()
		tick := time.NewTicker(5 * time.Second)
		defer tick.Stop()
		lastRows, last := int64(0), began
		for {
			select {
			case <-stop:
				return
			case now := <-tick.C:
				rows := doneRows.Load()
				fmt.Fprintf(progress, "   scale load: %s of %s agreements, %s rows, %s rows/s now, %s rows/s overall (%s)\n",
					thousands(float64(doneAgreements.Load())), thousands(float64(s.Agreements)), thousands(float64(rows)),
					thousands(float64(rows-lastRows)/now.Sub(last).Seconds()), thousands(float64(rows)/now.Sub(began).Seconds()),
					now.Sub(began).Round(time.Second))
				lastRows, last = rows, now
			}
		}
	}()
	wg.Wait()
	close(stop)
	pw.Wait()
	close(errs)
	if err := errors.Join(collect(errs)...); err != nil {
		return scaleResult{}, err
	}
	took := time.Since(began)
	r := scaleResult{Agreements: int64(s.Agreements), Participants: int64(s.Agreements * s.Parts), Events: int64(s.Agreements * s.Events), Rows: doneRows.Load(), Took: took}
	var total time.Duration
	for i := range spent {
		total += time.Duration(spent[i].Load())
	}
	var parts []string
	for i, name := range scaleSteps {
		parts = append(parts, fmt.Sprintf("%s %.0f%%", name, 100*float64(spent[i].Load())/float64(max(total, 1))))
	}
	r.Split = strings.Join(parts, ", ")
	fmt.Fprintf(progress, "   scale load: %s rows in %s, %s rows/s; the connections' time: %s\n", thousands(float64(r.Rows)), took.Round(100*time.Millisecond), thousands(float64(r.Rows)/took.Seconds()), r.Split)
	return r, nil
}

func collect(errs <-chan error) []error {
	var out []error
	for err := range errs {
		out = append(out, err)
	}
	return out
}

// copyChunk writes agreements [from, to) in one transaction: the
// participants' deferred reference to their invitations is checked at its
// commit. It returns the rows written, and adds to spent the time each
// step took (scaleSteps).
func (s scaleSpec) copyChunk(ctx context.Context, c *pgx.Conn, keys *secret.Keys, from, to int, spent *[len(scaleSteps)]atomic.Int64) (int64, error) {
	var ags, revs, parts, invs, evs [][]any
	mark := time.Now()
	lap := func(step int) {
		now := time.Now()
		spent[step].Add(int64(now.Sub(mark)))
		mark = now
	}
	for i := from; i < to; i++ {
		a, err := s.agreement(i, keys)
		if err != nil {
			return 0, err
		}
		ags = append(ags, a.agreement)
		revs = append(revs, a.revision)
		parts = append(parts, a.participants...)
		invs = append(invs, a.invitations...)
		evs = append(evs, a.events...)
	}
	lap(0)
	tx, err := c.Begin(ctx)
	if err != nil {
		return 0, err
	}
	defer func() { _ = tx.Rollback(context.WithoutCancel(ctx)) }()
	var n int64
	for ti, t := range scaleTables(ags, revs, parts, invs, evs) {
		k, err := tx.CopyFrom(ctx, pgx.Identifier{"scale_" + t.table}, t.cols, pgx.CopyFromRows(t.rows))
		if err != nil {
			return 0, fmt.Errorf("COPY %s: %w", t.table, err)
		}
		cols := strings.Join(t.cols, ", ")
		tag, err := tx.Exec(ctx, "INSERT INTO "+t.table+" ("+cols+") SELECT "+cols+" FROM scale_"+t.table)
		if err != nil {
			return 0, fmt.Errorf("INSERT INTO %s: %w", t.table, err)
		}
		if int(k) != len(t.rows) || int(tag.RowsAffected()) != len(t.rows) {
			return 0, fmt.Errorf("%s: %d rows copied, %d inserted, of %d", t.table, k, tag.RowsAffected(), len(t.rows))
		}
		n += k
		lap(1 + ti)
	}
	err = tx.Commit(ctx)
	lap(len(scaleSteps) - 1)
	return n, err
}

// scaleSteps names the parts of a chunk's time.
var scaleSteps = [...]string{"generate", "agreements", "revisions", "participants", "invitations", "events", "commit"}

type scaleTable struct {
	table string
	cols  []string
	rows  [][]any
}

// scaleTables lists the tables in the order their references need.
func scaleTables(ags, revs, parts, invs, evs [][]any) []scaleTable {
	return []scaleTable{
		{"agreements", scaleAgreementCols, ags},
		{"revisions", scaleRevisionCols, revs},
		{"participants", scaleParticipantCol, parts},
		{"invitations", scaleInvitationCols, invs},
		{"events", scaleEventCols, evs},
	}
}

// prepareStaging makes, on c, one temporary table per loaded table, emptied
// at every commit. Row-level security refuses COPY into the service's
// tables (FORCE binds their owner, the role the loader connects as), so
// each chunk is copied into these, then moved with one INSERT … SELECT,
// which the policies check row by row as they check the service's own
// inserts.
func prepareStaging(ctx context.Context, c *pgx.Conn) error {
	for _, t := range scaleTables(nil, nil, nil, nil, nil) {
		if _, err := c.Exec(ctx, "CREATE TEMP TABLE scale_"+t.table+" (LIKE "+t.table+" INCLUDING DEFAULTS) ON COMMIT DELETE ROWS"); err != nil {
			return fmt.Errorf("staging table for %s: %w", t.table, err)
		}
	}
	return nil
}
