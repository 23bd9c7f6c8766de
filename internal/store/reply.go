package store

import (
	"context"
	"time"

	"github.com/google/uuid"

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

// Reply is one reply email acted on. It is keyed by its Message-ID, by
// the DKIM signature it was accepted on and by that signature's body hash
// within its invitation, so that a copy differing only in what the
// signature leaves unsigned is the same reply.
type Reply struct {
	MessageID    string
	InvitationID uuid.UUID
	RawSHA256    string
	// DKIMSignature and DKIMBodyHash are the b= and bh= values of the
	// signature; empty only for a reply without evidence.
	DKIMSignature, DKIMBodyHash string
	Result                      string // ReplyRecorded or ReplyRefused
	Reason                      string
	EventID                     uuid.NullUUID
	ReceivedAt                  time.Time
}

// ReplyWrite is a reply's row and its answer email, written together.
type ReplyWrite struct {
	Reply  Reply
	Answer OutboxMessage
}

// ReplyWrite stores w: the reply row and its answer email, queued through
// River in tx. A reply seen before (see Reply) writes nothing, and false
// comes back.
func (tx *Tx) ReplyWrite(ctx context.Context, w ReplyWrite) (bool, error) {
	r := w.Reply
	n, err := tx.q.ReplyInsert(ctx, dbsqlc.ReplyInsertParams{
		MessageID: r.MessageID, InvitationID: r.InvitationID, RawSha256: r.RawSHA256, Result: r.Result,
		Reason: r.Reason, EventID: r.EventID, ReceivedAt: r.ReceivedAt,
		DkimSignature: nullable(r.DKIMSignature), DkimBodyHash: nullable(r.DKIMBodyHash),
	})
	if err != nil || n == 0 {
		return false, interpretError("insert reply", err)
	}
	w.Answer.Kind = OutboxAnswer
	return true, tx.OutboxInsert(ctx, w.Answer)
}

// ReplySeen reports whether r was acted on already: a reply with its
// Message-ID, its DKIM signature, or its body hash in its invitation.
func (q queries) ReplySeen(ctx context.Context, r Reply) (bool, error) {
	seen, err := q.q.ReplySeen(ctx, dbsqlc.ReplySeenParams{
		MessageID: r.MessageID, InvitationID: r.InvitationID,
		DkimSignature: nullable(r.DKIMSignature), DkimBodyHash: nullable(r.DKIMBodyHash),
	})
	return seen, interpretError("read reply", err)
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
