package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"sync"

	vegeta "github.com/tsenart/vegeta/v12/lib"
)

// eventTarget is one comment by p with a fresh Idempotency-Key.
func (w *world) eventTarget(p *participant) vegeta.Target {
	key := fmt.Sprintf("bench-%s-%d", w.runID, w.keys.Add(1))
	return vegeta.Target{Method: http.MethodPost, URL: p.eventsURL, Body: p.agreement.body, Header: http.Header{
		"Content-Type":    {"application/json"},
		"Authorization":   p.auth["Authorization"],
		"Idempotency-Key": {key},
	}}
}

// picker hands out appends, rotating over each room's participants so none
// passes the 100-events limit; it reports when every slot is used up.
type picker struct {
	mu        sync.Mutex
	w         *world
	ags       []*agreement
	exhausted bool
}

// nextParticipant takes the next participant of a with events left.
func (a *agreement) nextParticipant() *participant {
	for range a.parts {
		p := a.parts[a.next%len(a.parts)]
		a.next++
		if p.used < eventLimit {
			p.used++
			return p
		}
	}
	return nil
}

// countTargeter hands out n appends into the rooms in turn.
func (pk *picker) countTargeter(n int) vegeta.Targeter {
	handed := 0
	return func(t *vegeta.Target) error {
		pk.mu.Lock()
		defer pk.mu.Unlock()
		for range pk.ags {
			if handed >= n {
				return vegeta.ErrNoTargets
			}
			a := pk.ags[handed%len(pk.ags)]
			handed++
			if p := a.nextParticipant(); p != nil {
				*t = pk.w.eventTarget(p)
				return nil
			}
		}
		pk.exhausted = true
		return vegeta.ErrNoTargets
	}
}

// countStored is an OnResult that keeps each room's event count.
func (w *world) countStored(r *vegeta.Result) {
	if r.Code == http.StatusCreated {
		if p := w.invitationOf(r.URL); p != nil {
			p.agreement.stored.Add(1)
		}
	}
}

// fill brings every room to its target size, rooms interleaved.
func (b *bench) fill(ctx context.Context) (figures, error) {
	var ts []vegeta.Target
	most := 0
	for _, a := range b.world.ags {
		most = max(most, a.target)
	}
	for k := range most {
		for _, a := range b.world.ags {
			if k < a.target {
				p := a.parts[k%len(a.parts)]
				p.used++
				ts = append(ts, b.world.eventTarget(p))
			}
		}
	}
	f, err := runAttack(ctx, b.serviceWatch(), attack{
		Targeter: listTargeter(ts), Conns: b.cfg.Conns, Expect: http.StatusCreated, OnResult: b.world.countStored,
	})
	if err == nil && f.OK != len(ts) {
		err = fmt.Errorf("fill: %d of %d events stored (%s)", f.OK, len(ts), f.errorText())
	}
	return f, err
}

// roomState reads p's room once: body, headers, event count.
func (b *bench) roomState(ctx context.Context, p *participant) ([]byte, http.Header, int, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, p.roomURL, nil)
	if err != nil {
		return nil, nil, 0, err
	}
	req.Header.Set("Authorization", "Consensus-Participant "+p.token)
	resp, err := b.http.Do(req)
	if err != nil {
		return nil, nil, 0, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, nil, 0, err
	}
	if resp.StatusCode != http.StatusOK {
		return nil, nil, 0, fmt.Errorf("GET room: %d %.200s", resp.StatusCode, body)
	}
	var room struct {
		Events []json.RawMessage `json:"events"`
	}
	if err := json.Unmarshal(body, &room); err != nil {
		return nil, nil, 0, fmt.Errorf("GET room: %w", err)
	}
	return body, resp.Header, len(room.Events), nil
}
