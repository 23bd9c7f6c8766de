package roomnotify_test

import (
	"context"
	"io"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/consensus-md/consensus/internal/pgtest"
	"github.com/consensus-md/consensus/internal/roomnotify"
	"github.com/consensus-md/consensus/internal/store"
)

// roomEars records what Listen reports.
type roomEars struct {
	mu      sync.Mutex
	changed []uuid.UUID
	resumed int
	signal  chan struct{}
}

func (e *roomEars) RoomChanged(id uuid.UUID) {
	e.mu.Lock()
	e.changed = append(e.changed, id)
	e.mu.Unlock()
	select {
	case e.signal <- struct{}{}:
	default: // a test that counts instead of waiting does not drain it
	}
}

// count is how many changes of id were heard.
func (e *roomEars) count(id uuid.UUID) int {
	e.mu.Lock()
	defer e.mu.Unlock()
	n := 0
	for _, c := range e.changed {
		if c == id {
			n++
		}
	}
	return n
}

// resumes is how many times listening (re)started.
func (e *roomEars) resumes() int {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.resumed
}

func (e *roomEars) RoomsResumed() {
	e.mu.Lock()
	e.resumed++
	e.mu.Unlock()
	select {
	case e.signal <- struct{}{}:
	default:
	}
}

// TestListenResumesAfterLosingItsConnection: a NOTIFY on the room
// channel is heard; when the listening connection is killed, the listener
// connects again and says so (RoomsResumed), so waiters check everything
// again, and hears later notifications.
func TestListenResumesAfterLosingItsConnection(t *testing.T) {
	t.Parallel()
	url := pgtest.URL(t)
	st, err := store.Open(context.Background(), url)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(st.Close)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ears := &roomEars{signal: make(chan struct{}, 16)}
	done := make(chan struct{})
	go func() { roomnotify.Listen(ctx, st, ears, slog.New(slog.NewTextHandler(io.Discard, nil))); close(done) }()
	next := func(what string) {
		t.Helper()
		select {
		case <-ears.signal:
		case <-time.After(10 * time.Second):
			t.Fatalf("no %s", what)
		}
	}
	next("first resume")
	pool, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close(context.Background())
	id := uuid.New()
	if _, err := pool.Exec(ctx, "SELECT pg_notify($1, $2)", roomnotify.Channel, id.String()); err != nil {
		t.Fatal(err)
	}
	next("notification")
	if _, err := pool.Exec(ctx, "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = current_database() AND query LIKE 'LISTEN %'"); err != nil {
		t.Fatal(err)
	}
	next("resume after the connection was killed")
	if _, err := pool.Exec(ctx, "SELECT pg_notify($1, $2)", roomnotify.Channel, id.String()); err != nil {
		t.Fatal(err)
	}
	next("notification after resuming")
	ears.mu.Lock()
	if ears.resumed != 2 || len(ears.changed) != 2 || ears.changed[1] != id {
		t.Fatalf("resumed %d, changed %v", ears.resumed, ears.changed)
	}
	ears.mu.Unlock()
	cancel()
	<-done
}
