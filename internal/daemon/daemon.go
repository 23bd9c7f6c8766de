// Package daemon wires consensusd together: the operations listener,
// migrations, the store, the API server (HTTP, or HTTPS with a certificate
// reloaded on SIGHUP), the job queue (River: emails, webhook deliveries
// and the periodic sweeps), and the graceful shutdown.
package daemon

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/riverqueue/river"

	"github.com/consensus-md/consensus/internal/batch"
	"github.com/consensus-md/consensus/internal/config"
	"github.com/consensus-md/consensus/internal/httpapi"
	"github.com/consensus-md/consensus/internal/live"
	"github.com/consensus-md/consensus/internal/logd"
	"github.com/consensus-md/consensus/internal/mail"
	"github.com/consensus-md/consensus/internal/ops"
	"github.com/consensus-md/consensus/internal/outbox"
	"github.com/consensus-md/consensus/internal/roomnotify"
	"github.com/consensus-md/consensus/internal/secret"
	"github.com/consensus-md/consensus/internal/store"
	"github.com/consensus-md/consensus/internal/venue"
	"github.com/consensus-md/consensus/internal/webhook/deliver"
)

// Options tune a run; tests use them, production leaves them zero.
type Options struct {
	// Listener, when set, is used instead of listening on cfg.Listen.
	Listener net.Listener
	// OpsListener, when set, is used instead of listening on cfg.OpsListen.
	OpsListener net.Listener
	// Ready, when set, receives the listen address once serving.
	Ready chan<- string
	// Now replaces the clock.
	Now func() time.Time
	// Outbox tunes the email worker (backoff, send timeout); zero values
	// take defaults.
	Outbox struct{ BaseBackoff, MaxBackoff, SendTimeout time.Duration }
	// MailOptions are passed to mail.Open.
	MailOptions mail.Options
	// ReplyPoll bounds how long the reply mailbox goes unread (30s when
	// zero); see reply.Reader.
	ReplyPoll time.Duration
	// BeforeJoin, for tests, is httpapi.Options.BeforeJoin.
	BeforeJoin func(agreementID uuid.UUID, hub *live.Hub)
}

