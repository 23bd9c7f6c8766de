package main

import (
	"bufio"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"time"
)

// meta is what the results say about the run and the machine.
type meta struct {
	started, finished     time.Time
	elapsed               time.Duration
	commit                string
	dirty                 bool
	cpuModel              string
	cores                 int
	memTotal              string
	kernel                string
	goVersion             string
	loadBefore, loadAfter string
	pg                    map[string]string
}

func collectMeta(cfg config) meta {
	m := meta{started: time.Now(), cores: runtime.NumCPU(), goVersion: runtime.Version(), pg: map[string]string{}, loadBefore: loadAvg()}
	if out, err := gitOutput(cfg.Root, "rev-parse", "HEAD"); err == nil {
		m.commit = out
	}
	// Changes under bench/ (the results themselves) do not make the code dirty.
	if out, err := gitOutput(cfg.Root, "status", "--porcelain", "--", ".", ":(exclude)bench"); err == nil {
		m.dirty = out != ""
	}
	if f, err := os.Open("/proc/cpuinfo"); err == nil {
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			if k, v, ok := strings.Cut(sc.Text(), ":"); ok && strings.TrimSpace(k) == "model name" {
				m.cpuModel = strings.TrimSpace(v)
				break
			}
		}
		f.Close()
	}
	if f, err := os.Open("/proc/meminfo"); err == nil {
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			if v, ok := strings.CutPrefix(sc.Text(), "MemTotal:"); ok {
				kb, _ := strconv.ParseFloat(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 64)
				m.memTotal = strconv.FormatFloat(kb/1024/1024, 'f', 1, 64) + " GiB"
			}
		}
		f.Close()
	}
	if b, err := os.ReadFile("/proc/sys/kernel/osrelease"); err == nil {
		m.kernel = strings.TrimSpace(string(b))
	}
	return m
}

func gitOutput(dir string, args ...string) (string, error) {
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	out, err := cmd.Output()
	return strings.TrimSpace(string(out)), err
}

// loadAvg is /proc/loadavg's first three fields: how busy the shared machine was.
func loadAvg() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "?"
	}
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return "?"
	}
	return strings.Join(f[:3], " ")
}

// load1 is the 1-minute load average alone.
func load1() string {
	f := strings.Fields(loadAvg())
	if len(f) == 0 {
		return "?"
	}
	return f[0]
}
