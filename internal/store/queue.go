package store

import (
	"context"
	"errors"
	"slices"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/riverqueue/river"

	"github.com/consensus-md/consensus/internal/jobs"
	"github.com/consensus-md/consensus/internal/store/internal/dbsqlc"
)

// The jobs a change causes go in through River's client (jobs.InsertTx,
// jobs.InsertManyTx) in the transaction of the change: no statement of
// ours writes River's tables or sends its notifications.

// The webhook notification kinds, in the order one change queues them.
const (
	hookEvent    = "room.event"
	hookOutcome  = "room.outcome"
	hookRevision = "room.revision"
)

// queueWebhooks writes the webhook deliveries of a change to agreement id
// (one per kind and live endpoint of a participant not revoked, with the
// chain head and outcome tx now sees) and queues the River job of each,
// both in tx.
func queueWebhooks(ctx context.Context, tx pgx.Tx, id uuid.UUID, kinds ...string) error {
	rows, err := dbsqlc.New(tx).WebhookDeliveriesQueue(ctx, dbsqlc.WebhookDeliveriesQueueParams{AgreementID: id, Kinds: kinds})
	if err != nil {
		return interpretError("queue webhook deliveries", err)
	}
	return interpretError("queue webhook deliveries", jobs.InsertManyTx(ctx, tx, webhookJobs(rows)))
}

// webhookJobs are the River jobs of deliveries.
func webhookJobs(rows []dbsqlc.WebhookDeliveriesQueueRow) []river.JobArgs {
	out := make([]river.JobArgs, len(rows))
	for i, r := range rows {
		out[i] = jobs.Webhook{DeliveryID: r.ID, ParticipantID: r.ParticipantID}
	}
	return out
}

// The deliveries a replica of the previous release writes without a job
// (migration 00029's trigger) are queued by WebhookDeliveriesAdopt in
// batches of adoptBatch, at most adoptBatches of them per call: the sweep
// that calls it every two seconds adopts 1,000 a second at most, more than
// a replica of the previous release writes.
const (
	adoptBatch   = 500
	adoptBatches = 4
)

// WebhookDeliveriesAdopt queues the River jobs of the deliveries a replica
// of the previous release (v0.9.0) wrote without one, through River's
// client, each in the transaction that marks it queued, and returns how
// many it queued. Replicas adopting at once take different rows. It goes
// with migration 00029's trigger, once no replica of v0.9.0 runs.
func (s *Store) WebhookDeliveriesAdopt(ctx context.Context) (int, error) {
	total := 0
	for range adoptBatches {
		n := 0
		err := s.InTx(ctx, func(tx *Tx) error {
			rows, err := tx.q.WebhookDeliveriesAdopt(ctx, adoptBatch)
			if err != nil {
				return interpretError("adopt webhook deliveries", err)
			}
			// Oldest first, as their changes queued them.
			slices.SortFunc(rows, func(a, b dbsqlc.WebhookDeliveriesAdoptRow) int { return a.CreatedAt.Compare(b.CreatedAt) })
			args := make([]river.JobArgs, len(rows))
			for i, r := range rows {
				args[i] = jobs.Webhook{DeliveryID: r.ID, ParticipantID: r.ParticipantID}
			}
			n = len(rows)
			return interpretError("adopt webhook deliveries", jobs.InsertManyTx(ctx, tx.tx, args))
		})
		if err != nil {
			return total, err
		}
		total += n
		if n < adoptBatch {
			break
		}
	}
	return total, nil
}

// queueHooksStep adds to p, for a pipelined transaction, the deliveries
// of a change to agreement id; their jobs are added to *out when p is sent.
func queueHooksStep(ctx context.Context, p *pipeline, id uuid.UUID, kinds []string, out *[]river.JobArgs) {
	p.add(func(db dbsqlc.DBTX) error {
		rows, err := dbsqlc.New(db).WebhookDeliveriesQueue(ctx, dbsqlc.WebhookDeliveriesQueueParams{AgreementID: id, Kinds: kinds})
		if err != nil {
			return interpretError("queue webhook deliveries", err)
		}
		*out = append(*out, webhookJobs(rows)...)
		return nil
	})
}

