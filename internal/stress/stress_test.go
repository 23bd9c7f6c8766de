package stress

import (
	"math/rand/v2"
	"os"
	"strconv"
	"testing"
	"time"
)

// seed is STRESS_SEED when set (to replay a run), else a fresh one; the
// properties checked hold for every seed.
func seed(t *testing.T) uint64 {
	if s := os.Getenv("STRESS_SEED"); s != "" {
		n, err := strconv.ParseUint(s, 10, 64)
		if err != nil {
			t.Fatalf("STRESS_SEED: %v", err)
		}
		return n
	}
	n := uint64(time.Now().UnixNano())
	t.Logf("seed %d (STRESS_SEED=%d replays the plan)", n, n)
	return n
}

// replicaLoad is the load of the replica and crash tests: agreements × 3
// participants in make test, fullAgreements with STRESS=1 (more comments,
// more clients at once).
func replicaLoad(agreements, fullAgreements int) loadConfig {
	cfg := loadConfig{agreements: agreements, workers: 12, comments: 3, revoke: 0.15, resend: 0.15, double: 0.2, short: 0.1, dup: 0.15, patience: 90 * time.Second}
	if full() {
		cfg.agreements, cfg.workers, cfg.comments = fullAgreements, 32, 6
	}
	return cfg
}

// TestStressReplicas: three consensusd processes on one
// PostgreSQL; clients pick a replica at random per request and retry
// timeouts (some forced with a 1–40 ms client timeout) with the same
// Idempotency-Key; revocations and resends are interleaved with the
// participants' own requests; some participants send two different
// terminal decisions at once. Afterwards, from the database: at most one
// terminal decision per participant, nothing stored from a participant
// after its revoke was acknowledged, every outcome equal to room.Evaluate
// over its stored events, no key stored twice, every chain verifies, and
// every 2xx a client saw is stored as answered.
func TestStressReplicas(t *testing.T) {
	t.Parallel()
	sd := seed(t)
	v := newVenue(t, venueOpts{replicas: 3})
	l := newLoad(t, v, replicaLoad(100, 300))
	ps := l.createAll(rand.New(rand.NewPCG(sd, 0)))
	start := time.Now()
	l.run(ps, sd)
	took := time.Since(start)
	rep := l.verify(loadState(t, v.db))
	t.Logf("3 replicas, %d agreements × 3 participants in %v: %s", l.cfg.agreements, took.Round(time.Millisecond), rep)
	if rep.revoked == 0 {
		t.Errorf("no participant was revoked: the plan exercised no revocation")
	}
}

// TestStressCrash: the same load, while replicas are SIGKILLed
// mid-load and restarted on their address (three kills, six with
// STRESS=1). Clients retry
// on refused and broken connections with the same Idempotency-Key.
// Afterwards nothing acknowledged is missing and nothing half-written is
// visible: the invariants above, plus every participant's state agrees
// with its binding and events, every final outcome has its deciding event,
// every reached outcome its artifact.
func TestStressCrash(t *testing.T) {
	t.Parallel()
	sd := seed(t)
	v := newVenue(t, venueOpts{replicas: 3})
	l := newLoad(t, v, replicaLoad(40, 200))
	ps := l.createAll(rand.New(rand.NewPCG(sd, 0)))
	done := make(chan struct{})
	start := time.Now()
	go func() { defer close(done); l.run(ps, sd) }()
	type kill struct {
		at      float64 // share of participants done
		replica int
	}
	plan := []kill{{0.15, 1}, {0.4, 2}, {0.65, 1}}
	if full() {
		plan = []kill{{0.1, 1}, {0.2, 2}, {0.3, 0}, {0.45, 1}, {0.6, 2}, {0.75, 0}}
	}
	kills := 0
	for _, k := range plan {
		if !eventually(5*time.Minute, func() bool {
			select {
			case <-done:
				return true
			default:
			}
			return float64(l.done.Load()) >= k.at*float64(l.total)
		}) {
			t.Fatal("the load made no progress for 5 minutes")
		}
		select {
		case <-done:
		default:
			r := v.c.Replicas[k.replica]
			r.Kill(t)
			kills++
			r.Restart(t)
		}
	}
	<-done
	took := time.Since(start)
	if kills < len(plan)-1 {
		t.Errorf("only %d of %d planned SIGKILLs happened before the load ended; the test proves too little about crashes", kills, len(plan))
	}
	rep := l.verify(loadState(t, v.db))
	t.Logf("3 replicas, %d SIGKILLs and restarts, %d agreements × 3 participants in %v: %s", kills, l.cfg.agreements, took.Round(time.Millisecond), rep)
}
