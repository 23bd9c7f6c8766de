package main

import (
	"context"
	"fmt"
	"net/http"
	"time"
)

func (b *bench) readRoom(size int) *agreement {
	for _, a := range b.world.ags {
		if a.readSize == size {
			return a
		}
	}
	panic("no room of size " + fmt.Sprint(size))
}

func (b *bench) pause(ctx context.Context) {
	select {
	case <-ctx.Done():
	case <-time.After(b.cfg.Pause):
	}
}

// sides orders A and B for round r: A/B in odd rounds, B/A in even ones, so
// a slow drift of the machine does not favour one side.
func sides(r int) []string {
	if r%2 == 1 {
		return []string{sideService, sideBaseline}
	}
	return []string{sideBaseline, sideService}
}

// warmup runs each service read path briefly, unrecorded.
func (b *bench) warmup(ctx context.Context) error {
	if b.cfg.Warmup <= 0 {
		return nil
	}
	b.cfg.logf("== warm-up (%s per path, not recorded)", b.cfg.Warmup)
	for _, size := range b.cfg.Sizes {
		a := b.readRoom(size)
		for _, cond := range []bool{false, true} {
			if _, err := b.wrkService(ctx, b.readLoad(fmt.Sprintf("warmup-%d-%t", size, cond), a, cond, b.warmupFor())); err != nil {
				return err
			}
		}
	}
	return nil
}

// appendWarmup runs the append load briefly, unrecorded, as warmup does
// the read paths: the first round was otherwise the service's first load
// of this many appending connections (in one full run its CPU per append
// was 257 µs against 195 µs in the next two rounds, p99 52 ms against
// 12). It appends into the listener rooms, which the long run fills
// anyway, so the main rooms keep their events for the measured rounds.
func (b *bench) appendWarmup(ctx context.Context) error {
	if b.cfg.Warmup <= 0 {
		return nil
	}
	rooms := b.world.listen
	if len(rooms) == 0 {
		rooms = b.world.ags
	}
	_, err := b.wrkAppendOf(ctx, "append-warmup", rooms, b.warmupFor())
	return err
}

// warmupFor is the length of one path's warm-up: whole seconds, as wrk's
// -d counts them.
func (b *bench) warmupFor() time.Duration {
	return max(time.Second, b.cfg.Warmup.Round(time.Second))
}

func (b *bench) readRounds(ctx context.Context) error {
	cfg := b.cfg
	cfg.logf("== full room read vs the same bytes from memory (%d connections)", cfg.Conns)
	for r := 1; r <= cfg.Rounds; r++ {
		for _, size := range cfg.Sizes {
			a := b.readRoom(size)
			for _, side := range sides(r) {
				b.pause(ctx)
				var f figures
				var err error
				if side == sideService {
					var run wrkRun
					run, err = b.wrkService(ctx, b.readLoad(fmt.Sprintf("read-%d-r%d", size, r), a, false, cfg.Duration))
					f = run.F
				} else {
					f, err = b.wrkStatic(ctx, b.staticLoad(fmt.Sprintf("static-%d-r%d", size, r), a, size, cfg.Duration))
				}
				if err != nil {
					return err
				}
				b.record(measurement{Path: pathRead, Size: size, Side: side, Round: r, F: f})
			}
		}
	}
	for _, size := range cfg.Sizes {
		b.profilePass(ctx, fmt.Sprintf("read-%d", size), func(ctx context.Context, name string, d time.Duration) error {
			_, err := b.wrkService(ctx, b.readLoad(name, b.readRoom(size), false, d))
			return err
		})
	}
	return nil
}

func (b *bench) lookupBaseline(ctx context.Context, r int) error {
	f, err := runPgbench(ctx, b.cl, b.logDir, pgbenchRun{
		Name: fmt.Sprintf("lookup-r%d", r), Script: b.lookupSQL, Conns: b.cfg.Conns, Duration: b.cfg.Duration,
		Vars: map[string]string{"tokens": fmt.Sprint(b.cfg.Agreements * b.cfg.Parts)},
	})
	if err != nil {
		return err
	}
	b.record(measurement{Path: path304, Side: sideBaseline, Round: r, F: f})
	b.pause(ctx)
	run, err := runWrk(ctx, b.wrk, b.wrkDir(), cpuWatch{serverPID: b.lookup.cmd.Process.Pid, cl: b.cl}, b.lookupLoad(fmt.Sprintf("lookup-r%d", r), b.cfg.Duration))
	if err != nil {
		return err
	}
	b.record(measurement{Path: path304, Side: sideLookup, Round: r, F: run.F})
	return nil
}

