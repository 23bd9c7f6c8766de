package main

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"time"
)

// The ops listener (CONSENSUS_OPS_LISTEN) serves net/http/pprof
// when CONSENSUS_PPROF=true. The bench asks for both and uses pprof when it
// answers; otherwise it says so in the results and goes on.

// probePProf reports whether the service's ops listener serves pprof.
func (b *bench) probePProf(ctx context.Context) (bool, string) {
	if !b.cfg.PProf {
		return false, "profiles not requested (-pprof=false)"
	}
	url := "http://" + b.svc.ops + "/debug/pprof/"
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	c := &http.Client{Timeout: 2 * time.Second}
	resp, err := c.Do(req)
	if err != nil {
		return false, fmt.Sprintf("no profiles: the service's ops listener (CONSENSUS_OPS_LISTEN=%s, CONSENSUS_PPROF=true) did not answer %s (%v)", b.svc.ops, url, err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return false, fmt.Sprintf("no profiles: %s answered %d (CONSENSUS_PPROF=true was set)", url, resp.StatusCode)
	}
	return true, fmt.Sprintf("profiles from %s into %s", url, b.cfg.Profiles)
}

// profiler captures a CPU profile and an allocation profile (the delta over
// the same window: /debug/pprof/allocs?seconds=N) while a load runs.
type profiler struct {
	wg   sync.WaitGroup
	errs []error
	mu   sync.Mutex
}

func (b *bench) startProfiles(ctx context.Context, name string, seconds int) *profiler {
	p := &profiler{}
	if !b.pprofOK {
		return p
	}
	if err := os.MkdirAll(b.cfg.Profiles, 0o755); err != nil {
		p.errs = append(p.errs, err)
		return p
	}
	for _, kind := range []struct{ path, suffix string }{{"profile", "cpu"}, {"allocs", "allocs"}} {
		p.wg.Add(1)
		go func() {
			defer p.wg.Done()
			path := kind.path + "?seconds=" + strconv.Itoa(seconds)
			if err := b.saveProfile(ctx, path, name+"."+kind.suffix, time.Duration(seconds+30)*time.Second); err != nil {
				p.mu.Lock()
				p.errs = append(p.errs, err)
				p.mu.Unlock()
			}
		}()
	}
	return p
}

func (p *profiler) wait() error {
	p.wg.Wait()
	if len(p.errs) > 0 {
		return p.errs[0]
	}
	return nil
}

func fetchTo(ctx context.Context, url, file string, timeout time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("GET %s: %d", url, resp.StatusCode)
	}
	f, err := os.Create(file)
	if err != nil {
		return err
	}
	if _, err := io.Copy(f, resp.Body); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// profilePass runs one extra, unrecorded service load of the path while
// profiling, so the profiler's overhead never touches a reported figure.
// load runs for d (named name), a second longer than the profiles.
func (b *bench) profilePass(ctx context.Context, name string, load func(ctx context.Context, name string, d time.Duration) error) {
	if !b.pprofOK {
		return
	}
	secs := int(b.cfg.Duration / time.Second)
	b.cfg.logf("   profiling %s (%ds, not recorded)", name, secs)
	p := b.startProfiles(ctx, name, secs)
	err := load(ctx, "profile-"+name, b.cfg.Duration+time.Second)
	if perr := p.wait(); perr != nil && err == nil {
		err = perr
	}
	if err != nil {
		b.note("profile of %s failed: %v", name, err)
	}
}

// saveProfile fetches /debug/pprof/<path> from the service into
// <name>.pprof among the profiles, and lists the file in the results.
func (b *bench) saveProfile(ctx context.Context, path, name string, timeout time.Duration) error {
	file := filepath.Join(b.cfg.Profiles, name+".pprof")
	if err := fetchTo(ctx, "http://"+b.svc.ops+"/debug/pprof/"+path, file, timeout); err != nil {
		return fmt.Errorf("%s: %w", file, err)
	}
	b.mu.Lock()
	b.profileFiles = append(b.profileFiles, file)
	b.mu.Unlock()
	return nil
}

// heapProfile saves the service's heap profile of this moment (what is in
// use, and what was allocated since it started) as name.heap.pprof.
func (b *bench) heapProfile(ctx context.Context, name string) {
	if !b.pprofOK {
		return
	}
	err := os.MkdirAll(b.cfg.Profiles, 0o755)
	if err == nil {
		err = b.saveProfile(ctx, "heap", name+".heap", 30*time.Second)
	}
	if err != nil {
		b.note("heap profile of %s failed: %v", name, err)
	}
}
