package live

import (
	"testing"
	"time"
)

func TestPreferWait(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		in   []string
		want time.Duration
		ok   bool
	}{
		{nil, 0, false},
		{[]string{"wait=5"}, 5 * time.Second, true},
		{[]string{"WAIT = 7"}, 7 * time.Second, true},
		{[]string{"respond-async, wait=10"}, 10 * time.Second, true},
		{[]string{"return=minimal", "wait=3"}, 3 * time.Second, true},
		{[]string{`wait="2"`}, 2 * time.Second, true},
		{[]string{"wait=0"}, 0, true},
		{[]string{"wait=60"}, MaxWait, true},
		{[]string{"wait=61"}, MaxWait, true},
		{[]string{"wait=3600"}, MaxWait, true},
		{[]string{"wait=99999999999"}, MaxWait, true}, // any number of seconds is a wait, capped
		{[]string{"wait=99999999999999999999999"}, MaxWait, true},
		{[]string{"wait=-1"}, 0, false},
		{[]string{"wait=abc"}, 0, false},
		{[]string{"waiting=5"}, 0, false},
	} {
		got, ok := PreferWait(c.in)
		if got != c.want || ok != c.ok {
			t.Errorf("PreferWait(%q) = %v, %v; want %v, %v", c.in, got, ok, c.want, c.ok)
		}
	}
}
