package venue

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"fmt"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/jackc/pgx/v5"
)

// The server side of the hot paths, without HTTP: what make bench's
// profiles attribute to the venue, the store and pgx, in allocations per
// operation (steady on a shared machine, where times are not).

// BenchmarkAppend: one comment (two round trips) in a room of 50.
func BenchmarkAppend(b *testing.B) {
	r := newTestRoom(b, 50)
	r.comment(b, 0, fmt.Sprintf("bench-%08d", 0)) // warm the revision cache and the statements
	b.ReportAllocs()
	b.ResetTimer()
	for i := 1; b.Loop(); i++ {
		r.comment(b, i, fmt.Sprintf("bench-%08d", i))
	}
}

// BenchmarkAppendSpread: 16 posters, each posting its next comment into a
// room drawn at random among 16 (what make bench's append load sends), so
// batches hold appends of several rooms and, often, two of one room. One
// op is one append; its time is the load's, divided by its appends.
func BenchmarkAppendSpread(b *testing.B) {
	const rooms, posters = 16, 16
	first := newTestRoom(b, 50)
	all := []*testRoom{first}
	for range rooms - 1 {
		all = append(all, addTestRoom(b, first.v, 50))
	}
	for i, r := range all {
		for j := range r.creds { // each participant's first append also reads its revision
			r.comment(b, j, fmt.Sprintf("warm-%04d-%04d", i, j))
		}
	}
	var next atomic.Int64
	var wg sync.WaitGroup
	cpu := startCPUMeter(b)
	b.ReportAllocs()
	b.ResetTimer()
	for p := range posters {
		wg.Go(func() {
			rng := rand.New(rand.NewPCG(uint64(p), 1))
			for {
				i := int(next.Add(1))
				if i > b.N {
					return
				}
				if err := all[rng.IntN(rooms)].post(i, fmt.Sprintf("spread-%08d", i)); err != nil {
					b.Error(err) // Fatal may only be called from the benchmark's goroutine
					return
				}
			}
		})
	}
	wg.Wait()
	cpu.report(b)
}

// cpuMeter measures the CPU time this process and the PostgreSQL server's
// processes spend over a benchmark, reported per op: on a shared machine
// a cost steadier than the op's wall time. The server's processes are the
// postmaster's children at the end (a backend that exited meanwhile is
// missed), so the server should be the benchmark's own. Reading its data
// directory takes a superuser; under another role only the process's CPU
// is reported.
type cpuMeter struct {
	goStart, pgStart time.Duration
	postmaster       int
	start            map[int]time.Duration
}

func startCPUMeter(b *testing.B) *cpuMeter {
	b.Helper()
	m := &cpuMeter{goStart: selfCPU()}
	pid, err := postmasterPID()
	if err != nil {
		// The service's role cannot read data_directory (make bench-go runs
		// as it): the process's CPU is measured alone.
		b.Logf("PostgreSQL's CPU is not measured: %v", err)
		return m
	}
	m.postmaster = pid
	m.start = m.server()
	return m
}

// postmasterPID is the pid of the test server's postmaster, read from its
// data directory.
func postmasterPID() (int, error) {
	ctx := context.Background()
	c, err := pgx.Connect(ctx, os.Getenv("CONSENSUS_TEST_DATABASE_URL"))
	if err != nil {
		return 0, err
	}
	defer c.Close(ctx)
	var dir string
	if err := c.QueryRow(ctx, `SHOW data_directory`).Scan(&dir); err != nil {
		return 0, err
	}
	raw, err := os.ReadFile(filepath.Join(dir, "postmaster.pid"))
	if err != nil {
		return 0, err
	}
	return strconv.Atoi(strings.SplitN(string(raw), "\n", 2)[0])
}

func (m *cpuMeter) report(b *testing.B) {
	n := float64(b.N)
	b.ReportMetric(float64((selfCPU()-m.goStart).Microseconds())/n, "go-cpu-µs/op")
	if m.postmaster == 0 {
		return
	}
	var pgCPU time.Duration
	for pid, t := range m.server() {
		pgCPU += t - m.start[pid]
	}
	b.ReportMetric(float64(pgCPU.Microseconds())/n, "pg-cpu-µs/op")
}

func selfCPU() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// server returns the CPU time (user and system, from /proc/PID/stat) of
// the postmaster and each of its children.
func (m *cpuMeter) server() map[int]time.Duration {
	cpu := map[int]time.Duration{}
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		raw, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		if err != nil {
			continue
		}
		// The fields after the command name (which may hold spaces), from
		// field 3 on: ppid is field 4, utime and stime fields 14 and 15,
		// in clock ticks of 10 ms.
		f := strings.Fields(string(raw[bytes.LastIndexByte(raw, ')')+1:]))
		if len(f) < 13 {
			continue
		}
		if ppid, _ := strconv.Atoi(f[1]); pid != m.postmaster && ppid != m.postmaster {
			continue
		}
		u, _ := strconv.ParseInt(f[11], 10, 64)
		s, _ := strconv.ParseInt(f[12], 10, 64)
		cpu[pid] = time.Duration(u+s) * 10 * time.Millisecond
	}
	return cpu
}
