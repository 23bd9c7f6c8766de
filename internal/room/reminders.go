package room

import (
	"regexp"
	"slices"
	"strconv"
	"time"
)

// DefaultReminders are when a required participant who has not decided is
// reminded, before the deadline, unless the agreement names its own.
var DefaultReminders = []time.Duration{24 * time.Hour, time.Hour}

// Bounds of an agreement's reminders.
const (
	MaxReminders  = 10
	MinReminder   = time.Minute
	MaxReminder   = 90 * 24 * time.Hour
	remindersName = "reminders"
)

// reminderPattern is the ISO 8601 duration the reminders take: days,
// hours and minutes, each whole (P1D, PT24H, PT1H30M, P2DT12H).
var reminderPattern = regexp.MustCompile(`^P(?:([0-9]{1,3})D)?(?:T(?:([0-9]{1,4})H)?(?:([0-9]{1,6})M)?)?$`)

// ParseReminders reads the reminders of a create request: ISO 8601
// durations before the deadline, each of whole days, hours and minutes,
// between MinReminder and MaxReminder, each once, at most MaxReminders.
// nil (the field left out) gives DefaultReminders; an empty list, none. It
// returns them latest first (the longest duration first).
func ParseReminders(in []string) ([]time.Duration, error) {
	if in == nil {
		return slices.Clone(DefaultReminders), nil
	}
	if len(in) > MaxReminders {
		return nil, invalid(remindersName, "must list at most %d reminders", MaxReminders)
	}
	out := make([]time.Duration, 0, len(in))
	for _, s := range in {
		d, ok := parseDuration(s)
		if !ok {
			return nil, invalid(remindersName, "%q is not a duration such as PT24H, PT1H30M or P2D (days, hours and minutes)", s)
		}
		if d < MinReminder || d > MaxReminder {
			return nil, invalid(remindersName, "%q must be between a minute (PT1M) and 90 days (P90D) before the deadline", s)
		}
		if slices.Contains(out, d) {
			return nil, invalid(remindersName, "%q names a reminder time twice", s)
		}
		out = append(out, d)
	}
	slices.SortFunc(out, func(a, b time.Duration) int { return int((b - a) / time.Second) })
	return out, nil
}

func parseDuration(s string) (time.Duration, bool) {
	m := reminderPattern.FindStringSubmatch(s)
	if m == nil || s == "P" || s == "PT" || (len(s) > 1 && s[len(s)-1] == 'T') {
		return 0, false
	}
	var d time.Duration
	for i, unit := range []time.Duration{24 * time.Hour, time.Hour, time.Minute} {
		if m[i+1] != "" {
			n, _ := strconv.Atoi(m[i+1])
			d += time.Duration(n) * unit
		}
	}
	return d, true
}

// FormatReminder writes d as the reminders are shown: an ISO 8601
// duration of hours and minutes (PT24H, PT1H30M).
func FormatReminder(d time.Duration) string {
	h, m := int(d/time.Hour), int(d%time.Hour/time.Minute)
	s := "PT"
	if h > 0 {
		s += strconv.Itoa(h) + "H"
	}
	if m > 0 || h == 0 {
		s += strconv.Itoa(m) + "M"
	}
	return s
}
