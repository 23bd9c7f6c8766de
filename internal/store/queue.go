package store

import (
	"context"
	"errors"
	"slices"
	"time"

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

// agreementJobs are the jobs the writes of one pipelined transaction queue
// for an agreement: the webhook kinds, where an endpoint was ever
// registered (room.event once for all its events, room.outcome when they
// set its outcome, each delivery naming the chain head and outcome at the
// commit), and the outcome emails when they make its outcome final.
type agreementJobs struct {
	agreement      uuid.UUID
	webhooks       bool
	event, outcome bool
	// final is when the outcome the writes made final was decided; zero
	// when they made none.
	final time.Time
}

// jobsOf adds what w, written on agreement a, queues to js: nothing for an
// agreement without webhooks unless w makes its outcome final, so an
// append that decides nothing there costs no extra statement.
func jobsOf(js []agreementJobs, a Agreement, w AppendWrite) []agreementJobs {
	final := w.Outcome != nil && w.Outcome.Final()
	if !a.Webhooks && !final {
		return js
	}
	i := slices.IndexFunc(js, func(j agreementJobs) bool { return j.agreement == a.ID })
	if i < 0 {
		i, js = len(js), append(js, agreementJobs{agreement: a.ID, webhooks: a.Webhooks})
	}
	js[i].event = js[i].event || w.Event != nil
	js[i].outcome = js[i].outcome || w.Outcome != nil
	if final {
		js[i].final = w.Outcome.DecidedAt
	}
	return js
}

// kinds are the webhook kinds of j, in order.
func (j agreementJobs) kinds() []string {
	var kinds []string
	if !j.webhooks {
		return nil
	}
	if j.event {
		kinds = append(kinds, hookEvent)
	}
	if j.outcome {
		kinds = append(kinds, hookOutcome)
	}
	return kinds
}

// queueStep adds j's statements to p; their jobs are added to *out when p
// is sent.
func (j agreementJobs) queueStep(ctx context.Context, p *pipeline, out *[]river.JobArgs) {
	if kinds := j.kinds(); len(kinds) > 0 {
		queueHooksStep(ctx, p, j.agreement, kinds, out)
	}
	if !j.final.IsZero() {
		queueOutcomeStep(ctx, p, j.agreement, j.final, out)
	}
}

// queue writes j's rows and queues their jobs in tx, which holds the
// writes.
func (j agreementJobs) queue(ctx context.Context, tx pgx.Tx) error {
	if kinds := j.kinds(); len(kinds) > 0 {
		if err := queueWebhooks(ctx, tx, j.agreement, kinds...); err != nil {
			return err
		}
	}
	if !j.final.IsZero() {
		return queueOutcome(ctx, tx, j.agreement, j.final)
	}
	return nil
}

// commit sends p's statements and COMMIT in t. When the transaction queues
// jobs (queued, and those of jobs), River's client inserts them after the
// statements and before the commit: a round trip or two more, only for a
// transaction that queues a job.
func (t *pipedTx) commit(ctx context.Context, p *pipeline, js []agreementJobs, queued []river.JobArgs) error {
	for _, j := range js {
		j.queueStep(ctx, p, &queued)
	}
	if len(queued) > 0 || len(js) > 0 {
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
