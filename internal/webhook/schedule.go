package webhook

import "time"

// Schedule is the pause before each retry: after the
// first attempt fails, 5 s; then 5 min, 30 min, 2 h, 5 h and 10 h. A
// delivery that fails all seven attempts is failed.
var Schedule = []time.Duration{5 * time.Second, 5 * time.Minute, 30 * time.Minute, 2 * time.Hour, 5 * time.Hour, 10 * time.Hour}

// Next is when to try again after attempt (1-based) failed at now, and
// false when the schedule is spent.
func Next(attempt int, now time.Time) (time.Time, bool) {
	if attempt < 1 || attempt > len(Schedule) {
		return time.Time{}, false
	}
	return now.Add(Schedule[attempt-1]), true
}

// Timeout bounds one delivery attempt: connecting, TLS, sending and the
// receiver's answer.
const Timeout = 10 * time.Second
