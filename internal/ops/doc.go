// Package ops is consensusd's operations listener: Prometheus metrics
// (/metrics), liveness (/livez), readiness (/readyz: the database answers
// and its schema is current, and the process is not shutting down) and,
// only when enabled, Go's profiler (/debug/pprof/).
//
// Metrics carry no credential and no id in a label: routes are chi
// patterns, never raw paths; actions, outcome statuses and delivery
// results come from closed sets, anything else is counted as "other".
// Metrics implements store.Observer (events, outcomes, deliveries) and the
// request observer of httpapi, so neither of those packages knows about
// Prometheus.
package ops
