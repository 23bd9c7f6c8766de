package stress

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net/http"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// attempt is one HTTP request a load client sent, kept for the checks
// made after the load.
type attempt struct {
	Kind          string // create, exchange, claim, event, room, revoke, resend, probe-room, probe-event
	Client        int    // which load client sent it, where that matters
	ParticipantID string
	InvitationID  string
	Key           string // Idempotency-Key of an event
	AsParticipant bool   // it carried the participant's token
	Replica       int
	Status        int
	Code          string
	Err           string
	Sent, Recv    time.Time
	Elapsed       time.Duration
	RetryAfter    bool
	// From 2xx answers.
	EventID, Hash, Action, Body string
	Seq                         int64
	BindingDigest, Token        string
	AgreementID                 string
	Session, Digest             string
}

// ledger records every attempt and every acknowledged revoke.
type ledger struct {
	mu         sync.Mutex
	attempts   []*attempt
	revokeSent map[string]time.Time // participant → first revoke request sent
	revokeAck  map[string]time.Time // participant → its revoke's 200 received
	resent     map[string]int       // invitation → resends acknowledged
	notes      []string             // unexpected answers, reported at the end
}

func newLedger() *ledger {
	return &ledger{revokeSent: map[string]time.Time{}, revokeAck: map[string]time.Time{}, resent: map[string]int{}}
}

func (l *ledger) add(a *attempt) {
	l.mu.Lock()
	l.attempts = append(l.attempts, a)
	l.mu.Unlock()
}

func (l *ledger) note(format string, args ...any) {
	l.mu.Lock()
	l.notes = append(l.notes, fmt.Sprintf(format, args...))
	l.mu.Unlock()
}

func (l *ledger) revoking(pid string) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	_, ok := l.revokeSent[pid]
	return ok
}

func (l *ledger) snapshot() []*attempt {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]*attempt(nil), l.attempts...)
}

// loadConfig sizes a load.
type loadConfig struct {
	agreements int
	workers    int     // participants driven at once
	comments   int     // at most this many comments each
	revoke     float64 // share of participants revoked while active
	resend     float64 // share of invitations resent (before exchange or after claim)
	double     float64 // share sending two different terminal decisions at once
	short      float64 // share of event and claim attempts sent with a 1–40 ms client timeout
	dup        float64 // share of comments sent twice at once, to two replicas, with one key
	// patience bounds the retries of one logical request (timeouts,
	// refused connections while a replica restarts, 503s).
	patience time.Duration
}

// mailRescue bounds how late an email can arrive when the replica sending
// it was killed mid-send: its job stays running until River's rescuer (on
// the leader, every 30 s) finds it past its timeout (the send timeout plus
// the record margin, 75 s), and then any replica sends it again under the
// same Message-ID.
const mailRescue = 150 * time.Second

// findMail waits up to wait for an email to p's invitation that accept
// takes; when none came and p is not being revoked (which sends none), it
// waits on, up to mailRescue, for one held up by a killed replica.
func (l *load) findMail(p *lp, accept func(invite) bool, wait time.Duration) (invite, bool) {
	if inv, ok := l.v.mail.find(p.inv, accept, wait); ok || l.led.revoking(p.pid) {
		return inv, ok
	}
	return l.v.mail.find(p.inv, accept, mailRescue)
}

// load drives many participants against every replica of a venue.
type load struct {
	t     *testing.T
	v     *venue
	cfg   loadConfig
	led   *ledger
	done  atomic.Int64 // participants finished
	total int
	http  *http.Client
	// onAttempt, when set, sees every attempt as it is recorded.
	onAttempt func(*attempt)
	// afterClaim, when set, runs once a participant holds its token,
	// before its events.
	afterClaim func(rng *rand.Rand, p *lp, token string)
}

func newLoad(t *testing.T, v *venue, cfg loadConfig) *load {
	return &load{t: t, v: v, cfg: cfg, led: newLedger(),
		http: &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 64, MaxConnsPerHost: 0}}}
}

