package main

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/consensus-md/consensus/internal/canon"
	"github.com/consensus-md/consensus/internal/room"
	"github.com/consensus-md/consensus/internal/secret"
)

// The scale load (BENCH_SCALE=1) writes rooms straight into the service's
// own tables with COPY, as if the service had made them: every row meets
// the constraints, foreign keys and row-level security of the migrations,
// the counters an append reads (head, version, event counts) agree with the
// events, and each event carries the command digest and chain hash the
// service would have computed. The rooms are spread over a few workspaces,
// the bench's own (default) among them.

// defaultWorkspace is the workspace the bootstrap operator token acts in:
// the bench's own rooms are made there.
var defaultWorkspace = uuid.MustParse("00000000-0000-0000-0000-000000000001")

// scaleSpec describes one scale load.
type scaleSpec struct {
	Agreements int
	Parts      int // participants per agreement, all claimed
	Events     int // events per agreement, spread over its participants
	Workspaces int // the default one and Workspaces-1 more
	// Origin is the service origin the revisions, bindings and commands
	// name, as the service writes its own.
	Origin string
	// TokenKey is the service's CONSENSUS_TOKEN_KEY: participant tokens
	// are derived from it as a claim derives them, so a replayed claim
	// would answer the same token.
	TokenKey []byte
	Seed     uint64
	Workers  int // parallel COPY connections
	Chunk    int // agreements per transaction
	Now      time.Time
}

// fullScale is the scale of BENCH_SCALE=1: 100,000 agreements, 300,000
// participants, 1,000,000 events.
func fullScale(agreements int) scaleSpec {
	return scaleSpec{Agreements: agreements, Parts: 3, Events: 10, Workspaces: 4, Seed: 1, Workers: 2, Chunk: 500}
}

func (s scaleSpec) rows() int64 {
	// agreements, revisions, participants, invitations, events
	return int64(s.Agreements) * int64(2+2*s.Parts+s.Events)
}

// scaleParticipant is one generated participant, as a test needs it.
type scaleParticipant struct {
	ID, InvitationID uuid.UUID
	Token            string
	Events           int
	Binding          room.Binding
	BindingJSON      string
}

// scaleEvent is one generated event.
type scaleEvent struct {
	ID            uuid.UUID
	Seq           int64
	Participant   int
	Action, Body  string
	Key           string
	CommandDigest string
	CreatedAt     time.Time
	Prev, Hash    string
}

// scaleAgreement is one generated room with its rows.
type scaleAgreement struct {
	Index          int
	ID             uuid.UUID
	Workspace      uuid.UUID
	RevisionDigest string
	Parts          []scaleParticipant
	Events         []scaleEvent
	agreement      []any
	revision       []any
	participants   [][]any
	invitations    [][]any
	events         [][]any
}

// workspaceID is the id of scale workspace w; workspace 0 is the default.
func (s scaleSpec) workspaceID(w int) uuid.UUID {
	if w == 0 {
		return defaultWorkspace
	}
	var b [16]byte
	binary.BigEndian.PutUint64(b[:8], s.Seed)
	binary.BigEndian.PutUint64(b[8:], uint64(w))
	sum := sha256.Sum256(append([]byte("consensus-bench scale workspace"), b[:]...))
	id, _ := uuid.FromBytes(sum[:16])
	id[6] = id[6]&0x0f | 0x40 // version 4
	id[8] = id[8]&0x3f | 0x80 // RFC 4122 variant
	return id
}

// scaleBody is the text of event seq of agreement i: ASCII without
// characters RFC 8785 escapes, about as long as a short rationale.
func scaleBody(i int, seq int64) string {
	return "Scale comment " + strconv.FormatInt(seq, 10) + " in loaded agreement " + strconv.Itoa(i+1) +
		": the rollout plan was reviewed, the rollback rehearsed, and the remaining risk is written down for the record."
}

