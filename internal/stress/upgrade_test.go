package stress

import (
	"math/rand/v2"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/consensus-md/consensus/internal/proctest"
)

// TestRollingUpgrade (SPEC §22 R-HA-UPGRADE): the previous release, built
// from the commit CHANGELOG.md names, runs three replicas on a fresh
// database under the stress load (with webhooks); one at a time, each is
// stopped with SIGTERM and replaced by this tree's consensusd, the first of
// which migrates the database while the previous release keeps serving.
// Afterwards: no request answered 5xx, every 2xx is stored as answered
// (the load's checks), every invitation email and webhook delivery was
// made, and every room change queued its deliveries whichever release
// appended it. It builds a release, so it runs only with UPGRADE=1 (make
// upgrade-test).
func TestRollingUpgrade(t *testing.T) {
	if os.Getenv("UPGRADE") != "1" {
		t.Skip("UPGRADE=1 (make upgrade-test) runs the rolling upgrade from the previous release")
	}
	version, commit := proctest.PreviousRelease(t)
	start := time.Now()
	prev := proctest.BuildAt(t, commit)
	next := proctest.Binary(t)
	t.Logf("built %s (commit %s) and this tree in %v", version, commit, time.Since(start).Round(time.Second))
	sd := seed(t)
	pg := proctest.StartPostgres(t)
	hooks := newHookSink(t)
	v := newVenue(t, venueOpts{replicas: 3, dbURL: pg.URL(), bin: prev,
		env: map[string]string{"CONSENSUS_WEBHOOK_CA_FILE": hooks.caFile}})
	l := newLoad(t, v, loadConfig{agreements: 40, workers: 12, comments: 3, revoke: 0.1, resend: 0.1, double: 0.2, short: 0.1, dup: 0.15, patience: 60 * time.Second})
	l.afterClaim = func(rng *rand.Rand, p *lp, token string) { hooks.register(l, rng, p, token) }
	ps := l.createAll(rand.New(rand.NewPCG(sd, 0)))
	done := make(chan struct{})
	go func() { defer close(done); l.run(ps, sd) }()
	for i, at := range []int64{20, 40, 60} {
		if !eventually(3*time.Minute, func() bool { return l.done.Load() >= int64(l.total)*at/100 }) {
			t.Fatal("the load made no progress")
		}
		v.c.Replicas[i].Replace(t, next)
		t.Logf("replica %d runs this tree's consensusd (%d of %d participants done)", i, l.done.Load(), l.total)
	}
	<-done
	rep := l.verify(loadState(t, v.db))
	failed := 0
	for _, a := range l.led.snapshot() {
		if a.Status >= 500 {
			failed++
			if failed <= 10 {
				t.Errorf("%s by %s on replica %d answered %d %s", a.Kind, a.ParticipantID, a.Replica, a.Status, a.Code)
			}
		}
	}
	emails := missing(func() []string { return dbStrings(t, v, `SELECT message_id FROM outbox`) }, v.mail.messageIDs, 60*time.Second)
	deliveries := missing(func() []string { return dbStrings(t, v, deliveriesOwed) }, hooks.heard, 60*time.Second)
	unqueued := unqueuedChanges(t, v)
	t.Logf("rolling upgrade %s → this tree under load: %s; %d answered 5xx; emails missing %d, webhook deliveries missing %d, room changes that queued no delivery %d",
		version, rep, failed, len(emails), len(deliveries), len(unqueued))
	if len(emails) > 0 || len(deliveries) > 0 {
		t.Errorf("%d emails and %d webhook deliveries were never made", len(emails), len(deliveries))
	}
	if len(unqueued) > 0 {
		t.Errorf("%d room changes queued no webhook delivery (a release's appends no longer queue them?):\n  %s", len(unqueued), strings.Join(unqueued, "\n  "))
	}
}
