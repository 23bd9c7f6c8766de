package store

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"strings"
	"syscall"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/consensus-md/consensus/internal/room"
)

func TestInterpretError(t *testing.T) {
	t.Parallel()
	if interpretError("op", nil) != nil {
		t.Fatal("nil is not an error")
	}
	if err := interpretError("op", fmt.Errorf("scan: %w", pgx.ErrNoRows)); err != room.ErrNotFound {
		t.Fatalf("no rows: %v", err)
	}
	unique := &pgconn.PgError{Code: "23505", ConstraintName: "events_participant_id_idempotency_key_key"}
	err := interpretError("op", unique)
	if !errors.Is(err, room.ErrConflict) || !strings.Contains(err.Error(), unique.ConstraintName) {
		t.Fatalf("unique violation: %v", err)
	}
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) {
		t.Fatal("a conflict still exposes the driver's error")
	}
	// Anything else keeps its cause: InTx must still see a serialization
	// failure or a deadlock, and callers a cancelled context.
	for _, code := range []string{"40001", "40P01"} {
		err := interpretError("insert event", &pgconn.PgError{Code: code})
		if !retryable(err) || !strings.HasPrefix(err.Error(), "store: insert event: ") {
			t.Fatalf("%s: %v (retryable %v)", code, err, retryable(err))
		}
	}
	if err := interpretError("op", context.Canceled); !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled: %v", err)
	}
	if retryable(interpretError("op", &pgconn.PgError{Code: "23503"})) {
		t.Fatal("a foreign key violation is not worth retrying")
	}
}

// TestInterpretErrorUnavailable: every way a database
// can be down, unreachable or too slow is room.ErrUnavailable, keeping its
// cause for the log; a query's own failure is not.
func TestInterpretErrorUnavailable(t *testing.T) {
	t.Parallel()
	for name, cause := range map[string]error{
		"deadline":           context.DeadlineExceeded,
		"cancelled":          context.Canceled,
		"refused":            &net.OpError{Op: "dial", Net: "unix", Err: syscall.ECONNREFUSED},
		"connection lost":    io.ErrUnexpectedEOF,
		"closed":             io.EOF,
		"conn closed":        pgconn.ErrConnClosed,
		"statement timeout":  &pgconn.PgError{Code: "57014"},
		"admin shutdown":     &pgconn.PgError{Code: "57P01"},
		"starting up":        &pgconn.PgError{Code: "57P03"},
		"connection failure": &pgconn.PgError{Code: "08006"},
		"too many clients":   &pgconn.PgError{Code: "53300"},
		"disk full":          &pgconn.PgError{Code: "53100"},
	} {
		err := interpretError("get agreement", fmt.Errorf("wrapped: %w", cause))
		if !errors.Is(err, room.ErrUnavailable) || !errors.Is(err, cause) {
			t.Errorf("%s: %v is not unavailable with its cause", name, err)
		}
	}
	for name, cause := range map[string]error{
		"syntax":      &pgconn.PgError{Code: "42601"},
		"foreign key": &pgconn.PgError{Code: "23503"},
		"scan":        errors.New("can't scan into dest[0]"),
	} {
		if err := interpretError("get agreement", cause); errors.Is(err, room.ErrUnavailable) {
			t.Errorf("%s: %v counted as unavailable", name, err)
		}
	}
}

func TestPoolSize(t *testing.T) {
	t.Parallel()
	for url, want := range map[string]int32{
		"postgres://u@localhost/db":                   DefaultMaxConns,
		"postgres://u@localhost/db?pool_max_conns=3":  3,
		"host=localhost dbname=db pool_max_conns=40":  40,
		"host=localhost dbname=db connect_timeout=10": DefaultMaxConns,
	} {
		cfg, err := pgxConfig(url)
		if err != nil || cfg.MaxConns != want || cfg.AfterConnect == nil {
			t.Errorf("%s: MaxConns %d, want %d (%v)", url, cfg.MaxConns, want, err)
		}
	}
}
