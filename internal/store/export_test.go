package store

import (
	"context"
	"time"

	"github.com/google/uuid"

	"github.com/jackc/pgx/v5/pgtype"
	"github.com/jackc/pgx/v5/pgxpool"
)

// Pool exposes s's pool to the external tests; LookupPool its lookups'.
func Pool(s *Store) *pgxpool.Pool { return s.pool }

func LookupPool(s *Store) *pgxpool.Pool { return s.lookupPool }

// UUIDPlans reports whether a connection of s's pool scans target and
// encodes value with the store's binary uuid plans.
func UUIDPlans(s *Store, target, value any) (scan, encode bool, err error) {
	conn, err := s.pool.Acquire(context.Background())
	if err != nil {
		return false, false, err
	}
	defer conn.Release()
	m := conn.Conn().TypeMap()
	_, scan = m.PlanScan(pgtype.UUIDOID, pgtype.BinaryFormatCode, target).(scanUUID)
	_, encode = m.PlanEncode(pgtype.UUIDOID, pgtype.BinaryFormatCode, value).(encodeUUID)
	return scan, encode, nil
}

// QueueOutcome queues the outcome emails of agreement id in a transaction
// of its own, as the transaction that made its outcome final did.
func QueueOutcome(ctx context.Context, s *Store, id uuid.UUID, at time.Time) error {
	return s.InTx(ctx, func(tx *Tx) error { return queueOutcome(ctx, tx.tx, id, at) })
}