// call sends build(replica) to a random replica, again on a transport
// error, a timeout or a 503 (with the same request, so the same
// Idempotency-Key), until an answer or patience runs out. Every attempt
// goes into the ledger; the last one is returned.
func (l *load) call(rng *rand.Rand, a attempt, short bool, build func(base string) request) *attempt {
	deadline := time.Now().Add(l.cfg.patience)
	for n := 0; ; n++ {
		i := rng.IntN(len(l.v.c.Replicas))
		req := build(l.v.c.Replicas[i].URL())
		req.Timeout = 15 * time.Second
		if short && rng.Float64() < l.cfg.short {
			req.Timeout = time.Duration(1+rng.IntN(40)) * time.Millisecond
		}
		r := do(l.http, req)
		at := a
		at.Replica, at.Status, at.Sent, at.Recv, at.Elapsed = i, r.Status, r.Sent, r.Received, r.Elapsed()
		if r.Err != nil {
			at.Status, at.Err = 0, r.Err.Error()
		} else {
			at.Code = r.Code()
			_, at.RetryAfter = retryAfter(r.Header)
			fillFrom(&at, r)
		}
		l.led.add(&at)
		if l.onAttempt != nil {
			l.onAttempt(&at)
		}
		retry := r.Err != nil || r.Status == http.StatusServiceUnavailable
		if !retry || time.Now().After(deadline) {
			return &at
		}
		time.Sleep(time.Duration(10+rng.IntN(40)*min(n, 10)) * time.Millisecond)
	}
}

// fillFrom copies what the checks need out of a 2xx answer.
func fillFrom(a *attempt, r *reply) {
	if r.Status < 200 || r.Status >= 300 {
		return
	}
	var m struct {
		Event struct {
			ID, Hash, Action, Body, ParticipantID string
			Seq                                   int64
		}
		BindingDigest    string
		ParticipantToken string
		ParticipantID    string
		AgreementID      string
		SessionToken     string
		RevisionDigest   string
	}
	_ = json.Unmarshal(r.Body, &m)
	a.Session, a.Digest = m.SessionToken, m.RevisionDigest
	a.EventID, a.Hash, a.Action, a.Body, a.Seq = m.Event.ID, m.Event.Hash, m.Event.Action, m.Event.Body, m.Event.Seq
	a.BindingDigest, a.Token = m.BindingDigest, m.ParticipantToken
	if a.AgreementID == "" {
		a.AgreementID = m.AgreementID
	}
}

// lp is one participant the load drives, with its plan.
type lp struct {
	pid, inv, agreement string
	required            bool
	revokeAt            string // "", "exchange", "claim", "events", "decide" (revoke and decision at once)
	resendAt            string // "", "exchange", "claim"
	decision            string // agree, disagree, abstain or "" (silent)
	double              bool
	comments            int
}

// createAll creates cfg.agreements agreements of three participants (two
// required, one optional) and plans what each participant does.
func (l *load) createAll(rng *rand.Rand) []*lp {
	l.t.Helper()
	var out []*lp
	for i := 0; i < l.cfg.agreements; i++ {
		body := agreementBody(fmt.Sprintf("Load %d", i), "Decide under load.", nil,
			spec{Name: "R1", Required: true}, spec{Name: "R2", Required: true}, spec{Name: "Opt", Required: false})
		a := l.call(rng, attempt{Kind: "create"}, false, func(base string) request {
			return request{Method: "POST", URL: base + "/api/v1/admin/agreements", Header: l.v.opHeader(), Body: body}
		})
		if a.Status != http.StatusCreated {
			l.t.Fatalf("create agreement %d: %d %s %s", i, a.Status, a.Code, a.Err)
		}
		// The answer's participants are read back from the database.
		ps := participantsOf(l.t, l.v, a.AgreementID)
		scenario := rng.Float64()
		for j, p := range ps {
			x := &lp{pid: p[0], inv: p[1], agreement: a.AgreementID, required: j < 2, decision: "agree", comments: rng.IntN(l.cfg.comments + 1)}
			switch {
			case scenario < 0.15 && j == 1:
				x.decision = "disagree"
			case scenario >= 0.15 && scenario < 0.30 && j == 1:
				x.decision = "abstain"
			case scenario >= 0.30 && scenario < 0.40 && j == 0:
				x.decision = ""
			}
			if rng.Float64() < l.cfg.revoke {
				x.revokeAt = []string{"exchange", "claim", "events", "decide"}[rng.IntN(4)]
			}
			if rng.Float64() < l.cfg.resend {
				x.resendAt = []string{"exchange", "claim"}[rng.IntN(2)]
			}
			x.double = rng.Float64() < l.cfg.double
			out = append(out, x)
		}
	}
	l.total = len(out)
	return out
}

// participantsOf returns (participant id, invitation id) in roster order.
func participantsOf(t *testing.T, v *venue, agreementID string) [][2]string {
	t.Helper()
	rows, err := v.db.Query(t.Context(), `SELECT p.id::text, i.id::text FROM participants p JOIN invitations i ON i.participant_id = p.id
		WHERE p.agreement_id = $1 ORDER BY p.position`, agreementID)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var out [][2]string
	for rows.Next() {
		var p, i string
		if err := rows.Scan(&p, &i); err != nil {
			t.Fatal(err)
		}
		out = append(out, [2]string{p, i})
	}
	return out
}

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
