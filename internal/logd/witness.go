package logd

import (
	"context"
	"errors"
	"log/slog"
	"strings"
	"sync"
	"time"

	"golang.org/x/mod/sumdb/tlog"

	"github.com/consensus-md/consensus/internal/store"
	"github.com/consensus-md/consensus/internal/witness"
)

// Status is what /readyz says of the log: its size and each witness's
// state. A refusing or unreachable witness never makes a replica unready
// (appends do not wait for witnesses); it is reported here.
type Status struct {
	Size      int64           `json:"size"`
	Witnesses []WitnessStatus `json:"witnesses,omitempty"`
}

// WitnessStatus is one witness's state: "cosigning" (it cosigned the
// newest checkpoint it was sent), "refused" (it refused one: an alert) or
// "unreachable".
type WitnessStatus struct {
	Name   string `json:"name"`
	State  string `json:"state"`
	Size   int64  `json:"size"`
	Detail string `json:"detail,omitempty"`
}

// Status returns the log's state as this replica last saw it.
func (l *Loop) Status() Status {
	l.mu.Lock()
	defer l.mu.Unlock()
	s := l.status
	s.Witnesses = append([]WitnessStatus(nil), s.Witnesses...)
	return s
}

func (l *Loop) setSize(n int64) {
	l.mu.Lock()
	l.status.Size = max(l.status.Size, n)
	l.mu.Unlock()
}

// witness sends the newest checkpoint to every witness whose cosignature
// it lacks, all at once, and stores what comes back.
func (l *Loop) witness(ctx context.Context) {
	if len(l.Witnesses) == 0 {
		return
	}
	st := l.Venue.Store
	cp, err := st.LogCheckpointLatest(ctx)
	if err != nil {
		return // no checkpoint yet, or the database will answer next round
	}
	l.setSize(cp.Size)
	states, err := st.LogWitnesses(ctx)
	if err != nil {
		return
	}
	byName := map[string]store.LogWitness{}
	for _, s := range states {
		byName[s.Name] = s
	}
	cosigned := map[string]bool{}
	for _, line := range cp.Cosignatures {
		for _, w := range l.Witnesses {
			if strings.HasPrefix(line, "— "+w.Name()+" ") {
				cosigned[w.Name()] = true
			}
		}
	}
	var wg sync.WaitGroup
	results := make([]WitnessStatus, len(l.Witnesses))
	for i, w := range l.Witnesses {
		s := byName[w.Name()]
		if cosigned[w.Name()] || (s.Refused && s.FailedSize != nil && *s.FailedSize == cp.Size) {
			results[i] = statusOf(w.Name(), s, cosigned[w.Name()], cp.Size)
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			results[i] = l.submit(ctx, w, s.Size, cp)
		}()
	}
	wg.Wait()
	l.mu.Lock()
	l.status.Witnesses = results
	l.mu.Unlock()
}

func statusOf(name string, s store.LogWitness, cosigned bool, size int64) WitnessStatus {
	switch {
	case cosigned:
		return WitnessStatus{Name: name, State: "cosigning", Size: size}
	case s.Refused:
		return WitnessStatus{Name: name, State: "refused", Size: s.Size, Detail: deref(s.Failure)}
	default:
		return WitnessStatus{Name: name, State: "unreachable", Size: s.Size, Detail: deref(s.Failure)}
	}
}

func deref(p *string) string {
	if p == nil {
		return ""
	}
	return *p
}

// submit sends cp to w, whose last cosigned size the log believes is old;
// a witness that says it holds another size is asked again from there,
// once.
func (l *Loop) submit(ctx context.Context, w witness.Witness, old int64, cp store.LogCheckpoint) WitnessStatus {
	st := l.Venue.Store
	now := time.Now().UTC()
	var err error
	for attempt := 0; attempt < 2; attempt++ {
		if old > cp.Size {
			err = &witness.RefusedError{Status: 409, Body: "the witness holds a larger tree than the log: the log lost leaves it had shown"}
			break
		}
		var lines []string
		lines, err = l.send(ctx, w, old, cp)
		if err == nil {
			for _, line := range lines {
				if e := st.LogCosignatureInsert(ctx, cp.Size, w.Name(), line, now); e != nil {
					err = e
				}
			}
			if err == nil {
				err = st.LogWitnessCosigned(ctx, w.Name(), cp.Size, now)
			}
			if err == nil {
				if l.Observer != nil {
					l.Observer.LogWitnessed(w.Name(), cp.Size)
				}
				return WitnessStatus{Name: w.Name(), State: "cosigning", Size: cp.Size}
			}
			break
		}
		var conflict *witness.ConflictError
		if errors.As(err, &conflict) && conflict.Known >= 0 && conflict.Known != old {
			old = conflict.Known
			continue
		}
		break
	}
	var refused *witness.RefusedError
	var conflict *witness.ConflictError
	isRefusal := errors.As(err, &refused) || errors.As(err, &conflict)
	var known *int64
	if isRefusal {
		l.Log.Error("log: a witness refused the checkpoint: the log's history may have been changed",
			slog.String("witness", w.Name()), slog.Int64("size", cp.Size), slog.Int64("witness_size", old), slog.String("error", err.Error()))
	} else {
		l.Log.Warn("log: a witness did not cosign; it is asked again next round",
			slog.String("witness", w.Name()), slog.Int64("size", cp.Size), slog.String("error", err.Error()))
	}
	if old > 0 {
		known = &old
	}
	_ = st.LogWitnessFailed(ctx, w.Name(), cp.Size, known, err.Error(), isRefusal, now)
	if l.Observer != nil {
		l.Observer.LogWitnessFailed(w.Name(), isRefusal)
	}
	state := "unreachable"
	if isRefusal {
		state = "refused"
	}
	return WitnessStatus{Name: w.Name(), State: state, Size: old, Detail: err.Error()}
}

func (l *Loop) send(ctx context.Context, w witness.Witness, old int64, cp store.LogCheckpoint) ([]string, error) {
	proof, err := l.consistency(ctx, cp.Size, old)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(ctx, witnessTimeout)
	defer cancel()
	return witness.AddCheckpoint(ctx, l.HTTP, w, old, proof, []byte(cp.Signed))
}

func (l *Loop) consistency(ctx context.Context, size, old int64) (tlog.TreeProof, error) {
	if old == 0 || old == size {
		return nil, nil
	}
	return l.Venue.LogConsistency(ctx, size, old)
}
