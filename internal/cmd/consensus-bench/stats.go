package main

import (
	"slices"
	"strings"
	"time"
)

type spread struct{ med, lo, hi float64 }

func spreadOf(xs []float64) spread {
	if len(xs) == 0 {
		return spread{}
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	med := s[len(s)/2]
	if len(s)%2 == 0 {
		med = (s[len(s)/2-1] + s[len(s)/2]) / 2
	}
	return spread{med: med, lo: s[0], hi: s[len(s)-1]}
}

func medianDur(ds []time.Duration) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	if len(s)%2 == 0 {
		return (s[len(s)/2-1] + s[len(s)/2]) / 2
	}
	return s[len(s)/2]
}

// select returns the measurements of one path, side and (when size > 0) size, by round.
func (b *bench) sel(path, side string, size int) []measurement {
	var out []measurement
	for _, m := range b.ms {
		if m.Path == path && m.Side == side && (size == 0 || m.Size == size) {
			out = append(out, m)
		}
	}
	return out
}

func byRound(ms []measurement) map[int]measurement {
	out := map[int]measurement{}
	for _, m := range ms {
		out[m.Round] = m
	}
	return out
}

// pairStats compares a against b round by round (ratio a/b).
type pairStats struct {
	a, b, ratio            spread
	cost                   spread // CPU per answer, b's ÷ a's: read like ratio
	aP50, aP99, bP50, bP99 time.Duration
	rounds                 []int
	am, bm                 map[int]measurement
}

func pair(as, bs []measurement) pairStats {
	am, bm := byRound(as), byRound(bs)
	var ar, br, rr, cr []float64
	var a50, a99, b50, b99 []time.Duration
	ps := pairStats{am: am, bm: bm}
	for r := 1; r <= 100; r++ {
		x, ok1 := am[r]
		y, ok2 := bm[r]
		if !ok1 || !ok2 {
			continue
		}
		ps.rounds = append(ps.rounds, r)
		ar, br = append(ar, x.F.ReqPerSec), append(br, y.F.ReqPerSec)
		if y.F.ReqPerSec > 0 {
			rr = append(rr, x.F.ReqPerSec/y.F.ReqPerSec)
		}
		if xc, yc := x.F.cost(), y.F.cost(); xc > 0 && yc > 0 {
			cr = append(cr, float64(yc)/float64(xc))
		}
		a50, a99 = append(a50, x.F.P50), append(a99, x.F.P99)
		b50, b99 = append(b50, y.F.P50), append(b99, y.F.P99)
	}
	ps.a, ps.b, ps.ratio, ps.cost = spreadOf(ar), spreadOf(br), spreadOf(rr), spreadOf(cr)
	ps.aP50, ps.aP99, ps.bP50, ps.bP99 = medianDur(a50), medianDur(a99), medianDur(b50), medianDur(b99)
	return ps
}

func verdict(s spread, target float64, atLeast bool) string {
	met := s.med >= target
	if !atLeast {
		met = s.med < target
	}
	v := "no"
	if met {
		v = "yes"
	}
	if s.lo < target && s.hi >= target {
		v += " (spread crosses the target)"
	}
	return v
}

// bothVerdict is for append, whose target names both ratios, and for
// flatness, where the rate follows the disk's bursty flush latency: "yes"
// only when the rate ratio and the CPU-cost ratio both meet the target.
func bothVerdict(p pairStats, target float64) string {
	rate, cost := p.ratio.med >= target, p.cost.med >= target || p.cost.med == 0
	switch {
	case rate && cost:
		return "yes"
	case !rate && !cost:
		return "no"
	case rate:
		return "no: the CPU cost grows (the rate ratio alone would pass)"
	default:
		return "no: the rate drops (the CPU cost alone would pass)"
	}
}

// verdicts judges the rate ratio and adds the CPU-cost ratio's verdict when it differs.
func verdicts(p pairStats, target float64) string {
	v := verdict(p.ratio, target, true)
	if p.cost.med == 0 {
		return v
	}
	if c := verdict(p.cost, target, true); strings.HasPrefix(c, "yes") != strings.HasPrefix(v, "yes") {
		v += "; by CPU cost: " + strings.SplitN(c, " ", 2)[0]
	}
	return v
}

func safeDiv(a, b float64) float64 {
	if b == 0 {
		return 0
	}
	return a / b
}
