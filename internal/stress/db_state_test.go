package stress

// The stored state, read back from the database for the invariant checks.

import (
	"context"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
)

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
