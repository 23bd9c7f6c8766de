package store_test

import (
	"context"
	"testing"

	"github.com/google/uuid"

	"github.com/consensus-md/consensus/internal/pgtest"
	"github.com/consensus-md/consensus/internal/store"
)

// TestUUIDCodec: uuids travel as 16 binary bytes both ways, NULL included,
// and agree with PostgreSQL's own text form.
func TestUUIDCodec(t *testing.T) {
	t.Parallel()
	st := pgtest.Store(t)
	pool := store.Pool(st)
	ctx := context.Background()
	id := uuid.New()
	var text string
	var back uuid.UUID
	var null, some uuid.NullUUID
	err := pool.QueryRow(ctx, `SELECT $1::uuid::text, $1::uuid, NULL::uuid, $2::uuid`, id, uuid.NullUUID{UUID: id, Valid: true}).Scan(&text, &back, &null, &some)
	if err != nil || text != id.String() || back != id || null.Valid || some != (uuid.NullUUID{UUID: id, Valid: true}) {
		t.Fatalf("%s %s %+v %+v: %v", text, back, null, some, err)
	}
	var isNull bool
	if err := pool.QueryRow(ctx, `SELECT $1::uuid IS NULL`, uuid.NullUUID{}).Scan(&isNull); err != nil || !isNull {
		t.Fatalf("a NullUUID without Valid is not NULL: %v %v", isNull, err)
	}
	if err := pool.QueryRow(ctx, `SELECT NULL::uuid`).Scan(&back); err == nil {
		t.Fatal("NULL scanned into a uuid.UUID")
	}
	// The plans are the codec's, not a text round trip through
	// sql.Scanner and driver.Valuer.
	for _, c := range []struct{ target, value any }{{&back, id}, {&null, some}} {
		if scan, encode, err := store.UUIDPlans(st, c.target, c.value); !scan || !encode || err != nil {
			t.Fatalf("%T/%T: binary scan plan %v, encode plan %v (%v)", c.target, c.value, scan, encode, err)
		}
	}
}
