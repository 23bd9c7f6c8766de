// Package stress holds black-box tests of consensusd: real processes built
// from ./cmd/consensusd (see internal/proctest), real HTTP, a real
// PostgreSQL read directly for the after-the-fact invariants. It imports no
// service package but the pure ones (room, canon) to recompute outcomes,
// command digests and hash chains.
//
// Each numbered defect a red team found has a test named TestDefectN…; the
// stress tests are TestStressReplicas, TestStressCrash,
// TestStressDatabaseOutage, TestHostileInput and TestDataAtRest. They run
// at a small size in `make test` and at full size with STRESS=1 (`make
// stress`). TestFailoverDrill (`make drill`, also in `make test`) kills the
// primary of a primary and standby under load and promotes the standby;
// TestRollingUpgrade (UPGRADE=1, `make upgrade-test`) replaces the previous
// release's replicas with this tree's one at a time. PROCTEST_CONSENSUSD runs them against a prebuilt binary;
// STRESS_SEED replays a load's random plan.
//
// Where the contract left room, the tests expect:
//   - a JSON body with no Content-Type, a non-JSON media type or a charset
//     other than UTF-8 is 415 unsupported-media-type (application/json,
//     any case, optionally with charset=utf-8, is accepted; a request
//     without a body needs no Content-Type);
//   - resend rotates the invitation secret and the email proof only: a
//     claimed participant token keeps working (revoke stops it), a claim
//     with the new proof replays the same binding and token, and
//     openapi.json says so in the resend operation;
//   - a database failure is judged against the default bound of 5 s
//     (CONSENSUS_DB_TIMEOUT=2s is set and its being honoured is logged);
//   - a 10 MB body to revoke or resend is 413, like every operator request
//     over its documented limit;
//   - an address the transport cannot deliver is refused at creation, or,
//     when accepted, must be delivered.
package stress
