package main

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"
)

// The loads of the busy room, the long append run and the listeners. They
// use agreements of their own, made after the main set-up, so the main
// loads measure what they always measured:
//   - one fresh room of cfg.Parts participants per round for the busy room
//     (a participant posts at most eventLimit events per revision, so a
//     room holds at most cfg.Parts × eventLimit appends);
//   - cfg.ListenRooms rooms of cfg.ListenParts participants for the
//     listeners, whose event slots the long append run then spends;
//   - cfg.Agreements rooms of cfg.Parts participants, like the main ones,
//     for the append rounds made with the listeners attached (the main
//     rooms' event slots are the main rounds').
//
// This file holds their set-up, the busy room and the long run; the
// listener phase is in listeners.go, its clients in listenclients.go and
// its bookkeeping in wakebook.go.

const (
	pathBusy   = "append-busy"
	pathLong   = "append-long"
	pathListen = "append-listeners"
	pathWake   = "wake"
	// sideLookup is the 304 path's second baseline: a minimal Go server,
	// one pgx lookup per request.
	sideLookup = "Go lookup server"
)

// setupExtra makes the busy and listener rooms and claims their
// participants (not measured).
func (b *bench) setupExtra(ctx context.Context) error {
	cfg := b.cfg
	t := time.Now()
	along := 0
	if cfg.ListenRooms > 0 {
		along = cfg.Agreements
	}
	cfg.logf("== %d busy rooms × %d participants, %d listener rooms × %d participants and %d rooms × %d for the appends beside the listeners", cfg.Rounds, cfg.Parts, cfg.ListenRooms, cfg.ListenParts, along, cfg.Parts)
	busy, err := b.createAgreementSet(ctx, cfg.Agreements, cfg.Rounds, cfg.Parts)
	if err != nil {
		return err
	}
	listen, err := b.createAgreementSet(ctx, cfg.Agreements+cfg.Rounds, cfg.ListenRooms, cfg.ListenParts)
	if err != nil {
		return err
	}
	beside, err := b.createAgreementSet(ctx, cfg.Agreements+cfg.Rounds+cfg.ListenRooms, along, cfg.Parts)
	if err != nil {
		return err
	}
	b.world.busy, b.world.listen, b.world.beside = busy, listen, beside
	if err := b.readInvitations(ctx); err != nil {
		return err
	}
	var ps []*participant
	for _, a := range slices.Concat(busy, listen, beside) {
		ps = append(ps, a.parts...)
	}
	if _, err := b.exchangeAll(ctx, ps); err != nil {
		return fmt.Errorf("busy, listener and beside rooms: %w", err)
	}
	if _, err := b.claimAll(ctx, ps); err != nil {
		return fmt.Errorf("busy, listener and beside rooms: %w", err)
	}
	b.setupTime[fmt.Sprintf("busy, listener and beside rooms: create, deliver, exchange and claim %d participants", len(ps))] = time.Since(t)
	return nil
}

// busyRounds: every connection posts into one room (a fresh one each
// round) vs pgbench's minimal append with every client on one agreement
// row. Both queue on one row lock; the service may share a commit between
// the appends it holds, pgbench cannot.
func (b *bench) busyRounds(ctx context.Context) error {
	cfg := b.cfg
	cfg.logf("== one busy room: %d connections into one room vs pgbench's %d clients on one row (%s each)", cfg.Conns, cfg.Conns, cfg.BusyDuration)
	for r := 1; r <= cfg.Rounds; r++ {
		room := b.world.busy[r-1]
		for _, side := range sides(r) {
			if err := b.cl.quiet(ctx); err != nil {
				return err
			}
			b.pause(ctx)
			if side == sideBaseline {
				f, err := runPgbench(ctx, b.cl, b.logDir, pgbenchRun{
					Name: fmt.Sprintf("busy-r%d", r), Script: b.appendSQL, Conns: cfg.Conns, Duration: cfg.BusyDuration,
					Vars: map[string]string{"agreements": "1", "participants": fmt.Sprint(cfg.Parts)},
				})
				if err != nil {
					return err
				}
				b.record(measurement{Path: pathBusy, Side: side, Round: r, F: f})
				continue
			}
			from := int(room.stored.Load())
			f, err := b.wrkAppendOf(ctx, fmt.Sprintf("busy-r%d", r), []*agreement{room}, cfg.BusyDuration)
			if err != nil {
				return err
			}
			if b.exhausted > 0 {
				// Every participant of the room used up its events before
				// the time was up: the rest went to a path that answers 404.
				// The rate counts the appends stored over the whole time, a
				// lower bound of the room's rate.
				for k, v := range f.Unexpected {
					if strings.HasPrefix(k, "404 ") {
						delete(f.Unexpected, k)
						f.Requests -= v
					}
				}
				b.note("busy room, round %d: its %d participants used up their %d events each before %s were over; the rate is a lower bound", r, cfg.Parts, eventLimit, cfg.BusyDuration)
			}
			b.record(measurement{Path: pathBusy, Side: side, Round: r, F: f, RoomFrom: from, RoomTo: int(room.stored.Load())})
		}
	}
	if len(b.world.busy) > 0 {
		room := b.world.busy[len(b.world.busy)-1]
		b.profilePass(ctx, "append-busy", func(ctx context.Context, name string, d time.Duration) error {
			_, err := b.wrkAppendOf(ctx, name, []*agreement{room}, min(d, time.Second))
			return err
		})
	}
	return nil
}

// longAppend: appends over the listener rooms for cfg.LongDuration, for
// the peak RSS of a long run (the Go heap grows with what a load leaves
// behind, not only with what is in flight).
func (b *bench) longAppend(ctx context.Context) error {
	if b.cfg.LongDuration <= 0 {
		return nil
	}
	b.cfg.logf("== long append run: %s over the %d listener rooms, %d connections (peak RSS)", b.cfg.LongDuration, len(b.world.listen), b.cfg.Conns)
	if err := b.cl.quiet(ctx); err != nil {
		return err
	}
	// The same load first, for longWarmup, not recorded: the peak is then
	// the long run's own. The reset before a load can bring VmHWM down
	// only to the RSS of that moment, and the profile pass just before
	// (the busy room's) leaves what the runtime built the profiles in
	// until the next collections free it: in a full run the long run
	// started at 65.2 MiB and never rose above it, while samples taken
	// during it read 59 MiB.
	if b.cfg.Warmup > 0 {
		if _, err := b.wrkAppendOf(ctx, "append-long-warmup", b.world.listen, longWarmup); err != nil {
			return err
		}
		b.pause(ctx)
	}
	from := storedOf(b.world.listen)
	f, err := b.wrkAppendOf(ctx, "append-long", b.world.listen, b.cfg.LongDuration)
	if err != nil {
		return err
	}
	b.record(measurement{Path: pathLong, Side: sideService, Round: 1, F: f, RoomFrom: from, RoomTo: storedOf(b.world.listen)})
	return nil
}

// longWarmup is the unrecorded load before the long run (whole seconds,
// as wrk takes them).
const longWarmup = 3 * time.Second

func storedOf(ags []*agreement) int {
	n := 0
	for _, a := range ags {
		n += int(a.stored.Load())
	}
	return n
}
