package stress

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/consensus-md/consensus/internal/canon"
	"github.com/consensus-md/consensus/internal/room"
)

// tables lists the tables of the public schema.
func tables(t testing.TB, db *pgxpool.Pool) []string {
	t.Helper()
	rows, err := db.Query(context.Background(), `SELECT tablename FROM pg_tables WHERE schemaname = 'public' ORDER BY 1`)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for rows.Next() {
		var n string
		if err := rows.Scan(&n); err != nil {
			t.Fatal(err)
		}
		out = append(out, n)
	}
	if rows.Err() != nil {
		t.Fatal(rows.Err())
	}
	return out
}

// tableDigests is, per table, its row count and a digest of every row's
// text (all columns) in a stable order: the tables a refused request must
// leave alone.
func tableDigests(t testing.TB, db *pgxpool.Pool) map[string]string {
	t.Helper()
	out := map[string]string{}
	for _, name := range tables(t, db) {
		if strings.HasPrefix(name, "river_") {
			// The job queue's own tables change on their own (its leader,
			// periodic sweeps); a job a request queued has its outbox or
			// delivery row, which is compared.
			continue
		}
		if strings.HasPrefix(name, "log_") {
			// The transparency log integrates on its own, about every
			// second, the rooms changed before: it mirrors the room tables,
			// which are compared.
			continue
		}
		var n int64
		var d string
		q := fmt.Sprintf(`SELECT count(*), coalesce(md5(string_agg(x::text, E'\n' ORDER BY x::text)), '') FROM %q x`, name)
		switch name {
		case "audit_entries":
			// A refused operator request is audited with its result, as
			// every operator action is: only entries of actions that
			// succeeded count as a change.
			q = `SELECT count(*), coalesce(md5(string_agg(x::text, E'\n' ORDER BY x::text)), '') FROM audit_entries x WHERE result = 'ok'`
		case "workspaces":
			// The audit chain's head moves with every entry, refused or not.
			q = `SELECT count(*), coalesce(md5(string_agg((x.id, x.name, x.created_at)::text, E'\n' ORDER BY x.id)), '') FROM workspaces x`
		}
		if err := db.QueryRow(context.Background(), q).Scan(&n, &d); err != nil {
			t.Fatal(err)
		}
		out[name] = fmt.Sprintf("%d rows %s", n, d)
	}
	return out
}

// changedTables names the tables whose digest differs.
func changedTables(before, after map[string]string) []string {
	var out []string
	for k, v := range after {
		if before[k] != v {
			out = append(out, fmt.Sprintf("%s (%s → %s)", k, before[k], v))
		}
	}
	for k := range before {
		if _, ok := after[k]; !ok {
			out = append(out, k+" (gone)")
		}
	}
	sort.Strings(out)
	return out
}

// settleOutbox waits until no invitation email is queued or retrying, so
// the outbox worker changes nothing while a test compares digests.
func settleOutbox(t testing.TB, db *pgxpool.Pool) {
	t.Helper()
	var n int
	ok := eventually(30*time.Second, func() bool {
		err := db.QueryRow(context.Background(), `SELECT count(*) FROM outbox WHERE state IN ('queued', 'retrying')`).Scan(&n)
		return err == nil && n == 0
	})
	if !ok {
		t.Fatalf("the outbox still holds %d undelivered emails after 30s", n)
	}
}

// unchanged runs fn and reports (as an error naming what) every table it
// changed.
func unchanged(t testing.TB, db *pgxpool.Pool, what string, fn func()) {
	t.Helper()
	before := tableDigests(t, db)
	fn()
	if ch := changedTables(before, tableDigests(t, db)); len(ch) > 0 {
		t.Errorf("%s changed the database: %s", what, strings.Join(ch, ", "))
	}
}

// lockWaiters counts the backends of db's database that wait for a lock.
func lockWaiters(db *pgxpool.Pool) int {
	var n int
	if err := db.QueryRow(context.Background(), `SELECT count(*) FROM pg_stat_activity
		WHERE datname = current_database() AND wait_event_type = 'Lock' AND pid <> pg_backend_pid()`).Scan(&n); err != nil {
		return -1
	}
	return n
}

// ---- the stored state, read back for invariants ----

type dbAgreement struct {
	ID, RevisionDigest, Status string
	Revision                   int
	Deadline                   time.Time
	DecidedAt                  *time.Time
	EventID                    *string
}

