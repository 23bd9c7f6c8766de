package httpapi

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"testing"
	"time"
)

// TestHealthAsksThePinger: health reports what the Pinger says, and a
// Pinger slower than the health timeout as a timeout.
func TestHealthAsksThePinger(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name     string
		ping     pingFunc
		status   int
		database string
	}{
		{"up", func(context.Context) error { return nil }, http.StatusOK, "ok"},
		{"down", func(context.Context) error { return errors.New("connection refused") }, http.StatusServiceUnavailable, "unreachable"},
		{"slow", func(ctx context.Context) error { <-ctx.Done(); return ctx.Err() }, http.StatusServiceUnavailable, "timeout"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			s := newProblemServer(t, tc.ping)
			s.healthTimeout = 50 * time.Millisecond
			resp, body := s.do(t, http.MethodGet, "/api/health", nil)
			var h Health
			if err := json.Unmarshal(body, &h); err != nil {
				t.Fatal(err)
			}
			if resp.StatusCode != tc.status || h.Database != tc.database || h.Version != "test" || resp.Header.Get("Cache-Control") != "no-cache" {
				t.Fatalf("%d %+v", resp.StatusCode, h)
			}
		})
	}
}

// TestNewRequiresPinger: without a Pinger health could not see the
// database, so New refuses at start rather than at the first probe.
func TestNewRequiresPinger(t *testing.T) {
	t.Parallel()
	defer func() {
		if recover() == nil {
			t.Fatal("New accepted Options without a Pinger")
		}
	}()
	New(Options{})
}