// Run serves until ctx ends, then shuts down gracefully. In order: the
// operations listener starts (/livez answers, /readyz says "starting"),
// the certificate is read, migrations apply, the API and the workers
// start and /readyz turns ready. When ctx ends, /readyz fails, after
// CONSENSUS_SHUTDOWN_DELAY the API listener closes, requests in flight get
// CONSENSUS_SHUTDOWN_GRACE to finish, then the workers stop. Run returns
// nil after a shutdown and the first error that prevents serving
// otherwise, naming the setting when one is at fault.
func Run(ctx context.Context, cfg *config.Config, log *slog.Logger, opt Options) error {
	if opt.Now == nil {
		opt.Now = time.Now
	}
	// From here on SIGHUP reloads (or is ignored): its default would end
	// the process.
	hup := make(chan os.Signal, 1)
	signal.Notify(hup, syscall.SIGHUP)
	defer signal.Stop(hup)
	metrics := ops.NewMetrics(cfg.Version)
	health := ops.NewServer(metrics, log, cfg.Pprof)
	opsLn, err := listen(opt.OpsListener, cfg.OpsListen, "CONSENSUS_OPS_LISTEN")
	if err != nil {
		return err
	}
	opsSrv := &http.Server{Handler: health.Handler(), ReadHeaderTimeout: 10 * time.Second, IdleTimeout: time.Minute,
		ErrorLog: slog.NewLogLogger(log.Handler(), slog.LevelWarn)}
	go func() { _ = opsSrv.Serve(opsLn) }()
	defer opsSrv.Close() // last: probes and scrapes answer during the drain

	// The API port is taken now, so a port in use stops the start before
	// any migration; nothing is served from it until the end of Run.
	ln, err := listen(opt.Listener, cfg.Listen, "CONSENSUS_LISTEN")
	if err != nil {
		return err
	}
	defer ln.Close()
	var cert *certificate
	if cfg.TLS() {
		if cert, err = loadCertificate(cfg, metrics, log); err != nil {
			return fmt.Errorf("CONSENSUS_TLS_CERT_FILE: %w", err)
		}
	}
	st, err := store.Open(ctx, cfg.DatabaseURL, store.WithTimeout(cfg.DBTimeout))
	if err != nil {
		return stoppedEarly(ctx, log, err)
	}
	defer st.Close()
	for _, w := range cfg.Warnings() {
		log.Warn(w)
	}
	if err := checkRole(ctx, cfg, st, log); err != nil {
		return stoppedEarly(ctx, log, err)
	}
	if err := store.Migrate(ctx, cfg.DatabaseURL); err != nil {
		return stoppedEarly(ctx, log, err)
	}
	warnUnguardedAudit(ctx, st, log)
	st.SetObserver(metrics)
	metrics.WatchDatabase(st)
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

	batcher := batch.New(st) // closed before st: its deferred Close runs first
	defer batcher.Close()
	v := &venue.Venue{Store: st, Batch: batcher, Keys: keys, Origin: cfg.PublicOrigin, Now: opt.Now, Signer: signingKey(cfg, log),
		Webhooks: venue.WebhookPolicy{AllowLoopback: cfg.WebhookAllowLoopback}, ReplyAddress: cfg.Reply.Address,
		RoomCacheBytes: cfg.RoomCacheBytes}
	if v.LogSigner, err = logSigner(cfg, v.Signer); err != nil {
		return err
	}
	metrics.WatchRoomCache(v.RoomCacheStats)
	replies, err := replyReader(cfg, st, v, keys, log, opt.ReplyPoll)
	if err != nil {
		return err
	}
	if err := v.RegisterSigningKey(ctx); err != nil {
		return stoppedEarly(ctx, log, fmt.Errorf("register the signing key: %w", err))
	}
	hub := live.New(0, 0)
	lists := live.NewWorkspaces(0, st.AgreementWorkspaces)
	api := httpapi.New(httpapi.Options{Venue: v, Live: hub, Lists: lists, Pinger: st, Origin: cfg.PublicOrigin, MailFrom: cfg.MailFrom, OperatorTokenHash: cfg.OperatorTokenHash,
		Logger: log, RateLimit: cfg.RateLimit, Version: cfg.Version, TrustedProxies: cfg.TrustedProxies,
		HSTS: strings.HasPrefix(cfg.PublicOrigin, "https://"), Requests: metrics, DBTimeout: cfg.DBTimeout, Breaker: st,
		BeforeJoin: opt.BeforeJoin})
	srv := &http.Server{Handler: api.Handler(), ReadHeaderTimeout: cfg.ReadHeaderTimeout, ReadTimeout: cfg.ReadTimeout,
		WriteTimeout: cfg.WriteTimeout, IdleTimeout: cfg.IdleTimeout, ErrorLog: slog.NewLogLogger(log.Handler(), slog.LevelWarn),
		ConnContext: api.ConnContext, ConnState: api.ConnState}
	// The API serves on api.Listen's listener (CONSENSUS_PARKED_CONNECTIONS
	// on): held requests wait outside net/http and their connections come
	// back through it. For TLS the
	// daemon makes the TLS listener itself, inside that one, and offers
	// HTTP/2 as ServeTLS would.
	serving := ln
	if cert != nil {
		srv.TLSConfig = cert.tlsConfig()
		srv.TLSConfig.NextProtos = []string{"h2", "http/1.1"}
		serving = tls.NewListener(ln, srv.TLSConfig)
	}
	idle := cfg.IdleTimeout
	if idle <= 0 {
		idle = cfg.ReadTimeout // net/http's rule for a keep-alive connection's wait
	}
	if cfg.ParkedConnections {
		serving = api.Listen(serving, idle, cfg.ReadHeaderTimeout)
	}
	metrics.WatchAdmitted(api.Admitted)
	// Held requests and streams answer at once when shutdown begins, so
	// the grace period is not spent waiting for them.
	srv.RegisterOnShutdown(hub.Shutdown)
	srv.RegisterOnShutdown(lists.Shutdown)

	// The job queue (River) and the other workers run until the API has
	// drained: a delivery cut short then is not counted and runs again on
	// any replica.
	workCtx, stopWork := context.WithCancel(context.WithoutCancel(ctx))
	defer stopWork()
	worker := &outbox.Worker{Store: st, Keys: keys, Transport: transport, From: cfg.MailFrom, Log: log, Now: opt.Now,
		BaseBackoff: opt.Outbox.BaseBackoff, MaxBackoff: opt.Outbox.MaxBackoff, SendTimeout: opt.Outbox.SendTimeout, ReplyAddress: cfg.Reply.Address,
		Origin: cfg.PublicOrigin}
	hooks := &deliver.Worker{Store: st, Key: v.Signer, Log: log, AllowLoopback: cfg.WebhookAllowLoopback, RootCAs: cfg.WebhookRoots}
	queue, err := newQueue(st, worker, hooks, cfg.OutboxPoll, opt.Now, log)
	if err != nil {
		return err
	}
	if err := queue.Start(workCtx); err != nil {
		return stoppedEarly(ctx, log, fmt.Errorf("start the job queue: %w", err))
	}
	logLoop := &logd.Loop{Venue: v, Witnesses: cfg.Log.Witnesses, Interval: cfg.Log.Interval, Log: log, Observer: metrics}
	witnesses := make([]string, len(cfg.Log.Witnesses))
	for i, w := range cfg.Log.Witnesses {
		witnesses[i] = w.Name()
	}
	metrics.LogWitnesses(witnesses)
	health.WatchLog(func() any { return logLoop.Status() })
	var wg sync.WaitGroup
	wg.Add(4)
	go func() { defer wg.Done(); roomnotify.Listen(workCtx, st, live.Listeners{hub, lists, logLoop}, log) }()
	go func() { defer wg.Done(); logLoop.Run(workCtx) }()
	go func() { defer wg.Done(); lists.Run(workCtx) }()
	go func() { defer wg.Done(); reloadOnHangup(workCtx, hup, cert, log) }()
	if replies != nil {
		wg.Add(1)
		go func() { defer wg.Done(); replies.Run(workCtx) }()
	}

	serveErr := make(chan error, 1)
	go func() {
		serveErr <- srv.Serve(serving)
	}()
	health.Serving(st)
	log.Info("consensusd serving", slog.String("listen", ln.Addr().String()), slog.Bool("tls", cert != nil),
		slog.String("ops", opsLn.Addr().String()), slog.String("origin", cfg.PublicOrigin), slog.String("version", cfg.Version))
	if opt.Ready != nil {
		opt.Ready <- ln.Addr().String()
	}

	select {
	case <-ctx.Done():
	case err = <-serveErr: // the listener failed: stop as on SIGTERM
	}
	shutdown(srv, api, health, cfg, log, err != nil)
	stopQueue(queue, log)
	stopWork()
	wg.Wait()
	log.Info("consensusd stopped")
	if errors.Is(err, http.ErrServerClosed) {
		err = nil
	}
	return err
}

