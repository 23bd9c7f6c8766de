package daemon

import (
	"context"
	"log/slog"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/riverdriver/riverpgxv5"

	"github.com/consensus-md/consensus/internal/jobs"
	"github.com/consensus-md/consensus/internal/outbox"
	"github.com/consensus-md/consensus/internal/store"
	"github.com/consensus-md/consensus/internal/webhook/deliver"
)

// Workers per queue and replica. A webhook receiver that never answers
// holds one webhook worker per replica at most (deliver.Worker's
// per-endpoint limit), so the others keep delivering.
const (
	emailWorkers   = 4
	webhookWorkers = 8
)

// deadlineSweep is how often the rooms whose deadline passed while pending
// are settled. Reading a room settles it too; the sweep is for those who
// only listen (a stream, a webhook).
const deadlineSweep = 2 * time.Second

// sessionSweep is how often expired sessions are deleted.
const sessionSweep = 10 * time.Minute

// newQueue builds the replica's River client on the store's pool: the
// email and webhook workers, and the sweeps as periodic jobs, which only
// the elected leader among the replicas inserts, so each runs once per
// period across them. poll is how long an idle email queue waits before
// looking again when no insert woke it.
func newQueue(st *store.Store, mail *outbox.Worker, hooks *deliver.Worker, poll time.Duration, now func() time.Time, log *slog.Logger) (*river.Client[pgx.Tx], error) {
	workers := river.NewWorkers()
	river.AddWorker(workers, mail)
	river.AddWorker(workers, hooks)
	river.AddWorker(workers, &outbox.EnrollmentWorker{Mail: mail})
	river.AddWorker(workers, river.WorkFunc(func(ctx context.Context, _ *river.Job[jobs.DeadlineSweep]) error {
		_, err := st.AgreementExpireDue(ctx, now())
		return err
	}))
	river.AddWorker(workers, river.WorkFunc(func(ctx context.Context, _ *river.Job[jobs.SessionSweep]) error {
		if _, err := st.SessionDeleteExpired(ctx, now()); err != nil {
			return err
		}
		// Console sessions idle for twelve hours, and stale passkey ceremonies.
		return st.ConsoleSweep(ctx, now().Add(-12*time.Hour), now())
	}))
	if poll <= 0 {
		poll = time.Second
	}
	cooldown := min(100*time.Millisecond, poll)
	periodic := func(every time.Duration, args river.JobArgs) *river.PeriodicJob {
		return river.NewPeriodicJob(river.PeriodicInterval(every),
			func() (river.JobArgs, *river.InsertOpts) { return args, nil },
			&river.PeriodicJobOpts{ID: args.Kind(), RunOnStart: true})
	}
	return river.NewClient(riverpgxv5.New(st.Pool()), &river.Config{
		Queues: map[string]river.QueueConfig{
			jobs.QueueEmail:   {MaxWorkers: emailWorkers, FetchCooldown: cooldown, FetchPollInterval: poll},
			jobs.QueueWebhook: {MaxWorkers: webhookWorkers},
			jobs.QueueSweep:   {MaxWorkers: 1},
		},
		Workers: workers,
		PeriodicJobs: []*river.PeriodicJob{
			periodic(deadlineSweep, jobs.DeadlineSweep{}),
			periodic(sessionSweep, jobs.SessionSweep{}),
		},
		// A job still running past its own timeout (an email's send
		// timeout plus its record margin, a delivery's 10 s plus its
		// margin, JobTimeout for the sweeps) belongs to a replica that
		// died: the leader's rescuer, which looks every 30 s, makes it
		// available again, and the email or delivery is made under the
		// same Message-ID or webhook-id.
		JobTimeout:           30 * time.Second,
		RescueStuckJobsAfter: 30 * time.Second,
		// A sweep every two seconds would otherwise keep a day of
		// finished jobs.
		CompletedJobRetentionPeriod: time.Hour,
		Logger:                      slog.New(warnings{log.Handler()}),
	})
}

// warnings passes on River's warnings and errors only: its routine
// messages (every fetch, every leadership renewal) are not worth a log line.
type warnings struct{ slog.Handler }

func (w warnings) Enabled(ctx context.Context, l slog.Level) bool {
	return l >= slog.LevelWarn && w.Handler.Enabled(ctx, l)
}

func (w warnings) WithAttrs(as []slog.Attr) slog.Handler { return warnings{w.Handler.WithAttrs(as)} }
func (w warnings) WithGroup(g string) slog.Handler       { return warnings{w.Handler.WithGroup(g)} }
