package httpapi

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/consensus-md/consensus/internal/room"
)

// A request whose client went away while the database worked for it is
// answered 499 with no body and no outage logged: nobody reads the answer,
// and the database did not fail (a 503 there fed the unavailability alert
// with every hang-up). The same error with the client still there is a 503.
func TestClientHangUpIsNotAnOutage(t *testing.T) {
	var logs bytes.Buffer
	s := &Server{log: slog.New(slog.NewJSONHandler(&logs, nil)), origin: "http://consensus.test"}
	cancelled := fmt.Errorf("store: room: %w: %w", room.ErrUnavailable, context.Canceled)

	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	w := httptest.NewRecorder()
	s.writeProblem(w, httptest.NewRequest(http.MethodGet, "/", nil).WithContext(ctx), cancelled)
	if w.Code != StatusClientClosed || w.Body.Len() != 0 || logs.Len() != 0 {
		t.Fatalf("hang-up: %d, body %q, logs %q", w.Code, w.Body, logs.String())
	}

	w = httptest.NewRecorder()
	s.writeProblem(w, httptest.NewRequest(http.MethodGet, "/", nil), cancelled)
	if w.Code != http.StatusServiceUnavailable || !bytes.Contains(logs.Bytes(), []byte("database unavailable")) {
		t.Fatalf("client still there: %d, logs %q", w.Code, logs.String())
	}
	if !errors.Is(cancelled, room.ErrUnavailable) {
		t.Fatal("the test error is not an unavailability")
	}
}
