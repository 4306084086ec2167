package msgstore

import (
	"context"
	"maps"
	"slices"
	"sync"

	"github.com/hashicorp/golang-lru/v2/simplelru"
)

// A stored message never changes: an edit is a new message, a resend
// queues the same one again, and nothing deletes one. So the lanes, which
// read the message of each delivery (a fan-out to 25 destinations read
// each message 25 times, a query apiece), can be answered from memory.
// The intake puts each message it queued here once its transaction has
// committed; a lane that misses (another process took the message in, or
// it was evicted, or this process restarted) reads it and puts it here.
//
// The cache is bounded by the payloads' bytes, least recently used first
// out; a payload larger than recentMaxEntry is never kept, so one large
// file cannot push out everything else.
const (
	recentMaxBytes = 16 << 20
	recentMaxEntry = 1 << 20
	// recentEntryCost is what an entry costs beside its payload (the
	// struct, its strings and meta), so that many small messages are
	// bounded too.
	recentEntryCost = 512
)

// recent is the cache of messages by ID. Its entries are shared: nothing
// may change a Message it returns.
type recent struct {
	mu    sync.Mutex
	lru   *simplelru.LRU[string, *Message]
	bytes int
	max   int
}

func newRecent(maxBytes int) *recent {
	r := &recent{max: maxBytes}
	// The count bound is only a backstop: the byte bound evicts first.
	lru, err := simplelru.NewLRU[string, *Message](maxBytes/recentEntryCost+1, func(_ string, m *Message) {
		r.bytes -= cost(m)
	})
	if err != nil {
		panic(err) // only for a size below 1, which the +1 rules out
	}
	r.lru = lru
	return r
}

func cost(m *Message) int { return len(m.Payload) + recentEntryCost }

// put keeps a copy of m (the caller's slices and meta stay the caller's).
func (r *recent) put(m *Message) {
	if len(m.Payload) > recentMaxEntry {
		return
	}
	c := *m
	c.Payload = slices.Clone(m.Payload)
	c.ACK = nil // only a duplicate's answer needs it, and it reads it in its transaction
	c.Meta = maps.Clone(m.Meta)
	r.mu.Lock()
	defer r.mu.Unlock()
	if old, ok := r.lru.Peek(c.ID); ok {
		r.bytes -= cost(old)
	}
	r.lru.Add(c.ID, &c)
	r.bytes += cost(&c)
	for r.bytes > r.max {
		if _, _, ok := r.lru.RemoveOldest(); !ok {
			break
		}
	}
}

func (r *recent) get(id string) (*Message, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.lru.Get(id)
}

// Remember keeps the pending (queued) ones of messages that were just
// stored, for the lanes that will read them (see Queued); a duplicate or a
// rejected record is never delivered. Call it only after the transaction
// that wrote them has committed: a message that was rolled back must not
// be served.
func (s *Store) Remember(msgs []Message) {
	for i := range msgs {
		if msgs[i].Status == StatusPending {
			s.recent.put(&msgs[i])
		}
	}
}

// Queued reads a message for a lane's delivery: from the messages this
// process committed or read lately, else from the database. The Message is
// shared with other callers and must not be changed.
func (s *Store) Queued(ctx context.Context, id string) (*Message, error) {
	if m, ok := s.recent.get(id); ok {
		return m, nil
	}
	m, err := s.Get(ctx, id)
	if err != nil {
		return nil, err
	}
	s.recent.put(m)
	return m, nil
}
