package store

import (
	"sync"

	"github.com/ductus/ductus/actor"
)

// PKCache maps actor refs to the key of the incarnation an adapter last
// enqueued to, so a Tell to an actor known to exist can address its row by
// primary key with a plain update (no upsert). A stale entry (the actor
// was destroyed, here or by another process) only costs that update a
// miss, after which the adapter runs its general form and drops or
// replaces the entry. The zero value is ready to use.
type PKCache struct {
	mu sync.Mutex
	m  map[actor.Ref]int64
}

// pkCacheSize bounds the entries; past it an arbitrary one is evicted.
const pkCacheSize = 1 << 16

// Get returns the key last seen for r.
func (c *PKCache) Get(r actor.Ref) (int64, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	pk, ok := c.m[r]
	return pk, ok
}

// Put records r's key.
func (c *PKCache) Put(r actor.Ref, pk int64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.m == nil {
		c.m = map[actor.Ref]int64{}
	}
	if _, ok := c.m[r]; !ok && len(c.m) >= pkCacheSize {
		for k := range c.m { // evict an arbitrary entry
			delete(c.m, k)
			break
		}
	}
	c.m[r] = pk
}

// Drop forgets r.
func (c *PKCache) Drop(r actor.Ref) {
	c.mu.Lock()
	delete(c.m, r)
	c.mu.Unlock()
}
