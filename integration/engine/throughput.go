package engine

import (
	"sync"
	"time"

	"github.com/ductus/ductus/integration/api"
)

// throughput is what an interface received and sent, a bucket per minute
// over the last hour: the console's sparkline. Like destStats it is in
// memory and per process (a restart begins again at zero; Prometheus's
// _total counters are the history that spans restarts).
type throughput struct {
	mu      sync.Mutex
	buckets [throughputMinutes]throughputBucket
	last    int64 // the latest minute counted in (0: none), so an idle hour is seen at once
}

// throughputMinutes is how many one-minute buckets are kept.
const throughputMinutes = 60

// throughputBucket is one minute's counts; minute (Unix minutes) tells a
// bucket of this hour from the one it replaces in the ring.
type throughputBucket struct {
	minute         int64
	received, sent int64
}

// add counts received and sent messages in now's minute.
func (t *throughput) add(now time.Time, received, sent int64) {
	m := now.Unix() / 60
	t.mu.Lock()
	b := &t.buckets[m%throughputMinutes]
	if b.minute != m {
		*b = throughputBucket{minute: m}
	}
	b.received += received
	b.sent += sent
	t.last = m
	t.mu.Unlock()
}

// view is the last hour up to now's minute, oldest first; nil when the
// hour had nothing (so an API answer over many idle interfaces stays
// small).
func (t *throughput) view(now time.Time) *api.Throughput {
	m := now.Unix() / 60
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.last <= m-throughputMinutes { // nothing in the hour (GET /interfaces over 1,001 idle interfaces)
		return nil
	}
	out := &api.Throughput{BucketSeconds: 60, Until: time.Unix((m+1)*60, 0).UTC(),
		Received: make([]int64, throughputMinutes), Sent: make([]int64, throughputMinutes)}
	for i := range throughputMinutes {
		want := m - throughputMinutes + 1 + int64(i)
		if b := t.buckets[want%throughputMinutes]; b.minute == want {
			out.Received[i], out.Sent[i] = b.received, b.sent
		}
	}
	return out
}
