package ops

import (
	"net/http"
	"runtime"
	"strconv"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/consensus-md/consensus/internal/room"
	"github.com/consensus-md/consensus/internal/store"
)

// other is the label value for anything outside a label's closed set.
const other = "other"

// Metrics is the registry /metrics serves and the counters the rest of
// the service feeds.
type Metrics struct {
	reg *prometheus.Registry

	requests     *prometheus.CounterVec
	duration     *prometheus.HistogramVec
	inFlight     prometheus.Gauge
	events       *prometheus.CounterVec
	outcomes     *prometheus.CounterVec
	delivery     *prometheus.CounterVec
	certEnd      prometheus.Gauge
	certOnce     sync.Once
	reloads      *prometheus.CounterVec
	logLeaves    prometheus.Counter
	logSize      prometheus.Gauge
	logWitnessed *prometheus.GaugeVec
	logFailures  *prometheus.CounterVec
}

// NewMetrics registers every series of the service, the Go runtime's and
// the process's, and consensus_build_info for version.
func NewMetrics(version string) *Metrics {
	m := &Metrics{reg: prometheus.NewRegistry()}
	m.requests = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "consensus_http_requests_total",
		Help: "API requests answered, by route pattern (never the raw path), method and status.",
	}, []string{"route", "method", "status"})
	m.duration = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:    "consensus_http_request_duration_seconds",
		Help:    "Time from the request's arrival to the end of its answer, by route pattern and method.",
		Buckets: []float64{.005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60},
	}, []string{"route", "method"})
	m.inFlight = prometheus.NewGauge(prometheus.GaugeOpts{
		Name: "consensus_http_requests_in_flight",
		Help: "API requests being served now.",
	})
	m.events = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "consensus_events_total",
		Help: "Room events stored by this replica, by action.",
	}, []string{"action"})
	m.outcomes = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "consensus_outcomes_total",
		Help: "Agreements whose outcome this replica made final, by status.",
	}, []string{"status"})
	m.delivery = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "consensus_mail_delivery_attempts_total",
		Help: "Invitation email delivery attempts by this replica's outbox worker, by result: sent, retry (a temporary failure) or failed (for good).",
	}, []string{"result"})
	m.certEnd = prometheus.NewGauge(prometheus.GaugeOpts{
		Name: "consensus_tls_certificate_expiry_timestamp_seconds",
		Help: "When the served TLS certificate expires (Unix time); absent without TLS.",
	})
	m.reloads = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "consensus_tls_reloads_total",
		Help: "TLS certificate reloads on SIGHUP, by result: ok, or error (the previous certificate stays).",
	}, []string{"result"})
	m.logLeaves = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "consensus_log_leaves_total",
		Help: "Transparency log leaves this replica integrated.",
	})
	m.logSize = prometheus.NewGauge(prometheus.GaugeOpts{
		Name: "consensus_log_size",
		Help: "The transparency log's tree size at the newest checkpoint this replica signed.",
	})
	m.logWitnessed = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "consensus_log_witness_cosigned_size",
		Help: "The largest tree size each witness cosigned for this replica.",
	}, []string{"witness"})
	m.logFailures = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "consensus_log_witness_failures_total",
		Help: "Checkpoints a witness did not cosign, by witness and result: refused (it found the log inconsistent or untrusted: an alert) or unreachable.",
	}, []string{"witness", "result"})
	build := prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "consensus_build_info",
		Help: "Always 1; the labels say which build runs.",
	}, []string{"version", "goversion"})
	build.WithLabelValues(version, runtime.Version()).Set(1)

	m.reg.MustRegister(m.logLeaves, m.logSize, m.logWitnessed, m.logFailures, m.requests, m.duration, m.inFlight, m.events, m.outcomes, m.delivery, m.reloads, build,
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	// Known label values start at zero, so increase() sees the first one.
	for _, a := range []string{room.ActionComment, room.ActionQuestion, room.ActionChangeRequest, room.ActionAgree, room.ActionDisagree, room.ActionAbstain} {
		m.events.WithLabelValues(a)
	}
	for _, s := range []string{room.StatusReached, room.StatusDisagreed, room.StatusNoConsensus, room.StatusExpired} {
		m.outcomes.WithLabelValues(s)
	}
	for _, r := range []string{store.DeliverySent, store.DeliveryRetry, store.DeliveryFailed} {
		m.delivery.WithLabelValues(r)
	}
	m.reloads.WithLabelValues("ok")
	m.reloads.WithLabelValues("error")
	return m
}

