// Package stress holds black-box tests of consensusd: real processes built
// from ./cmd/consensusd (see internal/proctest), real HTTP, a real
// PostgreSQL read directly for the after-the-fact invariants. It imports no
// service package but the pure ones (room, canon) to recompute outcomes and
// hash chains.
//
// Each numbered defect of issue 14 has a test named TestDefectN…; the stress
// tests (replicas, crash, database outage and freeze, hostile input, data at
// rest) run at a small size in `make test` and at full size with STRESS=1
// (`make stress`).
package stress