// agreement generates agreement i. The same spec and index always give the
// same rows: a test regenerates a room to know its tokens and events.
func (s scaleSpec) agreement(i int, keys *secret.Keys) (*scaleAgreement, error) {
	rng := rand.New(rand.NewPCG(s.Seed, uint64(i)))
	newID := func() uuid.UUID {
		var id uuid.UUID
		binary.BigEndian.PutUint64(id[:8], rng.Uint64())
		binary.BigEndian.PutUint64(id[8:], rng.Uint64())
		id[6] = id[6]&0x0f | 0x40
		id[8] = id[8]&0x3f | 0x80
		return id
	}
	hash32 := func() []byte {
		var b [32]byte
		for k := 0; k < 4; k++ {
			binary.BigEndian.PutUint64(b[8*k:], rng.Uint64())
		}
		return b[:]
	}
	a := &scaleAgreement{Index: i, ID: newID(), Workspace: s.workspaceID(i % s.Workspaces)}
	// Created one after another over the weeks before now, a few minutes
	// apart; every room is still pending, its deadline ahead.
	step := 40 * 24 * time.Hour / time.Duration(max(s.Agreements, 1))
	created := canon.Now(s.Now.Add(-40*24*time.Hour + time.Duration(i)*step))
	lockedAt := created.Truncate(time.Second)
	deadline := s.Now.Add(30 * 24 * time.Hour).UTC().Truncate(time.Second)

	rev := room.Revision{
		Schema: fmt.Sprintf(room.AgreementSchemaFmt, s.Origin), AgreementID: a.ID.String(), Revision: 1,
		Title:        fmt.Sprintf("Loaded agreement %d", i+1),
		Objective:    "Agree on the rollout of the quarterly release across the regions named in the plan.",
		Rules:        []string{"Every region signs off before its traffic moves.", "A failed check stops the rollout."},
		DecisionRule: room.Rule{},
		Deadline:     canon.FormatSeconds(deadline), LockedAt: canon.FormatSeconds(lockedAt), Issuer: s.Origin,
	}
	a.Parts = make([]scaleParticipant, s.Parts)
	for j := range a.Parts {
		a.Parts[j].ID, a.Parts[j].InvitationID = newID(), newID()
		rev.Participants = append(rev.Participants, room.Participant{
			ParticipantID: a.Parts[j].ID.String(), DisplayName: fmt.Sprintf("Loaded agent %d.%d", i+1, j+1),
			Kind: room.KindAgent, Required: j < 2 || s.Parts == 1,
		})
	}
	locked, err := room.Lock(rev)
	if err != nil {
		return nil, err
	}
	a.RevisionDigest = locked.RevisionDigest
	a.revision = []any{a.ID, 1, string(locked.Canonical), locked.Markdown, locked.RevisionDigest, locked.MarkdownDigest, lockedAt, locked.TermsDigest, a.Workspace}

	// The events: participants in turn, one action in five a question.
	prev := canon.ZeroHash
	at := created
	cmdSchema := fmt.Sprintf(room.RoomCommandSchemaFmt, s.Origin)
	for k := 0; k < s.Events; k++ {
		seq := int64(k + 1)
		j := k % s.Parts
		at = at.Add(time.Duration(1+rng.IntN(600)) * time.Second).Add(time.Duration(rng.IntN(1_000_000)) * time.Microsecond)
		action := "comment"
		if k%5 == 4 {
			action = "question"
		}
		e := scaleEvent{ID: newID(), Seq: seq, Participant: j, Action: action, Body: scaleBody(i, seq),
			Key: "scale-" + strconv.Itoa(i+1) + "-" + strconv.FormatInt(seq, 10), CreatedAt: at, Prev: prev}
		e.CommandDigest = canon.Digest(scaleCommandBytes(room.Command{
			Schema: cmdSchema, Version: 1, AgreementID: a.ID.String(), InvitationID: a.Parts[j].InvitationID.String(),
			ParticipantID: a.Parts[j].ID.String(), Revision: 1, RevisionDigest: locked.RevisionDigest, Action: action, Body: e.Body,
		}))
		e.Hash = scaleChainHash(e.CommandDigest, at, prev, seq)
		prev = e.Hash
		a.Parts[j].Events++
		a.Events = append(a.Events, e)
		a.events = append(a.events, []any{e.ID, a.ID, seq, a.Parts[j].ID, 1, action, e.Body, e.Key, e.CommandDigest, at, e.Prev, e.Hash, a.Workspace})
	}
	// Version: 1 at creation, one more per claim and per event.
	version := int64(1 + s.Parts + s.Events)
	a.agreement = []any{a.ID, 1, deadline, "pending", created, version, int64(s.Events), prev, a.Workspace, false}

	for j := range a.Parts {
		p := &a.Parts[j]
		binding := room.Binding{
			Schema: fmt.Sprintf(room.BindingSchemaFmt, s.Origin), Version: 1, AgreementID: a.ID.String(),
			InvitationID: p.InvitationID.String(), ParticipantID: p.ID.String(), Inbox: scaleInbox(i, j),
			Assurance: room.Assurance, Revision: 1, RevisionDigest: locked.RevisionDigest,
		}
		canonical := scaleBindingBytes(binding)
		digest := canon.Digest(canonical)
		p.Binding, p.BindingJSON = binding, string(canonical)
		if keys != nil {
			p.Token = keys.ParticipantToken(digest)
		} else {
			p.Token = secret.PrefixParticipant + hex.EncodeToString(hash32())
		}
		claimedAt := canon.Now(created.Add(time.Duration(j+1) * time.Second))
		a.participants = append(a.participants, []any{
			p.ID, a.ID, j, rev.Participants[j].DisplayName, room.KindAgent, scaleInbox(i, j), rev.Participants[j].Required,
			"claimed", string(canonical), digest, secret.Hash(p.Token), claimedAt, 1, p.Events, p.InvitationID, a.Workspace,
		})
		a.invitations = append(a.invitations, []any{p.InvitationID, p.ID, a.ID, hash32(), hash32(), deadline, created, a.Workspace})
	}
	return a, nil
}

