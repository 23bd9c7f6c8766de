package ops

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"net/http"
	"net/http/pprof"
	"sync"
	"sync/atomic"
	"time"
)

// Readiness states.
const (
	stateStarting int32 = iota
	stateServing
	stateDraining
)

// CheckTimeout bounds the database checks of one /readyz, below the
// usual probe timeout (Kubernetes: 1 s by default, 2 s in our manifests)
// so the probe gets an answer rather than a timeout.
const CheckTimeout = 1500 * time.Millisecond

// Server answers /metrics, /livez, /readyz and, when enabled, pprof.
type Server struct {
	metrics *Metrics
	log     *slog.Logger
	pprof   bool
	state   atomic.Int32
	db      atomic.Pointer[Database]
	logInfo atomic.Pointer[func() any]

	mu        sync.Mutex
	lastReady *bool // the previous check's result, to log changes only
}

// NewServer returns a server that reports "starting" until Serving.
func NewServer(m *Metrics, log *slog.Logger, pprof bool) *Server {
	return &Server{metrics: m, log: log, pprof: pprof}
}

// Serving makes /readyz check db: ready while it answers and its schema
// is current.
func (s *Server) Serving(db Database) {
	s.db.Store(&db)
	s.state.CompareAndSwap(stateStarting, stateServing)
}

// WatchLog makes /readyz carry status() as its log detail: the
// transparency log's size and its witnesses' states. It never changes
// readiness: a refusing witness is an alert, not a reason to stop serving.
func (s *Server) WatchLog(status func() any) { s.logInfo.Store(&status) }

// Draining makes /readyz fail from now on: the process is shutting down.
func (s *Server) Draining() { s.state.Store(stateDraining) }

// Handler routes the operations endpoints. pprof's paths answer 404
// unless profiling was enabled.
func (s *Server) Handler() http.Handler {
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", s.metrics.Handler())
	mux.HandleFunc("GET /livez", func(w http.ResponseWriter, _ *http.Request) {
		writeStatus(w, http.StatusOK, probe{Status: "live"})
	})
	mux.HandleFunc("GET /readyz", s.handleReady)
	if s.pprof {
		mux.HandleFunc("/debug/pprof/", pprof.Index)
		mux.HandleFunc("/debug/pprof/cmdline", pprof.Cmdline)
		mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
		mux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
		mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
	}
	return mux
}

// Service is the name /livez and /readyz carry, so a health check can
// tell consensusd from another program on the same port.
const Service = "consensusd"

// probe is the body of /livez and /readyz.
type probe struct {
	Status   string `json:"status"`
	Service  string `json:"service"`
	Database string `json:"database,omitempty"`
	Schema   string `json:"schema,omitempty"`
	Log      any    `json:"log,omitempty"`
}

func (s *Server) handleReady(w http.ResponseWriter, r *http.Request) {
	switch s.state.Load() {
	case stateStarting:
		writeStatus(w, http.StatusServiceUnavailable, probe{Status: "starting"})
		return
	case stateDraining:
		writeStatus(w, http.StatusServiceUnavailable, probe{Status: "draining"})
		return
	}
	db := *s.db.Load()
	ctx, cancel := context.WithTimeout(r.Context(), CheckTimeout)
	defer cancel()
	p := probe{Status: "ready", Database: "ok", Schema: "current"}
	err := db.Ping(ctx)
	if err == nil {
		if err = db.SchemaCurrent(ctx); err != nil {
			p.Schema = "behind"
		}
	} else {
		p.Database, p.Schema = "unreachable", "unknown"
	}
	if err != nil && errors.Is(ctx.Err(), context.DeadlineExceeded) {
		p.Database, p.Schema = "timeout", "unknown"
	}
	status := http.StatusOK
	if err != nil {
		p.Status, status = "unavailable", http.StatusServiceUnavailable
	}
	if f := s.logInfo.Load(); f != nil {
		p.Log = (*f)()
	}
	s.logChange(err)
	writeStatus(w, status, p)
}

// logChange logs when readiness flips, not at every probe.
func (s *Server) logChange(err error) {
	ready := err == nil
	s.mu.Lock()
	changed := s.lastReady == nil || *s.lastReady != ready
	s.lastReady = &ready
	s.mu.Unlock()
	switch {
	case changed && ready:
		s.log.Info("ready: the database answers and its schema is current")
	case changed:
		s.log.Warn("not ready", slog.String("reason", err.Error()))
	}
}

func writeStatus(w http.ResponseWriter, status int, p probe) {
	p.Service = Service
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(p)
}