type dbParticipant struct {
	ID, AgreementID, InvitationID, State string
	Xmin                                 string // the transaction that wrote the row last
	Required                             bool
	BindingJSON, BindingDigest           *string
	TokenHash                            []byte
	RevokedAt                            *time.Time
}

type dbEvent struct {
	ID, AgreementID, ParticipantID, Action, Body, Key, CommandDigest, Prev, Hash string
	Xmin                                                                         string
	Seq                                                                          int64
	Revision                                                                     int
	CreatedAt                                                                    time.Time
}

type dbArtifact struct {
	SHA256   string
	Body     []byte
	Revision int
}

type dbState struct {
	Agreements   map[string]*dbAgreement
	Participants map[string]*dbParticipant
	Events       []dbEvent // by agreement, then seq
	EventByID    map[string]*dbEvent
	EventByKey   map[string]*dbEvent // participant|key
	Artifacts    map[string]*dbArtifact
	SentSealed   int // sent emails whose sealed body was not erased
	DupKeys      int // (participant, key) pairs stored more than once
}

func loadState(t testing.TB, db *pgxpool.Pool) *dbState {
	t.Helper()
	ctx := context.Background()
	s := &dbState{Agreements: map[string]*dbAgreement{}, Participants: map[string]*dbParticipant{},
		EventByID: map[string]*dbEvent{}, EventByKey: map[string]*dbEvent{}, Artifacts: map[string]*dbArtifact{}}
	rows, err := db.Query(ctx, `SELECT a.id::text, a.current_revision, a.deadline, a.outcome_status, a.outcome_decided_at,
		a.outcome_event_id::text, r.revision_digest
		FROM agreements a JOIN revisions r ON r.agreement_id = a.id AND r.number = a.current_revision`)
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		a := &dbAgreement{}
		if err := rows.Scan(&a.ID, &a.Revision, &a.Deadline, &a.Status, &a.DecidedAt, &a.EventID, &a.RevisionDigest); err != nil {
			t.Fatal(err)
		}
		s.Agreements[a.ID] = a
	}
	if rows.Err() != nil {
		t.Fatal(rows.Err())
	}
	rows, err = db.Query(ctx, `SELECT p.id::text, p.agreement_id::text, i.id::text, p.state, p.required, p.binding_json,
		p.binding_digest, p.token_hash, p.revoked_at, p.xmin::text
		FROM participants p JOIN invitations i ON i.participant_id = p.id`)
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		p := &dbParticipant{}
		if err := rows.Scan(&p.ID, &p.AgreementID, &p.InvitationID, &p.State, &p.Required, &p.BindingJSON, &p.BindingDigest, &p.TokenHash, &p.RevokedAt, &p.Xmin); err != nil {
			t.Fatal(err)
		}
		s.Participants[p.ID] = p
	}
	if rows.Err() != nil {
		t.Fatal(rows.Err())
	}
	rows, err = db.Query(ctx, `SELECT id::text, agreement_id::text, participant_id::text, action, body, idempotency_key,
		command_digest, prev_hash, hash, seq, revision, created_at, xmin::text FROM events ORDER BY agreement_id, seq`)
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var e dbEvent
		if err := rows.Scan(&e.ID, &e.AgreementID, &e.ParticipantID, &e.Action, &e.Body, &e.Key, &e.CommandDigest, &e.Prev, &e.Hash, &e.Seq, &e.Revision, &e.CreatedAt, &e.Xmin); err != nil {
			t.Fatal(err)
		}
		s.Events = append(s.Events, e)
	}
	if rows.Err() != nil {
		t.Fatal(rows.Err())
	}
	for i := range s.Events {
		e := &s.Events[i]
		s.EventByID[e.ID] = e
		k := e.ParticipantID + "|" + e.Key
		if _, dup := s.EventByKey[k]; dup {
			s.DupKeys++
		}
		s.EventByKey[k] = e
	}
	rows, err = db.Query(ctx, `SELECT agreement_id::text, sha256, body, revision FROM artifacts`)
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var id string
		a := &dbArtifact{}
		if err := rows.Scan(&id, &a.SHA256, &a.Body, &a.Revision); err != nil {
			t.Fatal(err)
		}
		s.Artifacts[id] = a
	}
	if rows.Err() != nil {
		t.Fatal(rows.Err())
	}
	if err := db.QueryRow(ctx, `SELECT count(*) FROM outbox WHERE state = 'sent' AND sealed_body IS NOT NULL`).Scan(&s.SentSealed); err != nil {
		t.Fatal(err)
	}
	return s
}

