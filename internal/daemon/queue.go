package daemon

import (
	"context"
	"errors"
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

// reminderSweep is how often the reminders that are due are queued. A
// reminder goes out within this long after its time; the sweep reads, by
// the partial index agreements_remind_idx, only the pending agreements
// whose reminders have begun.
const reminderSweep = 5 * time.Second

// sessionSweep is how often expired sessions are deleted.
const sessionSweep = 10 * time.Minute

// sweepTimeout bounds one run of a sweep: a few statements, each bounded
// by the database timeout.
const sweepTimeout = 30 * time.Second

// rescueMargin is how long past the longest job timeout a job must have
// been running before River's rescuer may run it again. A job can outlive
// its timeout a little: the email and webhook workers record an attempt
// under a context of its own (their record margin, 15 s) after River
// cancelled the job's, and River marks a finished job completed in
// batches, shortly after Work returns.
const rescueMargin = 30 * time.Second

// newQueue builds the replica's River client on the store's pool: the
// email and webhook workers, and the sweeps as periodic jobs, which only
// the elected leader among the replicas inserts, so each runs once per
// period across them. poll is how long an idle email queue waits before
// looking again when no insert woke it.
func newQueue(st *store.Store, mail *outbox.Worker, hooks *deliver.Worker, poll time.Duration, now func() time.Time, log *slog.Logger) (*river.Client[pgx.Tx], error) {
	workers := river.NewWorkers()
	river.AddWorker(workers, mail)
	river.AddWorker(workers, outbox.EnrollmentWorker{Mail: mail})
	river.AddWorker(workers, outbox.NoticeWorker{Mail: mail})
	river.AddWorker(workers, hooks)
	// The deadline sweep also queues the webhook deliveries a replica of
	// the previous release wrote without a job (migration 00029), with
	// this release's code, which the previous release's lacks. It rides on
	// a job kind both releases know: the leader that inserts it every
	// deadlineSweep may be a replica of the previous release, which would
	// insert no job of a new kind, and would discard one it took from the
	// sweep queue as unknown. A replica of this release takes it often
	// enough; the next release, with the trigger gone, drops the adoption.
	river.AddWorker(workers, &sweep[jobs.DeadlineSweep]{run: func(ctx context.Context) error {
		_, err := st.AgreementExpireDue(ctx, now())
		_, adoptErr := st.WebhookDeliveriesAdopt(ctx)
		return errors.Join(err, adoptErr)
	}})
	river.AddWorker(workers, &sweep[jobs.ReminderSweep]{run: func(ctx context.Context) error {
		_, err := st.OutboxQueueReminders(ctx, now())
		return err
	}})
	river.AddWorker(workers, &sweep[jobs.SessionSweep]{run: func(ctx context.Context) error {
		if _, err := st.SessionDeleteExpired(ctx, now()); err != nil {
			return err
		}
		// Console sessions idle for twelve hours, and stale passkey ceremonies.
		return st.ConsoleSweep(ctx, now().Add(-12*time.Hour), now())
	}})
	if poll <= 0 {
		poll = time.Second
	}
	cooldown := min(100*time.Millisecond, poll)
	periodic := func(every time.Duration, args river.JobArgs) *river.PeriodicJob {
		return river.NewPeriodicJob(river.PeriodicInterval(every),
			func() (river.JobArgs, *river.InsertOpts) { return args, nil },
			&river.PeriodicJobOpts{ID: args.Kind(), RunOnStart: true})
	}
	// Every worker states its own timeout (Worker.Timeout), after which
	// River cancels the job's context. River's rescuer, on the leader every
	// 30 s, takes the jobs still running whose attempt began longer ago than
	// RescueStuckJobsAfter, and makes available again (retryable, with the
	// worker's NextRetry) those among them whose own timeout has passed
	// too; it cannot tell a job of a replica that died from one still
	// running. RescueStuckJobsAfter is therefore past the longest timeout
	// by rescueMargin, as River's Config asks: only a job that outlived its
	// timeout and its margin runs again, and its email or delivery is made
	// under the same Message-ID or webhook-id, unless its record shows it
	// made already.
	longest := max(mail.Timeout(nil), hooks.Timeout(nil), sweepTimeout)
	return river.NewClient(riverpgxv5.New(st.Pool()), &river.Config{
		Queues: map[string]river.QueueConfig{
			jobs.QueueEmail:   {MaxWorkers: emailWorkers, FetchCooldown: cooldown, FetchPollInterval: poll},
			jobs.QueueNotice:  {MaxWorkers: emailWorkers, FetchCooldown: cooldown, FetchPollInterval: poll},
			jobs.QueueWebhook: {MaxWorkers: webhookWorkers},
			jobs.QueueSweep:   {MaxWorkers: 1},
		},
		Workers: workers,
		PeriodicJobs: []*river.PeriodicJob{
			periodic(deadlineSweep, jobs.DeadlineSweep{}),
			periodic(reminderSweep, jobs.ReminderSweep{}),
			periodic(sessionSweep, jobs.SessionSweep{}),
		},
		// Only for a worker that states no timeout; every worker here does.
		JobTimeout:           sweepTimeout,
		RescueStuckJobsAfter: longest + rescueMargin,
		// A sweep every two seconds would otherwise keep a day of
		// finished jobs.
		CompletedJobRetentionPeriod: time.Hour,
		Logger:                      slog.New(warnings{log.Handler()}),
	})
}

// sweep is the worker of a periodic sweep: run, bounded by sweepTimeout.
type sweep[T river.JobArgs] struct {
	river.WorkerDefaults[T]
	run func(ctx context.Context) error
}

func (s *sweep[T]) Work(ctx context.Context, _ *river.Job[T]) error { return s.run(ctx) }

// Timeout bounds one run of the sweep.
func (s *sweep[T]) Timeout(*river.Job[T]) time.Duration { return sweepTimeout }

// warnings passes on River's warnings and errors only: its routine
// messages (every fetch, every leadership renewal) are not worth a log line.
type warnings struct{ slog.Handler }

func (w warnings) Enabled(ctx context.Context, l slog.Level) bool {
	return l >= slog.LevelWarn && w.Handler.Enabled(ctx, l)
}

func (w warnings) WithAttrs(as []slog.Attr) slog.Handler { return warnings{w.Handler.WithAttrs(as)} }
func (w warnings) WithGroup(g string) slog.Handler       { return warnings{w.Handler.WithGroup(g)} }
