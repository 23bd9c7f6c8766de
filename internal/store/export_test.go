package store

import (
	"context"
	"slices"

	"github.com/jackc/pgx/v5/pgtype"
	"github.com/jackc/pgx/v5/pgxpool"
)

// Pool exposes s's pool to the external tests.
func Pool(s *Store) *pgxpool.Pool { return s.pool }

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

// AppendTogether runs the appends in one batch, as the appender would: each
// append's own error, and the batch's.
func AppendTogether(s *Store, reqs []AppendRequest, decides []func(*AppendState) (AppendWrite, error)) ([]error, error) {
	jobs := make([]*appendJob, len(reqs))
	for i := range reqs {
		jobs[i] = &appendJob{req: reqs[i], decide: decides[i]}
	}
	err := s.appendBatch(context.Background(), slices.Clone(jobs))
	errs := make([]error, len(jobs))
	for i, j := range jobs {
		errs[i] = j.err
	}
	return errs, err
}

// LargestBatch is the most appends s has run in one transaction.
func LargestBatch(s *Store) int {
	s.apx.mu.Lock()
	defer s.apx.mu.Unlock()
	return s.apx.largest
}