// agreementHooks are the webhook kinds the writes of one pipelined
// transaction queue for an agreement: room.event once for all its events,
// room.outcome when they set its outcome, each delivery naming the chain
// head and outcome at the commit.
type agreementHooks struct {
	agreement      uuid.UUID
	event, outcome bool
}

// hooksOf adds the kinds of w, written on agreement id, to hs.
func hooksOf(hs []agreementHooks, id uuid.UUID, w AppendWrite) []agreementHooks {
	i := slices.IndexFunc(hs, func(h agreementHooks) bool { return h.agreement == id })
	if i < 0 {
		i, hs = len(hs), append(hs, agreementHooks{agreement: id})
	}
	hs[i].event = hs[i].event || w.Event != nil
	hs[i].outcome = hs[i].outcome || w.Outcome != nil
	return hs
}

// kinds are the notification kinds of h, in order.
func (h agreementHooks) kinds() []string {
	var kinds []string
	if h.event {
		kinds = append(kinds, hookEvent)
	}
	if h.outcome {
		kinds = append(kinds, hookOutcome)
	}
	return kinds
}

// commit sends p's statements and COMMIT in t. When the transaction queues
// jobs (queued, and the deliveries of hooks), River's client
// inserts them after the statements and before the commit: a round trip
// or two more, only for a transaction that queues a job.
func (t *pipedTx) commit(ctx context.Context, p *pipeline, hooks []agreementHooks, queued []river.JobArgs) error {
	for _, h := range hooks {
		queueHooksStep(ctx, p, h.agreement, h.kinds(), &queued)
	}
	if len(queued) > 0 || len(hooks) > 0 {
		if err := t.send(ctx, p); err != nil {
			return err
		}
		if err := t.insertJobs(ctx, queued); err != nil {
			return err
		}
		p = &pipeline{}
	}
	p.exec("COMMIT")
	return t.send(ctx, p)
}

// insertJobs queues args through River's client in the pipelined
// transaction t, whose BEGIN was sent: River's statements run on its
// connection between the pipeline's round trips.
func (t *pipedTx) insertJobs(ctx context.Context, args []river.JobArgs) error {
	return interpretError("queue jobs", jobs.InsertManyTx(ctx, openTx{t.conn}, args))
}

// openTx is the pgx.Tx River's client inserts through in a pipelined
// transaction: the statements of the transaction the connection has open.
// The pipeline, not River, ends that transaction.
type openTx struct{ c *pgxpool.Conn }

var errPiped = errors.New("store: a pipelined transaction is ended by its pipeline")

func (t openTx) Begin(context.Context) (pgx.Tx, error) { return nil, errPiped }
func (t openTx) Commit(context.Context) error          { return errPiped }
func (t openTx) Rollback(context.Context) error        { return errPiped }
func (t openTx) LargeObjects() pgx.LargeObjects        { return pgx.LargeObjects{} }
func (t openTx) Conn() *pgx.Conn                       { return t.c.Conn() }

func (t openTx) CopyFrom(ctx context.Context, table pgx.Identifier, cols []string, src pgx.CopyFromSource) (int64, error) {
	return t.c.CopyFrom(ctx, table, cols, src)
}

func (t openTx) SendBatch(ctx context.Context, b *pgx.Batch) pgx.BatchResults {
	return t.c.SendBatch(ctx, b)
}

func (t openTx) Prepare(ctx context.Context, name, sql string) (*pgconn.StatementDescription, error) {
	return t.c.Conn().Prepare(ctx, name, sql)
}

func (t openTx) Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error) {
	return t.c.Exec(ctx, sql, args...)
}

func (t openTx) Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error) {
	return t.c.Query(ctx, sql, args...)
}

func (t openTx) QueryRow(ctx context.Context, sql string, args ...any) pgx.Row {
	return t.c.QueryRow(ctx, sql, args...)
}
