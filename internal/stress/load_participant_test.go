package stress

// The load's clients: each participant following the guide, with the
// revokes, resends and probes its plan asks for.

import (
	"fmt"
	"math/rand/v2"
	"net/http"
	"sync"
	"time"
)

// run drives every participant, cfg.workers at a time.
func (l *load) run(ps []*lp, seed uint64) {
	sem := make(chan struct{}, l.cfg.workers)
	var wg sync.WaitGroup
	for i, p := range ps {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			defer l.done.Add(1)
			l.participant(rand.New(rand.NewPCG(seed, uint64(i))), p)
		}()
	}
	wg.Wait()
}

// revoke revokes p in the background; the returned channel closes once
// the revoke was answered.
func (l *load) revoke(rng *rand.Rand, p *lp) chan struct{} {
	done := make(chan struct{})
	l.led.mu.Lock()
	if _, ok := l.led.revokeSent[p.pid]; !ok {
		l.led.revokeSent[p.pid] = time.Now()
	}
	l.led.mu.Unlock()
	seed := rng.Uint64()
	go func() {
		defer close(done)
		r := rand.New(rand.NewPCG(seed, 1))
		a := l.call(r, attempt{Kind: "revoke", ParticipantID: p.pid, InvitationID: p.inv}, false, func(base string) request {
			return request{Method: "POST", URL: base + "/api/v1/admin/participants/" + p.pid + "/revoke", Header: l.v.opHeader()}
		})
		if a.Status == http.StatusOK {
			l.led.mu.Lock()
			l.led.revokeAck[p.pid] = a.Recv
			l.led.mu.Unlock()
		} else {
			l.led.note("revoke %s: %d %s %s", p.pid, a.Status, a.Code, a.Err)
		}
	}()
	return done
}

func (l *load) resend(rng *rand.Rand, p *lp) {
	a := l.call(rng, attempt{Kind: "resend", ParticipantID: p.pid, InvitationID: p.inv}, false, func(base string) request {
		return request{Method: "POST", URL: base + "/api/v1/admin/invitations/" + p.inv + "/resend", Header: l.v.opHeader()}
	})
	switch {
	case a.Status == http.StatusAccepted:
		l.led.mu.Lock()
		l.led.resent[p.inv]++
		l.led.mu.Unlock()
	case a.Status == http.StatusConflict && l.led.revoking(p.pid):
	default:
		l.led.note("resend %s: %d %s %s", p.inv, a.Status, a.Code, a.Err)
	}
}

