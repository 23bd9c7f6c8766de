package httpapi

import (
	"context"
	"log/slog"
	"net/http"
	"net/netip"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-chi/chi/v5"
	"github.com/google/uuid"

	"github.com/consensus-md/consensus/internal/live"
	"github.com/consensus-md/consensus/internal/room"
	"github.com/consensus-md/consensus/internal/venue"
)

// Server serves the whole HTTP surface.
type Server struct {
	venue         *venue.Venue
	pinger        Pinger
	origin        string
	mailFrom      string // CONSENSUS_MAIL_FROM, named by the home page
	operatorHash  [32]byte
	log           *slog.Logger
	limiter       *rateLimiter
	version       string
	healthTimeout time.Duration
	trusted       []string // TrustedProxies as CIDRs; front resolves the client behind them
	hsts          bool
	requests      RequestObserver
	dbTimeout     time.Duration
	breaker       Breaker
	hub           *live.Hub
	lists         *live.Workspaces
	beforeJoin    func(agreementID uuid.UUID, hub *live.Hub) // Options.BeforeJoin

	// parking keeps the connections of held requests outside net/http
	// (Listen); nil keeps them in their handlers.
	parking parking
	// detached counts the streams and held requests that left net/http,
	// for WaitDetached.
	detached sync.WaitGroup
	// reholding is what serving a parked connection's next request takes,
	// once Handler has built it.
	reholding atomic.Pointer[heldRoutes]
}

// Breaker remembers that the database stopped answering (the store).
type Breaker interface {
	// Refusing reports whether requests should not wait for the database.
	Refusing() bool
	// Suspect says some request ran out of its database time.
	Suspect()
	// Tripped ends when the database is found not answering.
	Tripped() context.Context
}

// Options configures a Server.
type Options struct {
	Venue *venue.Venue
	// Pinger is what /api/health asks about the database; required.
	Pinger            Pinger
	Origin            string
	OperatorTokenHash [32]byte
	Logger            *slog.Logger
	// MailFrom is the sender of invitation emails (CONSENSUS_MAIL_FROM),
	// which the home page names; empty names none.
	MailFrom string
	// RateLimit is exchange and claim requests a minute per client address and route; 0 disables.
	RateLimit int
	Version   string
	// TrustedProxies may name the client address with X-Forwarded-For;
	// empty means the connection's peer is the client.
	TrustedProxies []netip.Prefix
	// HSTS sends Strict-Transport-Security on every response (the public
	// origin is https); responses over TLS carry it anyway.
	HSTS bool
	// Requests, when set, hears about every request (metrics).
	Requests RequestObserver
	// DBTimeout bounds the database work of each request on the agent and
	// operator routes (CONSENSUS_DB_TIMEOUT); zero means 5 seconds.
	DBTimeout time.Duration
	// Breaker, when set, hears of every request that ran out of its
	// database time and, while it reports the database not answering, has
	// each request's database work fail at once (503 with Retry-After).
	Breaker Breaker
	// Live keeps the held requests and streams; something must
	// tell it about changes (roomnotify.Listen). Nil means a hub of the
	// default bounds that nothing wakes: held requests then end at their
	// wait.
	Live *live.Hub
	// Lists keeps the console's held reads of a workspace's agreement
	// list; like Live, something must tell it about changes. Nil means a
	// set that nothing wakes.
	Lists *live.Workspaces
	// BeforeJoin, for tests, runs in each held read of a participant's
	// room just before it joins Live, after its credential's lookup read
	// the room's state.
	BeforeJoin func(agreementID uuid.UUID, hub *live.Hub)
}

// New builds a Server. It panics without a Pinger: health would otherwise
// report a database it cannot see.
func New(o Options) *Server {
	if o.Pinger == nil {
		panic("httpapi: Options.Pinger is required")
	}
	if o.Live == nil {
		o.Live = live.New(0, 0)
	}
	if o.Lists == nil {
		o.Lists = live.NewWorkspaces(0, nil)
	}
	if o.DBTimeout <= 0 {
		o.DBTimeout = 5 * time.Second
	}
	if o.Venue != nil {
		o.Live.OnRoomChanged(o.Venue.RoomChanged)
	}
	return &Server{
		venue: o.Venue, pinger: o.Pinger, origin: o.Origin, mailFrom: o.MailFrom, operatorHash: o.OperatorTokenHash, log: o.Logger,
		limiter: newRateLimiter(o.RateLimit), version: o.Version, healthTimeout: min(2*time.Second, o.DBTimeout), dbTimeout: o.DBTimeout, breaker: o.Breaker,
		trusted: prefixStrings(o.TrustedProxies), hsts: o.HSTS, requests: o.Requests, hub: o.Live, lists: o.Lists,
		beforeJoin: o.BeforeJoin,
	}
}

// WaitDetached waits until every stream and held request that left
// net/http has ended, or ctx ends. After http.Server.Shutdown (whose
// OnShutdown ends their waits) it is what lets their last answers reach
// their clients before the process exits.
func (s *Server) WaitDetached(ctx context.Context) error {
	// A request served off net/http counts until its held read is
	// detached, so it is waited for first.
	if s.parking != nil {
		if err := s.parking.Wait(ctx); err != nil {
			return err
		}
	}
	done := make(chan struct{})
	go func() { s.detached.Wait(); close(done) }()
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Handler returns the router with every route and middleware.
func (s *Server) Handler() http.Handler {
	r := chi.NewRouter()
	r.Use(s.front)
	r.NotFound(func(w http.ResponseWriter, r *http.Request) {
		s.writeProblem(w, r, room.ErrNotFound)
	})
	// chi drops the Allow header when the 405 handler is replaced, so the
	// allowed methods are found again by matching each one.
	r.MethodNotAllowed(func(w http.ResponseWriter, req *http.Request) {
		var allowed []string
		for _, m := range []string{http.MethodGet, http.MethodHead, http.MethodPost, http.MethodPut, http.MethodPatch, http.MethodDelete} {
			if r.Match(chi.NewRouteContext(), m, req.URL.Path) {
				allowed = append(allowed, m)
			}
		}
		w.Header().Set("Allow", strings.Join(allowed, ", "))
		s.writeProblem(w, req, &Error{Code: ProblemMethodNotAllowed, Detail: "this route does not accept " + req.Method})
	})
	table := s.routes()
	s.mount(r, table)
	holds := chi.NewRouter()
	for _, rt := range table {
		if rt.Holds {
			holds.Get(rt.Pattern, http.NotFound)
		}
	}
	s.reholding.Store(&heldRoutes{handler: r, holds: holds})
	return r
}

func prefixStrings(ps []netip.Prefix) []string {
	out := make([]string, len(ps))
	for i, p := range ps {
		out[i] = p.String()
	}
	return out
}
