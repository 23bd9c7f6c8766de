package main

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"time"
)

// eventLimit is the service's limit of stored events per participant and revision.
const eventLimit = 100

type participant struct {
	agreement    *agreement
	index        int
	invitationID string
	participant  string // participantId
	// from the invitation email
	secret, proof, inbox, exchangeURL, claimURL string
	// from exchange and claim
	session, token, roomURL, eventsURL string
	auth                               http.Header // Authorization for the room
	used                               int         // events handed out on revision 1 (under picker.mu or before any load)
	etag                               string
}

type agreement struct {
	index    int
	id       string
	digest   string // revision digest as exchange returns it
	revision int
	parts    []*participant
	target   int          // events the fill brings it to
	stored   atomic.Int64 // events stored (201 answers seen)
	next     int          // rotation over participants (under picker.mu)
	body     []byte       // the comment command every event of this room posts
	readSize int          // when one of the three read rooms: its size
	// listenFrom: the room's last seq when the listeners attached (its
	// events are numbered from 1, none is ever removed)
	listenFrom int64
}

// commentText is about as long as a short rationale an agent would post.
func commentText(a int) string {
	return fmt.Sprintf("Benchmark comment in agreement %d: the rehearsal passed, rollback was tested within fifteen minutes, and the release notes are ready for review.", a+1)
}

type world struct {
	ags []*agreement // the main rooms
	// busy: one room per round for the busy-room load; listen: the
	// listener rooms; beside: the rooms appended to while the listeners
	// are attached (extra.go)
	busy, listen, beside []*agreement
	byInv                map[string]*participant
	runID                string
	keys                 atomic.Int64
}

// invitationOf finds the participant a result's URL belongs to.
func (w *world) invitationOf(u string) *participant {
	const marker = "/invitations/"
	i := strings.Index(u, marker)
	if i < 0 {
		return nil
	}
	rest := u[i+len(marker):]
	if j := strings.IndexByte(rest, '/'); j >= 0 {
		rest = rest[:j]
	}
	return w.byInv[rest]
}

// allAgreements is every agreement of the run: the main ones, the busy,
// the listener and the beside rooms.
func (w *world) allAgreements() []*agreement {
	return slices.Concat(w.ags, w.busy, w.listen, w.beside)
}

// every is the participants of every agreement of the run.
func (w *world) every() []*participant {
	var ps []*participant
	for _, a := range w.allAgreements() {
		ps = append(ps, a.parts...)
	}
	return ps
}

// all is the participants of the main agreements.
func (w *world) all() []*participant {
	var ps []*participant
	for _, a := range w.ags {
		ps = append(ps, a.parts...)
	}
	return ps
}

// setup makes the agreements, reads the invitations, exchanges and claims
// every participant (measured), fills the rooms and captures the read rooms.
func (b *bench) setup(ctx context.Context) error {
	cfg := b.cfg
	cfg.logf("== creating %d agreements × %d participants through the operator API", cfg.Agreements, cfg.Parts)
	t := time.Now()
	if err := b.createAgreements(ctx); err != nil {
		return err
	}
	b.setupTime["create agreements (operator API)"] = time.Since(t)
	t = time.Now()
	if err := b.readInvitations(ctx); err != nil {
		return err
	}
	b.setupTime[fmt.Sprintf("deliver %d invitation emails (Maildir)", len(b.world.byInv))] = time.Since(t)
	cfg.logf("   %d invitation emails read from %s", len(b.world.byInv), b.svc.mailDir)

	cfg.logf("== exchange and claim every participant (measured)")
	prof := b.startProfiles(ctx, pathExchange, int(cfg.Duration/time.Second))
	f, err := b.exchangeAll(ctx, b.world.all())
	if err != nil {
		return err
	}
	if err := prof.wait(); err != nil {
		b.note("profile of exchange failed: %v", err)
	}
	b.record(measurement{Path: pathExchange, Side: sideService, Round: 1, F: f})
	prof = b.startProfiles(ctx, pathClaim, int(cfg.Duration/time.Second))
	if f, err = b.claimAll(ctx, b.world.all()); err != nil {
		return err
	}
	if err := prof.wait(); err != nil {
		b.note("profile of claim failed: %v", err)
	}
	b.record(measurement{Path: pathClaim, Side: sideService, Round: 1, F: f})

	ags := b.world.ags
	for i, a := range ags {
		switch i {
		case 0:
			a.target, a.readSize = cfg.Sizes[2], cfg.Sizes[2]
		case 1:
			a.target, a.readSize = cfg.Sizes[1], cfg.Sizes[1]
		case 2:
			a.target, a.readSize = cfg.Sizes[0], cfg.Sizes[0]
		default:
			a.target = cfg.Sizes[0]
		}
	}
	total := 0
	for _, a := range ags {
		total += a.target
	}
	cfg.logf("== filling the rooms: %d events (one room of %d, one of %d, the others %d)", total, cfg.Sizes[2], cfg.Sizes[1], cfg.Sizes[0])
	if f, err = b.fill(ctx); err != nil {
		return err
	}
	b.record(measurement{Path: pathFill, Side: sideService, Round: 1, F: f, RoomFrom: 0, RoomTo: total})

	cfg.logf("== baseline tables (%s) and scripts", baselineDB)
	if b.appendSQL, b.lookupSQL, err = setupBaseline(ctx, b.cl, cfg, b.logDir, total); err != nil {
		return err
	}

	cfg.logf("== checking room sizes and collecting ETags")
	for _, a := range ags {
		body, header, n, err := b.roomState(ctx, a.parts[0])
		if err != nil {
			return fmt.Errorf("room of agreement %d: %w", a.index+1, err)
		}
		if n != a.target || int(a.stored.Load()) != a.target {
			return fmt.Errorf("room of agreement %d holds %d events (%d stored by the bench), want %d", a.index+1, n, a.stored.Load(), a.target)
		}
		if a.readSize == 0 {
			continue
		}
		b.roomBytes[a.readSize] = len(body)
		if err := saveStaticRoom(filepath.Join(cfg.WorkDir, "static"), a.readSize, header, body); err != nil {
			return err
		}
		for _, p := range a.parts {
			_, h, _, err := b.roomState(ctx, p)
			if err != nil {
				return err
			}
			if p.etag = h.Get("ETag"); p.etag == "" {
				return errors.New("the room answer has no ETag: the 304 path cannot be measured")
			}
		}
	}
	return nil
}
