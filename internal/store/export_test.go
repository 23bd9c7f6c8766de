package store

import (
	"context"

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