// shutdown fails readiness, waits the delay (unless the listener already
// failed), closes the listener and gives requests in flight the grace
// period (with the streams and held requests that left net/http, which
// answer at once); connections still open after it are closed.
func shutdown(srv *http.Server, api *httpapi.Server, health *ops.Server, cfg *config.Config, log *slog.Logger, failed bool) {
	health.Draining()
	log.Info("shutting down: readiness fails now", slog.Duration("delay", cfg.ShutdownDelay), slog.Duration("grace", cfg.ShutdownGrace))
	if !failed && cfg.ShutdownDelay > 0 {
		time.Sleep(cfg.ShutdownDelay)
	}
	graceCtx, cancel := context.WithTimeout(context.Background(), cfg.ShutdownGrace)
	defer cancel()
	// Only once no request is left in net/http can no more leave it: then
	// the ones that left are waited for.
	err := srv.Shutdown(graceCtx)
	if err == nil {
		err = api.WaitDetached(graceCtx)
	}
	if err != nil {
		log.Warn("grace period over: closing the connections still open", slog.String("error", err.Error()))
		_ = srv.Close()
		return
	}
	log.Info("requests in flight finished")
}

// stoppedEarly is err, unless ctx ended (SIGTERM while migrating or
// connecting): that is a stop asked for, not a failure. An interrupted
// migration step rolls back; the next start applies it.
func stoppedEarly(ctx context.Context, log *slog.Logger, err error) error {
	if ctx.Err() != nil {
		log.Info("consensusd stopped before serving")
		return nil
	}
	return err
}

// listen returns ln, or listens on addr; an error names the setting.
func listen(ln net.Listener, addr, setting string) (net.Listener, error) {
	if ln != nil {
		return ln, nil
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", setting, err)
	}
	return ln, nil
}

// reloadOnHangup rereads the TLS certificate on each SIGHUP until ctx
// ends. Without TLS, SIGHUP only logs that there is nothing to reload
// (rather than ending the process, its default action).
func reloadOnHangup(ctx context.Context, hup <-chan os.Signal, cert *certificate, log *slog.Logger) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-hup:
			if cert == nil {
				log.Info("SIGHUP: no TLS certificate to reload")
				continue
			}
			cert.reload()
		}
	}
}

// stopQueue stops the job queue: jobs running are cancelled (an email or
// delivery cut short is not counted and is made again by any replica) and
// given a moment to record what they did.
func stopQueue(queue *river.Client[pgx.Tx], log *slog.Logger) {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if err := queue.StopAndCancel(ctx); err != nil {
		log.Warn("job queue: stop", slog.String("error", err.Error()))
	}
}
