// Package logd runs the transparency log on a replica: it hears which
// rooms changed (as a roomnotify.Listener), integrates them about every
// CONSENSUS_LOG_INTERVAL (one replica at a time, venue.IntegrateLog), and
// submits each new checkpoint to the configured witnesses, storing the
// cosignatures they return. Nothing here runs on the append path: a
// witness that refuses or is down never delays an append, it is an alert
// (a log line, a metric, and /readyz's log detail).
package logd

import (
	"context"
	"errors"
	"log/slog"
	"net/http"
	"sync"
	"time"

	"github.com/google/uuid"

	"github.com/consensus-md/consensus/internal/venue"
	"github.com/consensus-md/consensus/internal/witness"
)

// reconcileEvery is how often an integration looks at every room rather
// than at the announced ones: an announcement is lost when the replica
// that committed stops before sending it.
const reconcileEvery = 30 * time.Second

// witnessTimeout bounds one add-checkpoint request.
const witnessTimeout = 10 * time.Second

// Observer hears what the log did; ops.Metrics is one.
type Observer interface {
	LogIntegrated(leaves int, size int64)
	LogWitnessed(witness string, size int64)
	LogWitnessFailed(witness string, refused bool)
}

// Loop integrates and witnesses. Its zero value is not usable: set Venue,
// Interval and Log; Witnesses may be empty.
type Loop struct {
	Venue     *venue.Venue
	Witnesses []witness.Witness
	Interval  time.Duration
	Log       *slog.Logger
	Observer  Observer
	HTTP      *http.Client

	mu        sync.Mutex
	dirty     map[uuid.UUID]struct{}
	reconcile bool
	kick      chan struct{}
	status    Status
}

// RoomChanged implements roomnotify.Listener: the room is integrated at
// the next round.
func (l *Loop) RoomChanged(id uuid.UUID) {
	l.mu.Lock()
	if l.dirty == nil {
		l.dirty = map[uuid.UUID]struct{}{}
	}
	l.dirty[id] = struct{}{}
	l.mu.Unlock()
}

// RoomsResumed implements roomnotify.Listener: changes made while nobody
// listened were missed, so the next round looks at every room.
func (l *Loop) RoomsResumed() {
	l.mu.Lock()
	l.reconcile = true
	l.mu.Unlock()
}

// Kick asks for a round now (tests, and a shutdown's last round).
func (l *Loop) Kick() {
	l.init()
	select {
	case l.kick <- struct{}{}:
	default:
	}
}

func (l *Loop) init() {
	l.mu.Lock()
	if l.kick == nil {
		l.kick = make(chan struct{}, 1)
	}
	l.mu.Unlock()
}

// Run integrates and witnesses until ctx ends; the first round looks at
// every room.
func (l *Loop) Run(ctx context.Context) {
	l.init()
	if l.HTTP == nil {
		l.HTTP = &http.Client{Timeout: witnessTimeout}
	}
	interval := l.Interval
	if interval <= 0 {
		interval = time.Second
	}
	l.RoomsResumed()
	lastFull := time.Time{}
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		full := time.Since(lastFull) >= reconcileEvery
		more, integrated := l.round(ctx, full)
		if integrated && full {
			lastFull = time.Now()
		}
		if more {
			continue
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		case <-l.kick:
		}
	}
}

// take empties the set of changed rooms; all reports a round over every
// room.
func (l *Loop) take(full bool) (ids []uuid.UUID, all bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	all = full || l.reconcile
	l.reconcile = false
	for id := range l.dirty {
		ids = append(ids, id)
	}
	clear(l.dirty)
	return ids, all
}

// putBack returns rooms a round did not integrate.
func (l *Loop) putBack(ids []uuid.UUID, all bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, id := range ids {
		l.dirty[id] = struct{}{}
	}
	l.reconcile = l.reconcile || all
}

// round runs one integration and, if this replica holds the log this
// round, submits the newest checkpoint to every witness that lacks it.
func (l *Loop) round(ctx context.Context, full bool) (more, integrated bool) {
	// A round with nothing announced still takes the lock, so that the
	// replica holding it is the one that asks the witnesses.
	ids, all := l.take(full)
	res, err := l.Venue.IntegrateLog(ctx, ids, all)
	switch {
	case errors.Is(err, venue.ErrLogBusy):
		l.putBack(ids, all)
		return false, false
	case err != nil:
		if ctx.Err() == nil {
			l.Log.Error("log: integration failed; the rooms wait for the next round", slog.String("error", err.Error()))
		}
		l.putBack(ids, all)
		return false, false
	}
	if res.Leaves > 0 {
		if l.Observer != nil {
			l.Observer.LogIntegrated(res.Leaves, res.Checkpoint.Size)
		}
		l.setSize(res.Checkpoint.Size)
	}
	if res.More {
		l.putBack(nil, true)
	}
	l.witness(ctx)
	return res.More, true
}
