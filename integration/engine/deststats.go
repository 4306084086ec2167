package engine

import (
	"slices"
	"sync"
	"sync/atomic"
	"time"
)

// destStats is what this engine process saw a destination do since it
// started: how many deliveries it sent, quarantined and filtered, and the
// time from receipt to sent of its latest sends (for p50 and p95). It is
// in memory, per process: with several engines on one database each
// reports its own, and a restart starts again from zero. The counts that
// span processes and restarts are the database's (pending, quarantined)
// and Prometheus's (the _total counters, summed by the scraper).
type destStats struct {
	sent, quarantined, filtered atomic.Int64

	mu   sync.Mutex
	lat  [latencyWindow]time.Duration // a ring of the latest sends' latencies
	seen int                          // sends observed (the ring holds the last latencyWindow)
}

// latencyWindow is how many of the latest sends the percentiles cover.
const latencyWindow = 1024

// observeSent counts a send and its receipt-to-sent latency.
func (s *destStats) observeSent(latency time.Duration) {
	s.sent.Add(1)
	s.mu.Lock()
	s.lat[s.seen%latencyWindow] = latency
	s.seen++
	s.mu.Unlock()
}

// percentiles are p50 and p95 of the window's latencies (nearest rank);
// ok is false before the first send.
func (s *destStats) percentiles() (p50, p95 time.Duration, ok bool) {
	s.mu.Lock()
	n := min(s.seen, latencyWindow)
	window := slices.Clone(s.lat[:n])
	s.mu.Unlock()
	if n == 0 {
		return 0, 0, false
	}
	slices.Sort(window)
	rank := func(p int) time.Duration { return window[(p*n+99)/100-1] }
	return rank(50), rank(95), true
}

// statsOf is a destination's stats (nil for one not in the project).
func (e *Engine) statsOf(iface, dest string) *destStats {
	return e.stats[destKey(iface, dest)]
}
