package stress

// The checks after the load: what the stored state must show of every
// attempt the clients made, and the load's report.

import (
	"fmt"
	"net/http"
	"sort"
	"strings"
	"time"
)

// ---- checks after the load ----

// loadReport is what a load did, for the log and the closing note.
type loadReport struct {
	attempts, retries, transportErrors, unavailable, replays, created int
	statuses                                                          map[int]int
	revoked, resent                                                   int
	outcomes                                                          map[string]int
}

func (r loadReport) String() string {
	var st []string
	for _, k := range sortedInts(r.statuses) {
		st = append(st, fmt.Sprintf("%d×%d", r.statuses[k], k))
	}
	return fmt.Sprintf("%d requests (%d retries, %d transport errors or client timeouts, %d answered 503), %d events created, %d replayed (200), %d revoked, %d resends; statuses %s; outcomes %v",
		r.attempts, r.retries, r.transportErrors, r.unavailable, r.created, r.replays, r.revoked, r.resent, strings.Join(st, " "), r.outcomes)
}

func sortedInts(m map[int]int) []int {
	var out []int
	for k := range m {
		out = append(out, k)
	}
	sort.Ints(out)
	return out
}

// verify checks the ledger against the stored state:
//   - every 2xx a client saw is in the database as it was answered (events
//     by id, seq, hash, action and body; claims by binding and token hash;
//     creates and revokes);
//   - one (participant, key) never got two different events, nor two 201s;
//   - after a revoke's 200, no request with that participant's credential
//     got a 2xx, and no event stored for it was first sent after the 200;
//   - every stored invariant of dbState.violations.
func (l *load) verify(s *dbState) loadReport {
	t := l.t
	t.Helper()
	atts := l.led.snapshot()
	rep := loadReport{statuses: map[int]int{}, outcomes: map[string]int{}}
	firstSent := map[string]time.Time{} // participant|key → first attempt sent
	byKey := map[string]*attempt{}
	created := map[string]int{}
	logical := map[string]bool{}
	var bad []string
	fail := func(format string, args ...any) { bad = append(bad, fmt.Sprintf(format, args...)) }
	l.led.mu.Lock()
	acks := make(map[string]time.Time, len(l.led.revokeAck))
	for k, v := range l.led.revokeAck {
		acks[k] = v
	}
	for _, n := range l.led.resent {
		rep.resent += n
	}
	notes := append([]string(nil), l.led.notes...)
	l.led.mu.Unlock()
	rep.revoked = len(acks)
	for _, a := range atts {
		rep.attempts++
		rep.statuses[a.Status]++
		if a.Err != "" {
			rep.transportErrors++
		}
		if a.Status == http.StatusServiceUnavailable {
			rep.unavailable++
		}
		id := a.Kind + "|" + a.ParticipantID + "|" + a.Key
		if a.Kind == "event" || a.Kind == "probe-event" {
			k := a.ParticipantID + "|" + a.Key
			if ft, ok := firstSent[k]; !ok || a.Sent.Before(ft) {
				firstSent[k] = a.Sent
			}
		}
		if logical[id] && (a.Kind == "event" || a.Kind == "claim") {
			rep.retries++
		}
		logical[id] = true
		if a.Status < 200 || a.Status >= 300 {
			continue
		}
		// A 2xx to a request sent after the participant's revoke was acknowledged.
		if ack, ok := acks[a.ParticipantID]; ok && a.Sent.After(ack) && a.Kind != "revoke" && a.Kind != "resend" {
			fail("%s for revoked participant %s sent %v after its revoke's 200 was answered %d", a.Kind, a.ParticipantID, a.Sent.Sub(ack).Round(time.Millisecond), a.Status)
		}
		switch a.Kind {
		case "event", "probe-event":
			k := a.ParticipantID + "|" + a.Key
			if a.Status == http.StatusCreated {
				rep.created++
				created[k]++
				if created[k] > 1 {
					fail("key %s got two 201s", k)
				}
			} else {
				rep.replays++
			}
			if prev, ok := byKey[k]; ok && prev.EventID != a.EventID {
				fail("key %s answered two different events (%s, %s)", k, prev.EventID, a.EventID)
			}
			byKey[k] = a
			e := s.EventByID[a.EventID]
			switch {
			case e == nil:
				fail("event %s (key %s, answered %d) is not in the database", a.EventID, k, a.Status)
			case e.ParticipantID != a.ParticipantID || e.Key != a.Key || e.Seq != a.Seq || e.Hash != a.Hash || e.Action != a.Action || e.Body != a.Body:
				fail("event %s differs from its answer: stored %s/%s/%d/%s/%s", a.EventID, e.ParticipantID, e.Key, e.Seq, e.Action, e.Hash)
			}
		case "claim":
			p := s.Participants[a.ParticipantID]
			if p == nil || p.BindingDigest == nil || *p.BindingDigest != a.BindingDigest || sha256Hex(a.Token) != fmt.Sprintf("%x", p.TokenHash) {
				fail("claim of %s answered 200 but the stored binding or token hash differs", a.ParticipantID)
			}
		case "create":
			if s.Agreements[a.AgreementID] == nil {
				fail("agreement %s answered 201 but is not stored", a.AgreementID)
			}
		case "revoke":
			if p := s.Participants[a.ParticipantID]; p == nil || p.RevokedAt == nil {
				fail("revoke of %s answered 200 but it is not revoked", a.ParticipantID)
			}
		}
	}
	// Nothing stored from a request first sent after the revoke's 200.
	for _, e := range s.Events {
		ack, ok := acks[e.ParticipantID]
		if !ok {
			continue
		}
		if first, seen := firstSent[e.ParticipantID+"|"+e.Key]; seen && first.After(ack) {
			fail("event %s (key %s) of revoked participant %s is stored, though first sent %v after its revoke's 200",
				e.ID, e.Key, e.ParticipantID, first.Sub(ack).Round(time.Millisecond))
		}
	}
	for _, a := range s.Agreements {
		rep.outcomes[a.Status]++
	}
	bad = append(bad, s.violations(l.v.origin)...)
	for _, n := range notes {
		bad = append(bad, "unexpected answer: "+n)
	}
	if len(bad) > 0 {
		if len(bad) > 40 {
			bad = append(bad[:40], fmt.Sprintf("… and %d more", len(bad)-40))
		}
		t.Errorf("%d problems after the load:\n  %s", len(bad), strings.Join(bad, "\n  "))
	}
	return rep
}
