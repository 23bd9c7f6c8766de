package store

import (
	"context"
	"time"

	"github.com/google/uuid"

	"github.com/consensus-md/consensus/internal/jobs"
	"github.com/consensus-md/consensus/internal/store/internal/dbsqlc"
)

// Reply results.
const (
	ReplyRecorded = "recorded"
	ReplyRefused  = "refused"
)

// OutboxAnswer is the kind of the one answer email a reply acted on gets;
// it carries no credential.
const OutboxAnswer = "answer"

// Reply is one reply email acted on, keyed by its Message-ID.
type Reply struct {
	MessageID    string
	InvitationID uuid.UUID
	RawSHA256    string
	Result       string // ReplyRecorded or ReplyRefused
	Reason       string
	EventID      uuid.NullUUID
	ReceivedAt   time.Time
}

// ReplyWrite is a reply's row and its answer email, written together.
type ReplyWrite struct {
	Reply  Reply
	Answer OutboxMessage
}

// ReplyWrite stores w: the reply row and, unless its Message-ID was seen
// before (then nothing is written and false comes back), the answer email.
func (tx *Tx) ReplyWrite(ctx context.Context, w ReplyWrite) (bool, error) {
	n, err := tx.q.ReplyInsert(ctx, replyParams(w.Reply))
	if err != nil || n == 0 {
		return false, interpretError("insert reply", err)
	}
	w.Answer.Kind = OutboxAnswer
	return true, tx.OutboxInsert(ctx, w.Answer)
}

// ReplySeen reports whether a reply with messageID was acted on.
func (q queries) ReplySeen(ctx context.Context, messageID string) (bool, error) {
	seen, err := q.q.ReplySeen(ctx, messageID)
	return seen, interpretError("read reply", err)
}

func replyParams(r Reply) dbsqlc.ReplyInsertParams {
	return dbsqlc.ReplyInsertParams{
		MessageID: r.MessageID, InvitationID: r.InvitationID, RawSha256: r.RawSHA256, Result: r.Result,
		Reason: r.Reason, EventID: r.EventID, ReceivedAt: r.ReceivedAt,
	}
}

// queueReply adds the statements of w to an append's second round trip.
// The events of the batch are inserted after it; the row's reference to its
// event is checked at commit.
// A Message-ID seen meanwhile makes the reply row's insert write nothing;
// the answer is then a unique-key conflict that fails the append, which
// the caller reads as a reply already acted on.
func queueReply(ctx context.Context, p *pipeline, w ReplyWrite) {
	p.add(func(db dbsqlc.DBTX) error {
		_, err := dbsqlc.New(db).ReplyInsert(ctx, replyParams(w.Reply))
		return interpretError("insert reply", err)
	})
	p.add(func(db dbsqlc.DBTX) error {
		m := w.Answer
		return interpretError("insert answer", dbsqlc.New(db).OutboxInsert(ctx, dbsqlc.OutboxInsertParams{
			ID: m.ID, InvitationID: m.InvitationID, AgreementID: m.AgreementID, Recipient: m.Recipient,
			Subject: m.Subject, MessageID: m.MessageID, SealedBody: m.SealedBody, CreatedAt: m.CreatedAt, Kind: OutboxAnswer,
		}))
	})
	// The answer's job, queued through River's client in the same
	// transaction before its commit.
	p.queueJob(jobs.Email{OutboxID: w.Answer.ID})
}

// SessionLock is a PostgreSQL session-level advisory lock held by one
// connection taken out of the pool for as long as it is held; it ends
// when Release closes that connection or the process dies.
type SessionLock struct {
	conn interface{ Close(context.Context) error }
}

// Release gives the lock up.
func (l *SessionLock) Release() {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_ = l.conn.Close(ctx)
}

// TryLock takes the advisory lock key on a dedicated connection if no
// session holds it: nil and no error when another one does.
func (s *Store) TryLock(ctx context.Context, key int64) (*SessionLock, error) {
	c, err := s.pool.Acquire(ctx)
	if err != nil {
		return nil, interpretError("acquire a connection for a lock", err)
	}
	conn := c.Hijack()
	var ok bool
	if err := conn.QueryRow(ctx, "SELECT pg_try_advisory_lock($1)", key).Scan(&ok); err != nil || !ok {
		_ = conn.Close(context.WithoutCancel(ctx))
		return nil, interpretError("take an advisory lock", err)
	}
	return &SessionLock{conn: conn}, nil
}

// Alive reports whether the lock's connection still answers (the lock is
// lost with it).
func (l *SessionLock) Alive(ctx context.Context) bool {
	p, ok := l.conn.(interface{ Ping(context.Context) error })
	return ok && p.Ping(ctx) == nil
}
