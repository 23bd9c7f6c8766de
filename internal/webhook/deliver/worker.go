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

	"github.com/google/uuid"
	"github.com/riverqueue/river"

	"github.com/consensus-md/consensus/internal/jobs"
	"github.com/consensus-md/consensus/internal/room"
	"github.com/consensus-md/consensus/internal/store"
	"github.com/consensus-md/consensus/internal/webhook"
)

// Worker makes webhook deliveries; it is River's worker of jobs.Webhook,
// on every replica. The receiver is called outside any transaction, and
// each attempt is recorded on the delivery row, whose id is the webhook-id
// of every attempt.
//
// One slow receiver must not hold up the others: a replica makes at most
// PerEndpoint attempts to one endpoint at a time. A job whose endpoint
// stays busy is snoozed (put back for a moment, its attempt not counted)
// rather than holding a worker, so the queue's other workers keep
// delivering to every other endpoint.
type Worker struct {
	river.WorkerDefaults[jobs.Webhook]

	Store *store.Store
	// Key is the service's signing key (CONSENSUS_SIGNING_KEY), whose
	// public half /.well-known/consensus-keys publishes.
	Key ed25519.PrivateKey
	Log *slog.Logger
	// AllowLoopback lets deliveries reach loopback addresses (local runs).
	AllowLoopback bool
	// RootCAs, when set, replaces the system roots (a local test CA).
	RootCAs *x509.CertPool
	// PerEndpoint is how many attempts to one endpoint a replica makes at
	// once (default 2).
	PerEndpoint int
	// Wait is how long a job may wait for its busy endpoint while holding
	// a worker (default 250 ms); Busy is how long it is then put back
	// (default 1 s). A receiver that answers quickly frees its slot within
	// Wait; one that hangs costs each waiting job Wait, not its timeout.
	Wait, Busy time.Duration

	once     sync.Once
	client   *http.Client
	mu       sync.Mutex
	inFlight map[uuid.UUID]*endpointSlots
}

func (w *Worker) init() {
	w.once.Do(func() {
		if w.PerEndpoint <= 0 {
			w.PerEndpoint = 2
		}
		if w.Wait <= 0 {
			w.Wait = 250 * time.Millisecond
		}
		if w.Busy <= 0 {
			w.Busy = time.Second
		}
		w.inFlight = map[uuid.UUID]*endpointSlots{}
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

// endpointSlots is one endpoint's attempts in flight on this replica:
// ch holds a token per attempt, refs counts the jobs holding or waiting.
type endpointSlots struct {
	ch   chan struct{}
	refs int
}

// take reserves one of endpoint's PerEndpoint attempts, waiting at most
// Wait for one to end, and returns the release; false when the endpoint
// stayed busy.
func (w *Worker) take(ctx context.Context, endpoint uuid.UUID) (func(), bool) {
	w.mu.Lock()
	e := w.inFlight[endpoint]
	if e == nil {
		e = &endpointSlots{ch: make(chan struct{}, w.PerEndpoint)}
		w.inFlight[endpoint] = e
	}
	e.refs++
	w.mu.Unlock()
	unref := func() {
		w.mu.Lock()
		if e.refs--; e.refs == 0 {
			delete(w.inFlight, endpoint)
		}
		w.mu.Unlock()
	}
	t := time.NewTimer(w.Wait)
	defer t.Stop()
	select {
	case e.ch <- struct{}{}:
		return func() { <-e.ch; unref() }, true
	case <-t.C:
	case <-ctx.Done():
	}
	unref()
	return nil, false
}

// recordMargin is how long past the attempt's own timeout a job may take
// to record it.
const recordMargin = 15 * time.Second

// Timeout bounds a job: the attempt and its record.
func (w *Worker) Timeout(*river.Job[jobs.Webhook]) time.Duration {
	return webhook.Timeout + recordMargin
}

// NextRetry follows the webhook schedule: the same time the attempt's
// record shows.
func (w *Worker) NextRetry(job *river.Job[jobs.Webhook]) time.Time {
	next, ok := webhook.Next(job.Attempt, time.Now())
	if !ok {
		return time.Now()
	}
	return next
}

// errRetry is what Work returns after recording a failed attempt that the
// schedule retries.
type errRetry struct{ problem string }

func (e errRetry) Error() string { return "webhook: will retry: " + e.problem }

// Work makes one attempt of a delivery (River calls it). A delivery no
// longer to be made (made already, given up, or dropped with its endpoint)
// ends the job; so does one whose record finds it dropped meanwhile, which
// is then never attempted again, whatever endpoint the participant
// registers next.
func (w *Worker) Work(ctx context.Context, job *river.Job[jobs.Webhook]) error {
	w.init()
	release, ok := w.take(ctx, job.Args.ParticipantID)
	if !ok {
		return river.JobSnooze(w.Busy)
	}
	defer release()
	d, err := w.Store.WebhookDeliveryGet(ctx, job.Args.DeliveryID)
	if errors.Is(err, room.ErrNotFound) {
		return nil
	}
	if err != nil {
		return err
	}
	status, sendErr := w.send(ctx, d)
	if sendErr != nil && ctx.Err() != nil {
		return river.JobSnooze(0) // shutdown: the attempt does not count
	}
	dbctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), recordMargin)
	defer cancel()
	attempt, done := d.Attempts+1, time.Now().UTC()
	log := w.Log.With(slog.String("delivery_id", d.ID.String()), slog.Int("attempt", attempt), slog.Int("status", status))
	var result error
	switch {
	case sendErr == nil && status >= 200 && status < 300:
		log.Info("webhook: delivered")
		err = w.Store.WebhookDeliveryFinish(dbctx, d.ID, store.HookDelivered, status, "", done, done)
	case status == http.StatusGone:
		log.Info("webhook: the receiver answered 410 Gone; endpoint disabled")
		err = w.Store.InTx(dbctx, func(tx *store.Tx) error {
			if err := tx.WebhookDeliveryFinish(dbctx, d.ID, store.HookFailed, status, "410 Gone", done, done); err != nil {
				return err
			}
			return tx.WebhookDisable(dbctx, d.ParticipantID, d.ID, "the receiver answered 410 Gone", done)
		})
	default:
		problem := "HTTP " + strconv.Itoa(status)
		if sendErr != nil {
			problem = sendErr.Error()
		}
		if next, ok := webhook.Next(max(attempt, job.Attempt), done); ok && job.Attempt < job.MaxAttempts {
			log.Info("webhook: will retry", slog.String("problem", problem), slog.Time("next_attempt_at", next))
			err = w.Store.WebhookDeliveryFinish(dbctx, d.ID, store.HookRetrying, status, problem, next, done)
			result = errRetry{problem}
		} else {
			log.Warn("webhook: failed for good", slog.String("problem", problem))
			err = w.Store.WebhookDeliveryFinish(dbctx, d.ID, store.HookFailed, status, problem, done, done)
		}
	}
	if errors.Is(err, store.ErrAlreadyRecorded) {
		log.Info("webhook: the delivery was dropped while its attempt was in flight")
		return nil
	}
	if err != nil {
		return err
	}
	return result
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