// violations checks every invariant a consistent store holds, whatever
// the load, the crashes and the outages were:
//   - at most one terminal decision per participant and revision, at most
//     100 events, no (participant, Idempotency-Key) stored twice;
//   - every agreement's hash chain verifies: seq 1..n, prev links, each
//     hash recomputed from (prev, seq, command_digest, created_at) and each
//     command digest recomputed from the room-command/v1 object;
//   - every stored outcome equals room.Evaluate over the stored events, a
//     final outcome names its deciding event, reached has its artifact
//     (whose bytes match its digest and name that event) and nothing else
//     has one;
//   - every participant's state agrees with its binding and its events;
//   - no terminal decision of a revoked participant was written after the
//     revoke: the transaction that stored it is not the last writer of a
//     participant row that already holds revoked_at (it set the state to
//     decided, so it saw the revoke committed);
//   - a sent email's sealed body is erased.
func (s *dbState) violations(origin string) []string {
	var out []string
	bad := func(format string, args ...any) { out = append(out, fmt.Sprintf(format, args...)) }
	if s.DupKeys > 0 {
		bad("%d (participant, Idempotency-Key) pairs are stored more than once", s.DupKeys)
	}
	byAgreement := map[string][]dbEvent{}
	for _, e := range s.Events {
		byAgreement[e.AgreementID] = append(byAgreement[e.AgreementID], e)
	}
	terminal := map[string]int{}
	count := map[string]int{}
	for _, e := range s.Events {
		k := fmt.Sprintf("%s|%d", e.ParticipantID, e.Revision)
		count[k]++
		if room.IsTerminal(e.Action) {
			terminal[k]++
		}
	}
	for k, n := range terminal {
		if n > 1 {
			bad("participant|revision %s has %d terminal decisions", k, n)
		}
	}
	for k, n := range count {
		if n > room.MaxEventsPerParticipant {
			bad("participant|revision %s has %d events", k, n)
		}
	}
	for id, a := range s.Agreements {
		evs := byAgreement[id]
		prev := canon.ZeroHash
		for i, e := range evs {
			if e.Seq != int64(i+1) {
				bad("agreement %s: event %d has seq %d", id, i+1, e.Seq)
			}
			if e.Prev != prev {
				bad("agreement %s: seq %d prev %s, want %s", id, e.Seq, e.Prev, prev)
			}
			_, h, err := canon.DigestOf(map[string]any{"prev": e.Prev, "seq": e.Seq, "command_digest": e.CommandDigest, "created_at": canon.FormatTime(e.CreatedAt)})
			if err != nil || h != e.Hash {
				bad("agreement %s: seq %d hash %s does not recompute (%s, %v)", id, e.Seq, e.Hash, h, err)
			}
			prev = e.Hash
			p := s.Participants[e.ParticipantID]
			if p == nil || p.AgreementID != id {
				bad("event %s by %s, not a participant of agreement %s", e.ID, e.ParticipantID, id)
				continue
			}
			if p.BindingDigest == nil {
				bad("event %s by participant %s, which never claimed", e.ID, p.ID)
			}
			cmd := room.Command{Schema: fmt.Sprintf(room.RoomCommandSchemaFmt, origin), Version: 1, AgreementID: id,
				InvitationID: p.InvitationID, ParticipantID: p.ID, Revision: e.Revision, RevisionDigest: a.RevisionDigest,
				Action: e.Action, Body: e.Body}
			if _, d, err := canon.DigestOf(cmd); err != nil || d != e.CommandDigest {
				bad("event %s: command digest %s does not recompute (%s, %v)", e.ID, e.CommandDigest, d, err)
			}
		}
		var roster []room.Member
		for _, p := range s.Participants {
			if p.AgreementID == id {
				roster = append(roster, room.Member{ID: p.ID, Required: p.Required})
			}
		}
		devs := make([]room.Event, len(evs))
		for i, e := range evs {
			devs[i] = room.Event{ID: e.ID, Seq: e.Seq, ParticipantID: e.ParticipantID, Revision: e.Revision, Action: e.Action, CreatedAt: e.CreatedAt}
		}
		want := room.Evaluate(a.Revision, roster, devs, a.Deadline, time.Now())
		got := room.Outcome{Status: a.Status}
		if a.DecidedAt != nil {
			got.DecidedAt = *a.DecidedAt
		}
		if a.EventID != nil {
			got.DecidingEventID = *a.EventID
		}
		if got.Status != want.Status || got.DecidingEventID != want.DecidingEventID || !got.DecidedAt.Equal(want.DecidedAt) {
			bad("agreement %s: stored outcome %s/%s/%s, the stored events give %s/%s/%s", id,
				got.Status, got.DecidingEventID, canon.FormatTime(got.DecidedAt), want.Status, want.DecidingEventID, canon.FormatTime(want.DecidedAt))
		}
		if a.Status != room.StatusPending && a.Status != room.StatusExpired {
			if a.EventID == nil || s.EventByID[*a.EventID] == nil || s.EventByID[*a.EventID].AgreementID != id {
				bad("agreement %s: outcome %s without its deciding event", id, a.Status)
			}
		}
		art := s.Artifacts[id]
		switch {
		case a.Status == room.StatusReached && art == nil:
			bad("agreement %s: reached without an artifact", id)
		case a.Status != room.StatusReached && art != nil:
			bad("agreement %s: an artifact for outcome %s", id, a.Status)
		case art != nil:
			sum := sha256.Sum256(art.Body)
			if hex.EncodeToString(sum[:]) != art.SHA256 {
				bad("agreement %s: artifact bytes do not match its sha256", id)
			}
			if a.EventID != nil && !strings.Contains(string(art.Body), *a.EventID) {
				bad("agreement %s: artifact does not name the deciding event %s", id, *a.EventID)
			}
			if a.EventID != nil && s.EventByID[*a.EventID] != nil && !strings.Contains(string(art.Body), s.EventByID[*a.EventID].Hash) {
				bad("agreement %s: artifact does not state the chain head at the deciding event", id)
			}
		}
	}
	for _, p := range s.Participants {
		hasTerminal := terminal[fmt.Sprintf("%s|%d", p.ID, s.currentRevision(p.AgreementID))] > 0
		bound := p.BindingJSON != nil && p.BindingDigest != nil && p.TokenHash != nil
		unbound := p.BindingJSON == nil && p.BindingDigest == nil && p.TokenHash == nil
		switch {
		case !bound && !unbound:
			bad("participant %s: half a binding (json %v, digest %v, token %v)", p.ID, p.BindingJSON != nil, p.BindingDigest != nil, p.TokenHash != nil)
		case p.State == "invited" && !unbound:
			bad("participant %s: invited but bound", p.ID)
		case p.State != "invited" && !bound:
			bad("participant %s: %s without a binding", p.ID, p.State)
		case (p.State == "decided") != hasTerminal:
			bad("participant %s: state %s, terminal decision stored: %v", p.ID, p.State, hasTerminal)
		}
		if bound && canon.Digest([]byte(*p.BindingJSON)) != *p.BindingDigest {
			bad("participant %s: binding digest does not match its binding", p.ID)
		}
		if p.RevokedAt != nil {
			for _, e := range s.Events {
				if e.ParticipantID == p.ID && room.IsTerminal(e.Action) && e.Xmin == p.Xmin {
					bad("participant %s: its %s (event %s) was stored by a transaction that saw its revoke", p.ID, e.Action, e.ID)
				}
			}
		}
	}
	if s.SentSealed > 0 {
		bad("%d sent emails keep their sealed body", s.SentSealed)
	}
	sort.Strings(out)
	return out
}

func (s *dbState) currentRevision(agreementID string) int {
	if a := s.Agreements[agreementID]; a != nil {
		return a.Revision
	}
	return 1
}

// checkInvariants fails the test with every violation found.
func checkInvariants(t testing.TB, v *venue) *dbState {
	t.Helper()
	s := loadState(t, v.db)
	if vs := s.violations(v.origin); len(vs) > 0 {
		if len(vs) > 40 {
			vs = append(vs[:40], fmt.Sprintf("… and %d more", len(vs)-40))
		}
		t.Errorf("the stored records are inconsistent:\n  %s", strings.Join(vs, "\n  "))
	}
	return s
}
