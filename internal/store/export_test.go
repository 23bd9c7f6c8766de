package store

import (
	"context"
	"slices"

	"github.com/jackc/pgx/v5/pgtype"
	"github.com/jackc/pgx/v5/pgxpool"
)

// Pool exposes s's pool to the external tests; LookupPool its lookups'.
func Pool(s *Store) *pgxpool.Pool { return s.pool }

func LookupPool(s *Store) *pgxpool.Pool { return s.look.pool }

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

// AppendTogether runs the appends in one batch, as the appender does (a
// locked agreement is left out): each append's own error, whether it was
// left out to run alone, and the batch's error.
func AppendTogether(s *Store, reqs []AppendRequest, decides []func(*AppendState) (AppendWrite, error)) ([]error, []bool, error) {
	jobs := make([]*appendJob, len(reqs))
	for i := range reqs {
		jobs[i] = &appendJob{req: reqs[i], decide: decides[i]}
	}
	err := s.appendBatch(context.Background(), slices.Clone(jobs), true, nil)
	errs, alone := make([]error, len(jobs)), make([]bool, len(jobs))
	for i, j := range jobs {
		errs[i], alone[i] = j.err, j.alone
	}
	return errs, alone, err
}

// LargestBatch is the most appends s has run in one transaction.
func LargestBatch(s *Store) int {
	s.apx.mu.Lock()
	defer s.apx.mu.Unlock()
	return s.apx.largest
}

// AloneRuns is how many appends s's batches have sent to run alone;
// QueuedAppends how many appends wait for a batch.
func AloneRuns(s *Store) int {
	s.apx.mu.Lock()
	defer s.apx.mu.Unlock()
	return s.apx.aloneRuns
}

func QueuedAppends(s *Store) int {
	s.apx.mu.Lock()
	defer s.apx.mu.Unlock()
	return len(s.apx.queue)
}

// QueuedLookups is how many token lookups wait for s's lookup worker;
// LargestLookup the most one statement has carried.
func QueuedLookups(s *Store) int {
	s.look.mu.Lock()
	defer s.look.mu.Unlock()
	return len(s.look.queue)
}

// TakenLookups is how many lookups s's workers have taken.
func TakenLookups(s *Store) int {
	s.look.mu.Lock()
	defer s.look.mu.Unlock()
	return s.look.taken
}

// LookupWorkers is how many lookup statements run at once.
const LookupWorkers = lookupWorkers

func LargestLookup(s *Store) int {
	s.look.mu.Lock()
	defer s.look.mu.Unlock()
	return s.look.largest
}
