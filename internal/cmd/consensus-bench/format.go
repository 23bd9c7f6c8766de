package main

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"
)

// thousands formats a rate: 2,733 or 12.4.
func thousands(x float64) string {
	if x < 100 {
		return fmt.Sprintf("%.1f", x)
	}
	s := fmt.Sprintf("%.0f", x)
	var b strings.Builder
	for i, c := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(c)
	}
	return b.String()
}

func (s spread) rate() string {
	if s.lo == s.hi {
		return thousands(s.med)
	}
	return fmt.Sprintf("%s (%s–%s)", thousands(s.med), thousands(s.lo), thousands(s.hi))
}

func (s spread) ratio() string {
	if s.lo == s.hi {
		return fmtRatio(s.med)
	}
	return fmt.Sprintf("%s (%s–%s)", fmtRatio(s.med), fmtRatio(s.lo), fmtRatio(s.hi))
}

// fmtRatio keeps two significant digits, however small the ratio.
func fmtRatio(x float64) string {
	switch {
	case x >= 0.1 || x == 0:
		return fmt.Sprintf("%.2f", x)
	case x >= 0.0001:
		return strconv.FormatFloat(x, 'f', 1-int(math.Floor(math.Log10(x))), 64)
	default:
		return strconv.FormatFloat(x, 'g', 2, 64)
	}
}

func lat(p50, p99 time.Duration) string {
	return fmt.Sprintf("p50 %s, p99 %s", fmtDur(p50), fmtDur(p99))
}

// latF is lat for one measurement, saying when p99 rests on few requests
// (under 100, it is about the slowest one).
func latF(f figures) string {
	s := lat(f.P50, f.P99)
	if f.Samples > 0 && f.Samples < 100 {
		s += fmt.Sprintf(" (n=%d)", f.Samples)
	}
	return s
}

func kib(n int64) string {
	return fmt.Sprintf("%.1f MiB", float64(n)/1024)
}

func sizeBytes(n int) string {
	switch {
	case n >= 1<<20:
		return fmt.Sprintf("%.2f MiB", float64(n)/(1<<20))
	case n >= 1<<10:
		return fmt.Sprintf("%.0f KiB", float64(n)/(1<<10))
	default:
		return fmt.Sprintf("%d B", n)
	}
}

func fmtDur(d time.Duration) string {
	switch {
	case d <= 0:
		return "—"
	case d < time.Millisecond:
		return fmt.Sprintf("%.0fµs", float64(d)/float64(time.Microsecond))
	case d < 10*time.Millisecond:
		return fmt.Sprintf("%.2fms", float64(d)/float64(time.Millisecond))
	case d < time.Second:
		return fmt.Sprintf("%.1fms", float64(d)/float64(time.Millisecond))
	default:
		return fmt.Sprintf("%.2fs", d.Seconds())
	}
}