// Handler serves the registry in the Prometheus text format.
func (m *Metrics) Handler() http.Handler {
	return promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{Registry: m.reg})
}

// WatchDatabase adds the pool statistics and the outbox depth of db,
// read at each scrape.
func (m *Metrics) WatchDatabase(db Database) {
	m.reg.MustRegister(newDatabaseCollector(db))
}

// WatchAdmitted adds consensus_http_connections_admitted, read from
// admitted at each scrape.
func (m *Metrics) WatchAdmitted(admitted func() int) {
	m.reg.MustRegister(prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Name: "consensus_http_connections_admitted",
		Help: "New API connections in their first request now, of the most admitted at once (64 per CPU); others wait to be accepted.",
	}, func() float64 { return float64(admitted()) }))
}

// methods are the label values of method; any other is "other".
var methods = map[string]bool{
	http.MethodGet: true, http.MethodHead: true, http.MethodPost: true, http.MethodPut: true,
	http.MethodPatch: true, http.MethodDelete: true, http.MethodOptions: true,
}

// RequestStarted counts a request in flight until RequestDone.
func (m *Metrics) RequestStarted() { m.inFlight.Inc() }

// RequestDone records one answered request. route is a route pattern
// ("unmatched" when none matched); a method outside the standard ones and
// a status outside 100-599 are recorded as "other".
func (m *Metrics) RequestDone(route, method string, status int, d time.Duration) {
	m.inFlight.Dec()
	if !methods[method] {
		method = other
	}
	code := other
	if status >= 100 && status <= 599 {
		code = strconv.Itoa(status)
	}
	m.requests.WithLabelValues(route, method, code).Inc()
	m.duration.WithLabelValues(route, method).Observe(d.Seconds())
}

// EventStored counts an event by action (store.Observer).
func (m *Metrics) EventStored(action string) {
	if !room.IsAdvisory(action) && !room.IsTerminal(action) {
		action = other
	}
	m.events.WithLabelValues(action).Inc()
}

// OutcomeSettled counts a final outcome by status (store.Observer).
func (m *Metrics) OutcomeSettled(status string) {
	switch status {
	case room.StatusReached, room.StatusDisagreed, room.StatusNoConsensus, room.StatusExpired:
	default:
		status = other
	}
	m.outcomes.WithLabelValues(status).Inc()
}

// DeliveryAttempted counts a delivery attempt by result (store.Observer).
func (m *Metrics) DeliveryAttempted(result string) {
	switch result {
	case store.DeliverySent, store.DeliveryRetry, store.DeliveryFailed:
	default:
		result = other
	}
	m.delivery.WithLabelValues(result).Inc()
}

// CertificateLoaded records the expiry of the certificate now served; the
// first call adds the series.
func (m *Metrics) CertificateLoaded(notAfter time.Time) {
	m.certOnce.Do(func() { m.reg.MustRegister(m.certEnd) })
	m.certEnd.Set(float64(notAfter.Unix()))
}

// CertificateReloaded counts a reload on SIGHUP: ok when err is nil.
func (m *Metrics) CertificateReloaded(err error) {
	result := "ok"
	if err != nil {
		result = "error"
	}
	m.reloads.WithLabelValues(result).Inc()
}

// LogIntegrated counts leaves integrated into a tree of size.
func (m *Metrics) LogIntegrated(leaves int, size int64) {
	m.logLeaves.Add(float64(leaves))
	m.logSize.Set(float64(size))
}

// LogWitnesses serves each named witness's failure counters at zero from
// the start: a counter series that first appears at 1 shows Prometheus no
// increase, so the first refusal would not fire ConsensusLogWitnessRefused.
func (m *Metrics) LogWitnesses(names []string) {
	for _, n := range names {
		m.logFailures.WithLabelValues(n, "refused")
		m.logFailures.WithLabelValues(n, "unreachable")
	}
}

// LogWitnessed records that witness cosigned the tree of size.
func (m *Metrics) LogWitnessed(witness string, size int64) {
	m.logWitnessed.WithLabelValues(witness).Set(float64(size))
}

// LogWitnessFailed counts a checkpoint witness did not cosign.
func (m *Metrics) LogWitnessFailed(witness string, refused bool) {
	result := "unreachable"
	if refused {
		result = "refused"
	}
	m.logFailures.WithLabelValues(witness, result).Inc()
}
