package ops

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/consensus-md/consensus/internal/venue"
)

// WatchRoomCache adds the room cache's series, read from stats at each
// scrape.
func (m *Metrics) WatchRoomCache(stats func() venue.RoomCacheStats) {
	m.reg.MustRegister(&roomCacheCollector{
		stats:     stats,
		bytes:     prometheus.NewDesc("consensus_room_cache_bytes", "Bytes the room cache of this replica holds now (encoded rooms, counted as the cache counts them).", nil, nil),
		limit:     prometheus.NewDesc("consensus_room_cache_limit_bytes", "The most bytes the room cache holds before it evicts the least recently read room.", nil, nil),
		rooms:     prometheus.NewDesc("consensus_room_cache_rooms", "Rooms the room cache holds now.", nil, nil),
		reads:     prometheus.NewDesc("consensus_room_cache_reads_total", "Room reads by how the cache served them: hit (as cached), tail (the events after those cached, read from the database) or whole (the whole room read from the database).", []string{"result"}, nil),
		evictions: prometheus.NewDesc("consensus_room_cache_evictions_total", "Rooms evicted to keep the cache within its limit. Evictions that keep pace with whole reads mean the rooms being read do not fit.", nil, nil),
	})
}

// roomCacheCollector reads the room cache's statistics at each scrape.
type roomCacheCollector struct {
	stats                                 func() venue.RoomCacheStats
	bytes, limit, rooms, reads, evictions *prometheus.Desc
}

// Describe sends every series' description.
func (c *roomCacheCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{c.bytes, c.limit, c.rooms, c.reads, c.evictions} {
		ch <- d
	}
}

// Collect reads the statistics once and sends every series.
func (c *roomCacheCollector) Collect(ch chan<- prometheus.Metric) {
	s := c.stats()
	gauge, counter := prometheus.GaugeValue, prometheus.CounterValue
	ch <- prometheus.MustNewConstMetric(c.bytes, gauge, float64(s.Bytes))
	ch <- prometheus.MustNewConstMetric(c.limit, gauge, float64(s.Limit))
	ch <- prometheus.MustNewConstMetric(c.rooms, gauge, float64(s.Rooms))
	ch <- prometheus.MustNewConstMetric(c.reads, counter, float64(s.Hits), "hit")
	ch <- prometheus.MustNewConstMetric(c.reads, counter, float64(s.Tails), "tail")
	ch <- prometheus.MustNewConstMetric(c.reads, counter, float64(s.Wholes), "whole")
	ch <- prometheus.MustNewConstMetric(c.evictions, counter, float64(s.Evictions))
}
