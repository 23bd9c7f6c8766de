package deliver

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/consensus-md/consensus/internal/room"
	"github.com/consensus-md/consensus/internal/store"
	"github.com/consensus-md/consensus/internal/webhook"
)

// Worker drains the webhook queue. Workers on every replica share it: a
// delivery is locked (FOR UPDATE SKIP LOCKED) while it is being made.
type Worker struct {
	Store *store.Store
	// Key is the service's signing key (CONSENSUS_SIGNING_KEY), whose
	// public half /.well-known/consensus-keys publishes.
	Key ed25519.PrivateKey
	Log *slog.Logger
	// AllowLoopback lets deliveries reach loopback addresses (local runs).
	AllowLoopback bool
	// RootCAs, when set, replaces the system roots (a local test CA).
	RootCAs *x509.CertPool
	// Poll is how long an idle worker waits before looking again when no
	// room change woke it (default 1 s).
	Poll time.Duration
	// Concurrency is how many deliveries run at once (default 4).
	Concurrency int

	once   sync.Once
	kick   chan struct{}
	client *http.Client
}

func (w *Worker) init() {
	w.once.Do(func() {
		if w.Poll <= 0 {
			w.Poll = time.Second
		}
		if w.Concurrency <= 0 {
			w.Concurrency = 4
		}
		w.kick = make(chan struct{}, 1)
		w.client = NewClient(w.AllowLoopback, w.RootCAs, nil)
	})
}

// NewClient is the HTTP client of deliveries: every connection checked by
// Dialer, no proxy (it would dial for us, unchecked), no redirects, and
// webhook.Timeout per request. A nil resolver is the system's.
func NewClient(allowLoopback bool, roots *x509.CertPool, r *net.Resolver) *http.Client {
	t := &http.Transport{
		Proxy: nil, DialContext: webhook.Dialer(allowLoopback, r).DialContext, ForceAttemptHTTP2: true,
		TLSClientConfig: &tls.Config{RootCAs: roots, MinVersion: tls.VersionTLS12}, TLSHandshakeTimeout: 5 * time.Second,
		MaxIdleConnsPerHost: 2, IdleConnTimeout: 30 * time.Second, ResponseHeaderTimeout: webhook.Timeout,
	}
	return &http.Client{Transport: t, Timeout: webhook.Timeout, CheckRedirect: func(*http.Request, []*http.Request) error {
		return http.ErrUseLastResponse
	}}
}

// RoomChanged wakes the workers: the change may have queued deliveries.
func (w *Worker) RoomChanged() {
	w.init()
	select {
	case w.kick <- struct{}{}:
	default:
	}
}

// Run delivers until ctx ends.
// kickSpacing is the shortest time between two looks for due deliveries
// that room changes cause.
const kickSpacing = 200 * time.Millisecond

func (w *Worker) Run(ctx context.Context) {
	w.init()
	var wg sync.WaitGroup
	for range w.Concurrency {
		wg.Go(func() {
			var looked time.Time
			for ctx.Err() == nil {
				looked = time.Now()
				found, err := w.DeliverOne(ctx)
				if err != nil && ctx.Err() == nil {
					w.Log.Error("webhook: delivery round failed", slog.String("error", err.Error()))
				}
				if found && err == nil {
					continue
				}
				select {
				case <-ctx.Done():
				case <-w.kick:
					// Every room change kicks, by the thousand under load,
					// and almost none queues a delivery: look at most
					// every kickSpacing (an idle worker looks at once).
					if wait := kickSpacing - time.Since(looked); wait > 0 {
						select {
						case <-ctx.Done():
						case <-time.After(wait):
						}
					}
				case <-time.After(w.Poll):
				}
			}
		})
	}
	wg.Wait()
}

// leaseMargin is how long past the attempt's own timeout a leased
// delivery stays with its worker, for recording the attempt.
const leaseMargin = 20 * time.Second

// DeliverOne makes the next due delivery, if any, and reports whether there
// was one. The delivery is leased (no other worker takes it until the
// lease runs out) and the receiver is called outside any transaction; if
// the process dies mid-call the lease runs out and the delivery is made
// again (at-least-once, under the same webhook-id).
func (w *Worker) DeliverOne(ctx context.Context) (bool, error) {
	w.init()
	dbctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), webhook.Timeout+leaseMargin)
	defer cancel()
	now := time.Now().UTC()
	d, err := w.Store.WebhookDeliveryLease(dbctx, now, now.Add(webhook.Timeout+leaseMargin))
	if errors.Is(err, room.ErrNotFound) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	status, sendErr := w.send(ctx, d)
	if sendErr != nil && ctx.Err() != nil {
		// Shutdown: the attempt does not count, and another replica may
		// make it at once.
		return true, w.Store.WebhookDeliveryRelease(dbctx, d.ID, time.Now().UTC())
	}
	attempt, done := d.Attempts+1, time.Now().UTC()
	log := w.Log.With(slog.String("delivery_id", d.ID.String()), slog.Int("attempt", attempt), slog.Int("status", status))
	switch {
	case sendErr == nil && status >= 200 && status < 300:
		log.Info("webhook: delivered")
		return true, w.Store.WebhookDeliveryFinish(dbctx, d.ID, store.HookDelivered, status, "", done, done)
	case status == http.StatusGone:
		log.Info("webhook: the receiver answered 410 Gone; endpoint disabled")
		return true, w.Store.InTx(dbctx, func(tx *store.Tx) error {
			if err := tx.WebhookDisable(dbctx, d.ParticipantID, d.ID, "the receiver answered 410 Gone", done); err != nil {
				return err
			}
			return tx.WebhookDeliveryFinish(dbctx, d.ID, store.HookFailed, status, "410 Gone", done, done)
		})
	}
	problem := "HTTP " + strconv.Itoa(status)
	if sendErr != nil {
		problem = sendErr.Error()
	}
	if next, ok := webhook.Next(attempt, done); ok {
		log.Info("webhook: will retry", slog.String("problem", problem), slog.Time("next_attempt_at", next))
		return true, w.Store.WebhookDeliveryFinish(dbctx, d.ID, store.HookRetrying, status, problem, next, done)
	}
	log.Warn("webhook: failed for good", slog.String("problem", problem))
	return true, w.Store.WebhookDeliveryFinish(dbctx, d.ID, store.HookFailed, status, problem, done, done)
}

// send makes one attempt and returns the receiver's status (0 when none
// answered). Errors never quote the URL: its path or query could hold the
// receiver's own secret.
func (w *Worker) send(ctx context.Context, d store.WebhookDelivery) (int, error) {
	u, err := webhook.CheckURL(d.URL, w.AllowLoopback)
	if err != nil {
		return 0, err
	}
	body := Body(d)
	id, ts := d.ID.String(), time.Now().Unix()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, u.String(), bytes.NewReader(body))
	if err != nil {
		return 0, errors.New("cannot build the request")
	}
	h := req.Header
	h.Set("Content-Type", "application/json")
	h.Set("User-Agent", "Consensus-Webhooks/1")
	h.Set(webhook.HeaderID, id)
	h.Set(webhook.HeaderTimestamp, strconv.FormatInt(ts, 10))
	h.Set(webhook.HeaderSignature, webhook.Sign(w.Key, id, ts, body))
	resp, err := w.client.Do(req)
	if err != nil {
		if refusal := webhook.Refusal(err); refusal != nil {
			return 0, refusal
		}
		return 0, errors.New("no answer from " + u.Hostname() + " (connection failed or timed out)")
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	return resp.StatusCode, nil
}