// notModifiedRounds: GET room with the current ETag at each size vs
// pgbench's one indexed lookup (once a round: it does not depend on size).
func (b *bench) notModifiedRounds(ctx context.Context) error {
	cfg := b.cfg
	cfg.logf("== 304 (If-None-Match) vs pgbench, one indexed lookup (-M prepared, %d clients)", cfg.Conns)
	for r := 1; r <= cfg.Rounds; r++ {
		for _, side := range sides(r) {
			if side == sideBaseline {
				b.pause(ctx)
				if err := b.lookupBaseline(ctx, r); err != nil {
					return err
				}
				continue
			}
			for _, size := range cfg.Sizes {
				b.pause(ctx)
				run, err := b.wrkService(ctx, b.readLoad(fmt.Sprintf("304-%d-r%d", size, r), b.readRoom(size), true, cfg.Duration))
				if err != nil {
					return err
				}
				b.record(measurement{Path: path304, Size: size, Side: sideService, Round: r, F: run.F})
			}
		}
	}
	for _, size := range cfg.Sizes {
		b.profilePass(ctx, fmt.Sprintf("304-%d", size), func(ctx context.Context, name string, d time.Duration) error {
			_, err := b.wrkService(ctx, b.readLoad(name, b.readRoom(size), true, d))
			return err
		})
	}
	return nil
}

// flatRounds: a fixed number of appends into a fresh small room, then into
// the large room, same connections; the ratio of their rates says whether
// an append's cost grows with the room's history. A count, not a duration,
// bounds how much the small room grows while it is measured.
func (b *bench) flatRounds(ctx context.Context) error {
	cfg := b.cfg
	large := b.world.ags[0]
	cfg.logf("== append cost by room size: %d appends, %d connections, into a room of %d vs the room of %d", cfg.FlatN, cfg.FlatConns, cfg.Sizes[0], large.stored.Load())
	for r := 1; r <= cfg.FlatRounds; r++ {
		small := b.world.ags[2+r]
		for _, side := range sides(r) {
			room, label := small, sideSmall
			if side == sideBaseline {
				room, label = large, sideLarge // the large room is the small one's reference
			}
			if err := b.cl.quiet(ctx); err != nil {
				return err
			}
			b.pause(ctx)
			pk := &picker{w: b.world, ags: []*agreement{room}}
			from := int(room.stored.Load())
			f, err := runAttack(ctx, b.serviceWatch(), attack{Targeter: pk.countTargeter(cfg.FlatN), Conns: cfg.FlatConns, Expect: http.StatusCreated, OnResult: b.world.countStored})
			if err != nil {
				return err
			}
			if pk.exhausted {
				b.note("flatness round %d: the room of agreement %d ran out of event slots", r, room.index+1)
			}
			b.record(measurement{Path: pathFlat, Size: from, Side: label, Round: r, F: f, RoomFrom: from, RoomTo: int(room.stored.Load())})
		}
	}
	return nil
}

// appendSide measures one side of round r of an append load, recorded
// under path, after quiet and a pause: pgbench's minimal append, or the
// service's comments into rooms. mend, when not nil, corrects the
// service's figures before they are recorded.
func (b *bench) appendSide(ctx context.Context, path string, r int, side string, rooms []*agreement, mend func(*figures)) error {
	cfg := b.cfg
	if err := b.cl.quiet(ctx); err != nil {
		return err
	}
	b.pause(ctx)
	name := fmt.Sprintf("%s-r%d", path, r)
	if side == sideBaseline {
		f, err := runPgbench(ctx, b.cl, b.logDir, pgbenchRun{
			Name: name, Script: b.appendSQL, Conns: cfg.Conns, Duration: cfg.Duration,
			Vars: map[string]string{"agreements": fmt.Sprint(cfg.Agreements), "participants": fmt.Sprint(cfg.Parts)},
		})
		if err != nil {
			return err
		}
		b.record(measurement{Path: path, Side: side, Round: r, F: f})
		return nil
	}
	from := storedOf(rooms)
	f, err := b.wrkAppendOf(ctx, name, rooms, cfg.Duration)
	if err != nil {
		return err
	}
	if mend != nil {
		mend(&f)
	}
	b.record(measurement{Path: path, Side: side, Round: r, F: f, RoomFrom: from, RoomTo: storedOf(rooms)})
	return nil
}

// appendRounds: comments spread over every room (a random room per
// request, rotating participants) vs pgbench's minimal append transaction
// with the same rooms and clients. Before each side the cluster is quieted
// (quiet: vacuum, analyze, checkpoint), so no side pays for the other's
// dirty buffers or meets autovacuum started by the loads before it.
func (b *bench) appendRounds(ctx context.Context) error {
	cfg := b.cfg
	cfg.logf("== event append vs pgbench's minimal append (%d connections, %d agreements)", cfg.Conns, cfg.Agreements)
	if err := b.appendWarmup(ctx); err != nil {
		return err
	}
	for r := 1; r <= cfg.Rounds; r++ {
		for _, side := range sides(r) {
			if err := b.appendSide(ctx, pathAppend, r, side, b.world.ags, nil); err != nil {
				return err
			}
		}
	}
	if err := b.cl.quiet(ctx); err != nil {
		return err
	}
	b.profilePass(ctx, "append", func(ctx context.Context, name string, d time.Duration) error {
		_, err := b.wrkAppend(ctx, name, d)
		return err
	})
	return nil
}
