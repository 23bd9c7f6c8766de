package room

import (
	"errors"
	"slices"
	"testing"
	"time"
)

func TestParseReminders(t *testing.T) {
	t.Parallel()
	h := time.Hour
	for _, c := range []struct {
		in   []string
		want []time.Duration
	}{
		{nil, []time.Duration{24 * h, h}},
		{[]string{}, []time.Duration{}},
		{[]string{"PT1H", "P2D", "PT30M"}, []time.Duration{48 * h, h, 30 * time.Minute}},
		{[]string{"P1DT12H"}, []time.Duration{36 * h}},
		{[]string{"PT1M"}, []time.Duration{time.Minute}},
		{[]string{"P90D"}, []time.Duration{90 * 24 * h}},
		{[]string{"PT90M"}, []time.Duration{90 * time.Minute}},
	} {
		got, err := ParseReminders(c.in)
		if err != nil || !slices.Equal(got, c.want) {
			t.Errorf("ParseReminders(%q) = %v, %v; want %v", c.in, got, err, c.want)
		}
	}
	for _, bad := range [][]string{
		{"P"}, {"PT"}, {"P1DT"}, {"24h"}, {"PT1S"}, {"PT0M"}, {"P91D"}, {"-PT1H"}, {"PT1.5H"}, {"pt1h"}, {""},
		{"PT1H", "PT60M"}, {"PT1M", "PT2M", "PT3M", "PT4M", "PT5M", "PT6M", "PT7M", "PT8M", "PT9M", "PT10M", "PT11M"},
	} {
		var verr *ValidationError
		if _, err := ParseReminders(bad); !errors.As(err, &verr) || verr.Field != "reminders" {
			t.Errorf("ParseReminders(%q) = %v, want a reminders validation error", bad, err)
		}
	}
}

func TestFormatReminder(t *testing.T) {
	t.Parallel()
	for d, want := range map[time.Duration]string{24 * time.Hour: "PT24H", time.Hour: "PT1H", 90 * time.Minute: "PT1H30M", time.Minute: "PT1M", 48 * time.Hour: "PT48H"} {
		got := FormatReminder(d)
		if got != want {
			t.Errorf("FormatReminder(%v) = %q, want %q", d, got, want)
		}
		if back, err := ParseReminders([]string{got}); err != nil || back[0] != d {
			t.Errorf("%q does not read back: %v %v", got, back, err)
		}
	}
}
