// Package daemon wires consensusd together: migrations, the store, the HTTP
// server and the outbox worker, with graceful shutdown.
package daemon

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"sync"
	"time"

	"github.com/consensus-md/consensus/internal/config"
	"github.com/consensus-md/consensus/internal/httpapi"
	"github.com/consensus-md/consensus/internal/mail"
	"github.com/consensus-md/consensus/internal/outbox"
	"github.com/consensus-md/consensus/internal/secret"
	"github.com/consensus-md/consensus/internal/store"
	"github.com/consensus-md/consensus/internal/venue"
)

// Options tune a run; tests use them, production leaves them zero.
type Options struct {
	// Listener, when set, is used instead of listening on cfg.Listen.
	Listener net.Listener
	// Ready, when set, receives the listen address once serving.
	Ready chan<- string
	// Now replaces the clock.
	Now func() time.Time
	// Outbox tunes the worker (poll, backoff); zero values take defaults.
	Outbox outbox.Worker
	// MailOptions are passed to mail.Open.
	MailOptions mail.Options
}

// Run migrates, serves and delivers mail until ctx ends.
func Run(ctx context.Context, cfg *config.Config, log *slog.Logger, opt Options) error {
	if opt.Now == nil {
		opt.Now = time.Now
	}
	if err := store.Migrate(ctx, cfg.DatabaseURL); err != nil {
		return err
	}
	st, err := store.Open(ctx, cfg.DatabaseURL, store.WithTimeout(cfg.DBTimeout))
	if err != nil {
		return err
	}
	defer st.Close()
	keys, err := secret.DeriveKeys(cfg.TokenKey)
	if err != nil {
		return err
	}
	mo := opt.MailOptions
	if mo.Password == "" {
		mo.Password = cfg.SMTPPassword
	}
	transport, err := mail.Open(cfg.MailURL, mo)
	if err != nil {
		return fmt.Errorf("CONSENSUS_MAIL_URL: %w", err)
	}
	defer transport.Close()

	v := &venue.Venue{Store: st, Keys: keys, Origin: cfg.PublicOrigin, Now: opt.Now}
	api := httpapi.New(httpapi.Options{Venue: v, Pinger: st, Origin: cfg.PublicOrigin, OperatorTokenHash: cfg.OperatorTokenHash, Logger: log, RateLimit: cfg.RateLimit, Version: cfg.Version, DBTimeout: cfg.DBTimeout})
	srv := &http.Server{Handler: api.Handler(), ReadHeaderTimeout: 10 * time.Second, ReadTimeout: 30 * time.Second, WriteTimeout: 60 * time.Second, IdleTimeout: 2 * time.Minute}

	ln := opt.Listener
	if ln == nil {
		if ln, err = net.Listen("tcp", cfg.Listen); err != nil {
			return fmt.Errorf("CONSENSUS_LISTEN: %w", err)
		}
	}
	worker := opt.Outbox
	if worker.Poll <= 0 {
		worker.Poll = cfg.OutboxPoll
	}
	worker.Store, worker.Keys, worker.Transport, worker.From, worker.Log, worker.Now = st, keys, transport, cfg.MailFrom, log, opt.Now

	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var wg sync.WaitGroup
	wg.Add(2)
	go func() { defer wg.Done(); worker.Run(ctx) }()
	go func() { defer wg.Done(); sweepSessions(ctx, st, opt.Now, log) }()

	log.Info("consensusd serving", slog.String("listen", ln.Addr().String()), slog.String("origin", cfg.PublicOrigin), slog.String("version", cfg.Version))
	if opt.Ready != nil {
		opt.Ready <- ln.Addr().String()
	}
	serveErr := make(chan error, 1)
	go func() { serveErr <- srv.Serve(ln) }()
	select {
	case <-ctx.Done():
	case err = <-serveErr:
	}
	shutdownCtx, stop := context.WithTimeout(context.WithoutCancel(ctx), 15*time.Second)
	defer stop()
	_ = srv.Shutdown(shutdownCtx)
	cancel()
	wg.Wait()
	if errors.Is(err, http.ErrServerClosed) {
		err = nil
	}
	return err
}

// sweepSessions deletes expired session rows now and then; they can no
// longer authenticate anything.
func sweepSessions(ctx context.Context, st *store.Store, now func() time.Time, log *slog.Logger) {
	t := time.NewTicker(10 * time.Minute)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			if _, err := st.SessionDeleteExpired(ctx, now()); err != nil && ctx.Err() == nil {
				log.Warn("session sweep failed", slog.String("error", err.Error()))
			}
		}
	}
}
