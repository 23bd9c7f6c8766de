package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"time"

	"golang.org/x/mod/sumdb/note"

	"github.com/consensus-md/consensus/internal/translog"
)

// The log step (issue 44, "Speed"): how soon a record's proof carries the
// witness's cosignature after the deciding event (logproof below), and
// how many leaves a second the integrator appends (logintegrate.go).

// logResult is what the log step measured.
type logResult struct {
	// proof availability
	proofRooms int
	proofWait  []time.Duration // deciding 201 → first cosigned proof, per room
	decideP99  time.Duration   // the deciding posts' own latency
	missing    int             // rooms whose cosigned proof did not come within proofLimit
	verified   int             // proofs that verified (log key, inclusion, the witness's cosignature)
	integ      *integrationResult
}

// proofLimit bounds the wait for one room's cosigned proof.
const proofLimit = 30 * time.Second

// proofPoll is how often a room's proof is asked for.
const proofPoll = 25 * time.Millisecond

func (b *bench) logPhase(ctx context.Context) error {
	res := &logResult{}
	b.logRes = res
	if b.cfg.ProofRooms > 0 {
		if err := b.proofAvailability(ctx, res); err != nil {
			return err
		}
	}
	if b.cfg.LogRooms > 0 {
		var err error
		if res.integ, err = b.integrationThroughput(ctx); err != nil {
			return err
		}
	}
	return nil
}

// proofAvailability makes cfg.ProofRooms rooms of two required agents,
// then, one room every proofSpacing, has both agree and times, from the
// second agree's 201, the first GET …/record/proof answering 200 whose
// checkpoint carries the witness's cosignature line.
func (b *bench) proofAvailability(ctx context.Context, res *logResult) error {
	cfg := b.cfg
	n := cfg.ProofRooms
	cfg.logf("== log: %d rooms of 2 agents driven to an outcome; deciding 201 → first proof cosigned by the witness", n)
	rooms, err := b.createAgreementSet(ctx, len(b.world.allAgreements()), n, 2)
	if err != nil {
		return err
	}
	if err := b.readInvitations(ctx); err != nil {
		return err
	}
	var ps []*participant
	for _, a := range rooms {
		ps = append(ps, a.parts...)
	}
	if _, err := b.exchangeAll(ctx, ps); err != nil {
		return fmt.Errorf("log rooms: %w", err)
	}
	if _, err := b.claimAll(ctx, ps); err != nil {
		return fmt.Errorf("log rooms: %w", err)
	}
	res.proofRooms = n
	logKey, err := translog.NewVerifier(b.svc.log.vkey)
	if err != nil {
		return err
	}
	witnessKey, err := translog.NewVerifier(b.witness.vkey)
	if err != nil {
		return err
	}
	// One room every spacing: the deciding moments fall anywhere in the
	// integrator's interval, as real outcomes do.
	spacing := 170 * time.Millisecond
	var mu sync.Mutex
	var decide []time.Duration
	var firstErr error
	var wg sync.WaitGroup
	for i, a := range rooms {
		if i > 0 {
			select {
			case <-ctx.Done():
				return ctx.Err()
			case <-time.After(spacing):
			}
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			wait, took, ok, err := b.decideAndProve(ctx, a, logKey, witnessKey)
			mu.Lock()
			defer mu.Unlock()
			switch {
			case err != nil:
				if firstErr == nil {
					firstErr = err
				}
			case !ok:
				res.missing++
			default:
				res.proofWait = append(res.proofWait, wait)
				res.verified++
			}
			decide = append(decide, took)
		}()
	}
	wg.Wait()
	if firstErr != nil {
		return firstErr
	}
	_, res.decideP99, _ = tail(decide)
	p50, p99, worst := tail(res.proofWait)
	cfg.logf("   %d proofs cosigned and verified: p50 %s, p99 %s, worst %s; %d not within %s", len(res.proofWait), fmtDur(p50), fmtDur(p99), fmtDur(worst), res.missing, proofLimit)
	return nil
}