func scaleInbox(i, j int) string {
	return "agent-" + strconv.Itoa(i+1) + "-" + strconv.Itoa(j+1) + "@scale.bench.example.com"
}

// scaleCommandBytes is the RFC 8785 form of a version 1 command whose
// strings need no escaping (the loader writes only such): its keys in
// sorted order, no whitespace. The test holds it equal to canon.DigestOf.
func scaleCommandBytes(c room.Command) []byte {
	b := make([]byte, 0, 512+len(c.Body))
	str := func(s string) {
		b = append(b, '"')
		b = append(b, s...)
		b = append(b, '"')
	}
	b = append(b, `{"action":`...)
	str(c.Action)
	b = append(b, `,"agreement_id":`...)
	str(c.AgreementID)
	b = append(b, `,"body":`...)
	str(c.Body)
	b = append(b, `,"invitation_id":`...)
	str(c.InvitationID)
	b = append(b, `,"participant_id":`...)
	str(c.ParticipantID)
	b = append(b, `,"revision":`...)
	b = strconv.AppendInt(b, int64(c.Revision), 10)
	b = append(b, `,"revision_digest":`...)
	str(c.RevisionDigest)
	b = append(b, `,"schema":`...)
	str(c.Schema)
	b = append(b, `,"version":`...)
	b = strconv.AppendInt(b, int64(c.Version), 10)
	return append(b, '}')
}

// scaleBindingBytes is the RFC 8785 form of a binding without a runtime
// endpoint whose strings need no escaping, as scaleCommandBytes writes a
// command. The test holds it equal to canon.DigestOf.
func scaleBindingBytes(bd room.Binding) []byte {
	b := make([]byte, 0, 512)
	str := func(s string) {
		b = append(b, '"')
		b = append(b, s...)
		b = append(b, '"')
	}
	b = append(b, `{"agreement_id":`...)
	str(bd.AgreementID)
	b = append(b, `,"assurance":`...)
	str(bd.Assurance)
	b = append(b, `,"inbox":`...)
	str(bd.Inbox)
	b = append(b, `,"invitation_id":`...)
	str(bd.InvitationID)
	b = append(b, `,"participant_id":`...)
	str(bd.ParticipantID)
	b = append(b, `,"revision":`...)
	b = strconv.AppendInt(b, int64(bd.Revision), 10)
	b = append(b, `,"revision_digest":`...)
	str(bd.RevisionDigest)
	b = append(b, `,"runtime_endpoint":null,"schema":`...)
	str(bd.Schema)
	b = append(b, `,"version":`...)
	b = strconv.AppendInt(b, int64(bd.Version), 10)
	return append(b, '}')
}

// scaleChainHash is the chain link: SHA-256 of the RFC 8785 bytes of
// {command_digest, created_at, prev, seq}.
func scaleChainHash(commandDigest string, at time.Time, prev string, seq int64) string {
	b := make([]byte, 0, 256)
	b = append(b, `{"command_digest":"`...)
	b = append(b, commandDigest...)
	b = append(b, `","created_at":"`...)
	b = append(b, canon.FormatTime(at)...)
	b = append(b, `","prev":"`...)
	b = append(b, prev...)
	b = append(b, `","seq":`...)
	b = strconv.AppendInt(b, seq, 10)
	b = append(b, '}')
	return canon.Digest(b)
}

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

// scaleSummary is the one-line description of a spec for logs and the report.
func (s scaleSpec) summary() string {
	return strings.Join([]string{
		thousands(float64(s.Agreements)) + " agreements",
		thousands(float64(s.Agreements*s.Parts)) + " participants (all claimed)",
		thousands(float64(s.Agreements*s.Events)) + " events",
		fmt.Sprintf("%d workspaces", s.Workspaces),
	}, ", ")
}