// participant is one invited agent following the guide, with its plan.
func (l *load) participant(rng *rand.Rand, p *lp) {
	var revoked chan struct{}
	revokeNow := func() {
		if revoked == nil {
			revoked = l.revoke(rng, p)
		}
	}
	defer func() {
		if revoked != nil {
			<-revoked
		}
	}()
	inv, ok := l.findMail(p, nil, 60*time.Second)
	if !ok {
		l.led.note("no invitation email for %s", p.inv)
		return
	}
	if p.resendAt == "exchange" {
		l.resend(rng, p)
	}
	if p.revokeAt == "exchange" {
		revokeNow()
	}
	tried := map[string]bool{}
	var digest, token string
	// Exchange, then claim; a resend in between sends the agent back to
	// its inbox for the newest email.
	for step := 0; token == "" && step < 20; step++ {
		if tried[inv.Secret] {
			next, ok := l.findMail(p, func(x invite) bool { return !tried[x.Secret] }, 20*time.Second)
			if !ok {
				if !l.led.revoking(p.pid) {
					l.led.note("participant %s: every secret refused and no newer email", p.pid)
				}
				return
			}
			inv = next
		}
		secret := inv.Secret
		a := l.call(rng, attempt{Kind: "exchange", ParticipantID: p.pid, InvitationID: p.inv}, false, func(base string) request {
			return request{Method: "POST", URL: agentURL(base, p.inv, "exchange"), Body: exchangeBody(secret)}
		})
		if a.Status == http.StatusNotFound {
			if l.led.revoking(p.pid) {
				return
			}
			tried[secret] = true // rotated by a resend: look for the newer email
			continue
		}
		if a.Status != http.StatusOK {
			l.led.note("exchange %s: %d %s %s", p.inv, a.Status, a.Code, a.Err)
			return
		}
		session := a.Session
		digest = a.Digest
		proof := inv.Proof
	claim:
		for c := 0; c < 10; c++ {
			ca := l.call(rng, attempt{Kind: "claim", ParticipantID: p.pid, InvitationID: p.inv}, true, func(base string) request {
				return request{Method: "POST", URL: agentURL(base, p.inv, "claim"), Header: hdr("Authorization", "Consensus-Session "+session), Body: claimBody(proof, inv.Inbox)}
			})
			switch ca.Status {
			case http.StatusOK:
				token = ca.Token
				break claim
			case http.StatusForbidden: // the proof was rotated by a resend
				next, ok := l.findMail(p, func(x invite) bool { return x.Proof != proof && !tried[x.Secret] }, 20*time.Second)
				if !ok {
					if !l.led.revoking(p.pid) {
						l.led.note("claim %s: 403 and no newer email", p.inv)
					}
					return
				}
				inv, proof = next, next.Proof
			case http.StatusNotFound, http.StatusUnauthorized:
				if l.led.revoking(p.pid) {
					return
				}
				tried[secret] = true // exchange again
				break claim
			default:
				l.led.note("claim %s: %d %s %s", p.inv, ca.Status, ca.Code, ca.Err)
				return
			}
		}
	}
	if token == "" {
		return
	}
	if l.afterClaim != nil {
		l.afterClaim(rng, p, token)
	}
	if p.resendAt == "claim" {
		l.resend(rng, p)
	}
	if p.revokeAt == "claim" {
		revokeNow()
	}
	// post sends with r, the caller's own generator (concurrent posts
	// each get one: a rand.Rand is not safe for concurrent use).
	post := func(r *rand.Rand, key, action, body string, short bool) *attempt {
		return l.call(r, attempt{Kind: "event", ParticipantID: p.pid, InvitationID: p.inv, Key: key, AsParticipant: true}, short, func(base string) request {
			return request{Method: "POST", URL: agentURL(base, p.inv, "events"), Header: hdr("Authorization", participantAuth(token), "Idempotency-Key", key), Body: eventBody(action, body, 1, digest)}
		})
	}
	stop := func(a *attempt) bool {
		switch {
		case a.Status == http.StatusCreated || a.Status == http.StatusOK:
			return false
		case a.Status == http.StatusUnauthorized && l.led.revoking(p.pid):
			return true
		case a.Status == http.StatusConflict && (a.Code == "room-closed" || a.Code == "already-decided"):
			return true
		}
		l.led.note("event %s by %s: %d %s %s", a.Key, p.pid, a.Status, a.Code, a.Err)
		return true
	}
	short := p.pid[:8]
	for i := 0; i < p.comments; i++ {
		if p.revokeAt == "events" && i == 1 {
			revokeNow()
		}
		key, text := fmt.Sprintf("%s-comment-%d", short, i), fmt.Sprintf("Note %d from %s.", i, short)
		if rng.Float64() < l.cfg.dup {
			// A client that resent before the first answer came back.
			var wg sync.WaitGroup
			var x, y *attempt
			r1, r2 := rand.New(rand.NewPCG(rng.Uint64(), 1)), rand.New(rand.NewPCG(rng.Uint64(), 2))
			wg.Add(2)
			go func() { defer wg.Done(); x = post(r1, key, "comment", text, false) }()
			go func() { defer wg.Done(); y = post(r2, key, "comment", text, false) }()
			wg.Wait()
			if stop(x) || stop(y) {
				return
			}
		} else if stop(post(rng, key, "comment", text, true)) {
			return
		}
		l.call(rng, attempt{Kind: "room", ParticipantID: p.pid, InvitationID: p.inv, AsParticipant: true}, false, func(base string) request {
			return request{Method: "GET", URL: agentURL(base, p.inv, "room"), Header: hdr("Authorization", participantAuth(token))}
		})
	}
	if p.revokeAt == "events" || p.revokeAt == "decide" {
		revokeNow() // for "decide", the decision below races the revoke
	}
	switch {
	case p.decision == "":
	case p.double:
		other := map[string]string{"agree": "disagree", "disagree": "abstain", "abstain": "agree"}[p.decision]
		var wg sync.WaitGroup
		var x, y *attempt
		r1, r2 := rand.New(rand.NewPCG(rng.Uint64(), 1)), rand.New(rand.NewPCG(rng.Uint64(), 2))
		wg.Add(2)
		go func() { defer wg.Done(); x = post(r1, short+"-decide-a", p.decision, "", true) }()
		go func() { defer wg.Done(); y = post(r2, short+"-decide-b", other, "", true) }()
		wg.Wait()
		stop(x)
		stop(y)
	default:
		stop(post(rng, short+"-decide", p.decision, "", true))
	}
	// A revoked participant probes once its revoke was acknowledged: the
	// token must be refused everywhere from then on.
	if revoked != nil {
		<-revoked
		l.probe(rng, p, token, digest)
	}
}

// probe sends a room read and a new event with a revoked participant's
// token, after the revoke was acknowledged.
func (l *load) probe(rng *rand.Rand, p *lp, token, digest string) {
	l.call(rng, attempt{Kind: "probe-room", ParticipantID: p.pid, InvitationID: p.inv, AsParticipant: true}, false, func(base string) request {
		return request{Method: "GET", URL: agentURL(base, p.inv, "room"), Header: hdr("Authorization", participantAuth(token))}
	})
	key := p.pid[:8] + "-after-revoke"
	l.call(rng, attempt{Kind: "probe-event", ParticipantID: p.pid, InvitationID: p.inv, Key: key, AsParticipant: true}, false, func(base string) request {
		return request{Method: "POST", URL: agentURL(base, p.inv, "events"), Header: hdr("Authorization", participantAuth(token), "Idempotency-Key", key), Body: eventBody("comment", "after my revoke", 1, digest)}
	})
}