// decideAndProve has both agents of a agree, then polls the proof. It
// answers the wait from the deciding 201 to the cosigned proof, the
// deciding post's latency, and false when no cosigned proof came in time.
// A proof that does not verify is an error.
func (b *bench) decideAndProve(ctx context.Context, a *agreement, logKey, witnessKey note.Verifier) (time.Duration, time.Duration, bool, error) {
	var decided time.Time
	var took time.Duration
	for i, p := range a.parts {
		cmd, _ := json.Marshal(map[string]any{"action": "agree", "body": "", "revision": a.revision, "digest": a.digest})
		t := time.Now()
		status, body, err := b.participantDo(ctx, http.MethodPost, p.eventsURL, p, cmd)
		if err != nil {
			return 0, 0, false, err
		}
		if status != http.StatusCreated {
			return 0, 0, false, fmt.Errorf("agree in log room %d: %d %.300s", a.index+1, status, body)
		}
		if i == len(a.parts)-1 {
			decided, took = time.Now(), time.Since(t)
		}
	}
	p := a.parts[0]
	base := strings.TrimSuffix(p.roomURL, "/room")
	marker := []byte("— " + witnessName + " ")
	for {
		status, body, err := b.participantDo(ctx, http.MethodGet, base+"/record/proof", p, nil)
		if err != nil {
			return 0, took, false, err
		}
		if status == http.StatusOK {
			var pr struct {
				Checkpoint string `json:"checkpoint"`
			}
			if err := json.Unmarshal(body, &pr); err != nil {
				return 0, took, false, fmt.Errorf("proof of log room %d: %w", a.index+1, err)
			}
			if bytes.Contains([]byte(pr.Checkpoint), marker) {
				wait := time.Since(decided)
				return wait, took, true, b.verifyProof(ctx, a, body, logKey, witnessKey)
			}
		} else if status != http.StatusNotFound {
			return 0, took, false, fmt.Errorf("proof of log room %d: %d %.300s", a.index+1, status, body)
		}
		if time.Since(decided) > proofLimit {
			return 0, took, false, nil
		}
		select {
		case <-ctx.Done():
			return 0, took, false, ctx.Err()
		case <-time.After(proofPoll):
		}
	}
}

// verifyProof checks a proof as a client would: the record it was given,
// the log's signature, the inclusion and the witness's cosignature.
func (b *bench) verifyProof(ctx context.Context, a *agreement, proof []byte, logKey, witnessKey note.Verifier) error {
	p := a.parts[0]
	status, record, err := b.participantDo(ctx, http.MethodGet, strings.TrimSuffix(p.roomURL, "/room")+"/record", p, nil)
	if err != nil {
		return err
	}
	if status != http.StatusOK {
		return fmt.Errorf("record of log room %d: %d %.300s", a.index+1, status, record)
	}
	pr, err := translog.ParseProof(proof)
	if err != nil {
		return fmt.Errorf("proof of log room %d: %w", a.index+1, err)
	}
	r := translog.VerifyProof(pr, translog.VerifyOptions{LogKey: logKey, Record: record, Witnesses: []note.Verifier{witnessKey}, MinCosignatures: 1})
	if !r.OK() {
		return fmt.Errorf("the proof of log room %d does not verify: %v", a.index+1, r.FailedChecks())
	}
	return nil
}

// participantDo sends one request as p (a fresh Idempotency-Key on a
// write) and answers the status and body.
func (b *bench) participantDo(ctx context.Context, method, url string, p *participant, body []byte) (int, []byte, error) {
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, url, rd)
	if err != nil {
		return 0, nil, err
	}
	req.Header.Set("Authorization", "Consensus-Participant "+p.token)
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Idempotency-Key", fmt.Sprintf("bench-%s-%d", b.world.runID, b.world.keys.Add(1)))
	}
	resp, err := b.http.Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	out, err := io.ReadAll(resp.Body)
	return resp.StatusCode, out, err
}
