package stress

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net/http"
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
