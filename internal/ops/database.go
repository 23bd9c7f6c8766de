package ops

import (
	"context"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/consensus-md/consensus/internal/store"
)

// Database is what the operations listener asks about PostgreSQL;
// *store.Store is one.
type Database interface {
	// Ping returns nil when the database answered before ctx ended.
	Ping(ctx context.Context) error
	// SchemaCurrent returns nil when every embedded migration is applied.
	SchemaCurrent(ctx context.Context) error
	// PoolStats reads the connection pool's statistics without I/O.
	PoolStats() store.PoolStats
	// OutboxDepth counts the emails still to be sent.
	OutboxDepth(ctx context.Context) (int64, error)
}

// depthTimeout bounds the outbox count a scrape makes; a database that
// does not answer in time leaves the series out of that scrape.
const depthTimeout = time.Second

// databaseCollector reads the pool statistics and the outbox depth at
// each scrape, so they are never stale.
type databaseCollector struct {
	db    Database
	depth *prometheus.Desc
	pool  []poolSeries
}

// poolSeries is one pgxpool statistic as a metric.
type poolSeries struct {
	desc  *prometheus.Desc
	kind  prometheus.ValueType
	value func(store.PoolStats) float64
}

func newDatabaseCollector(db Database) *databaseCollector {
	c := &databaseCollector{db: db, depth: prometheus.NewDesc("consensus_outbox_depth",
		"Emails waiting to be sent (queued or retrying). The outbox is one table: every replica reports the same number.", nil, nil)}
	series := func(name, help string, kind prometheus.ValueType, value func(store.PoolStats) float64) {
		c.pool = append(c.pool, poolSeries{prometheus.NewDesc("consensus_db_pool_"+name, help, nil, nil), kind, value})
	}
	gauge, counter := prometheus.GaugeValue, prometheus.CounterValue
	series("acquired_conns", "Connections of this replica's pool in use now.", gauge, func(s store.PoolStats) float64 { return float64(s.AcquiredConns) })
	series("idle_conns", "Idle connections in the pool.", gauge, func(s store.PoolStats) float64 { return float64(s.IdleConns) })
	series("constructing_conns", "Connections being opened.", gauge, func(s store.PoolStats) float64 { return float64(s.ConstructingConns) })
	series("total_conns", "Connections in the pool: acquired, idle and being opened.", gauge, func(s store.PoolStats) float64 { return float64(s.TotalConns) })
	series("max_conns", "The pool's size (pool_max_conns in DATABASE_URL).", gauge, func(s store.PoolStats) float64 { return float64(s.MaxConns) })
	series("acquires_total", "Connections acquired from the pool.", counter, func(s store.PoolStats) float64 { return float64(s.AcquireCount) })
	series("acquire_duration_seconds_total", "Time spent acquiring connections.", counter, func(s store.PoolStats) float64 { return s.AcquireDuration.Seconds() })
	series("empty_acquires_total", "Acquires that had to wait because no idle connection was free.", counter, func(s store.PoolStats) float64 { return float64(s.EmptyAcquireCount) })
	series("empty_acquire_wait_seconds_total", "Time spent waiting in those acquires.", counter, func(s store.PoolStats) float64 { return s.EmptyAcquireWaitTime.Seconds() })
	series("canceled_acquires_total", "Acquires given up because their context ended.", counter, func(s store.PoolStats) float64 { return float64(s.CanceledAcquireCount) })
	series("new_conns_total", "Connections opened.", counter, func(s store.PoolStats) float64 { return float64(s.NewConnsCount) })
	series("max_lifetime_destroys_total", "Connections closed for reaching their maximum lifetime.", counter, func(s store.PoolStats) float64 { return float64(s.MaxLifetimeDestroyCount) })
	series("max_idle_destroys_total", "Connections closed for idling too long.", counter, func(s store.PoolStats) float64 { return float64(s.MaxIdleDestroyCount) })
	return c
}

// Describe sends every series' description.
func (c *databaseCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- c.depth
	for _, p := range c.pool {
		ch <- p.desc
	}
}

// Collect reads the pool, then counts the outbox within depthTimeout.
func (c *databaseCollector) Collect(ch chan<- prometheus.Metric) {
	stats := c.db.PoolStats()
	for _, p := range c.pool {
		ch <- prometheus.MustNewConstMetric(p.desc, p.kind, p.value(stats))
	}
	ctx, cancel := context.WithTimeout(context.Background(), depthTimeout)
	defer cancel()
	if n, err := c.db.OutboxDepth(ctx); err == nil {
		ch <- prometheus.MustNewConstMetric(c.depth, prometheus.GaugeValue, float64(n))
	}
}
