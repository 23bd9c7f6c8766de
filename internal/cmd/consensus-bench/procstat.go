package main

import (
	"bufio"
	"errors"
	"os"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// Readings from /proc: the CPU time of the cluster, of a process and of the
// bench itself, and a process's RSS and peak RSS.

// cpu returns the CPU time the whole cluster has used: the postmaster, its
// live children, and (through cutime/cstime) the children it has reaped, so a
// backend that exits between two readings is still counted.
//
// A child reaped while /proc is being scanned would be in neither sum (not
// yet in the postmaster's cutime when it was read, gone from /proc when its
// turn came): pgbench's sixteen backends all exit as a run ends, right when
// the reading is taken, and whole runs' backend time went missing that way.
// So the reading is repeated until the postmaster reaped nothing during it.
func (c *cluster) cpu() time.Duration {
	if c.postmaster == 0 {
		return 0
	}
	for try := 0; ; try++ {
		st, err := readStat(c.postmaster)
		if err != nil {
			return 0
		}
		total := st.utime + st.stime + st.cutime + st.cstime
		ents, _ := os.ReadDir("/proc")
		for _, e := range ents {
			pid, err := strconv.Atoi(e.Name())
			if err != nil {
				continue
			}
			if s, err := readStat(pid); err == nil && s.ppid == c.postmaster {
				total += s.utime + s.stime
			}
		}
		again, err := readStat(c.postmaster)
		if err != nil || (again.cutime == st.cutime && again.cstime == st.cstime) || try == 50 {
			return total
		}
		time.Sleep(2 * time.Millisecond)
	}
}

type procStat struct {
	ppid                         int
	utime, stime, cutime, cstime time.Duration
}

// clockTick is USER_HZ, 100 on every Linux the bench runs on.
const clockTick = 10 * time.Millisecond

func readStat(pid int) (procStat, error) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return procStat{}, err
	}
	// The command name is in parentheses and may hold spaces: split after it.
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return procStat{}, errors.New("malformed stat")
	}
	f := strings.Fields(s[i+1:])
	// f[0] is field 3 (state); ppid is field 4, utime..cstime fields 14..17.
	if len(f) < 15 {
		return procStat{}, errors.New("short stat")
	}
	n := func(k int) int64 { v, _ := strconv.ParseInt(f[k-3], 10, 64); return v }
	return procStat{
		ppid:   int(n(4)),
		utime:  time.Duration(n(14)) * clockTick,
		stime:  time.Duration(n(15)) * clockTick,
		cutime: time.Duration(n(16)) * clockTick,
		cstime: time.Duration(n(17)) * clockTick,
	}, nil
}

func procCPU(pid int) time.Duration {
	st, err := readStat(pid)
	if err != nil {
		return 0
	}
	return st.utime + st.stime
}

// selfCPU is the bench process's own CPU time (the load generator).
func selfCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// resetPeakRSS sets the process's VmHWM back to its current RSS
// (clear_refs: 5), so the next readPeakRSS covers one load only.
func resetPeakRSS(pid int) error {
	return os.WriteFile("/proc/"+strconv.Itoa(pid)+"/clear_refs", []byte("5"), 0)
}

// readPeakRSS returns VmHWM in KiB.
func readPeakRSS(pid int) (int64, error) { return readStatusKiB(pid, "VmHWM:") }

// readRSS returns VmRSS in KiB.
func readRSS(pid int) (int64, error) { return readStatusKiB(pid, "VmRSS:") }

func readStatusKiB(pid int, field string) (int64, error) {
	f, err := os.Open("/proc/" + strconv.Itoa(pid) + "/status")
	if err != nil {
		return 0, err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), field); ok {
			return strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
		}
	}
	return 0, errors.New(field + " not found")
}
