package realtime

import (
	"encoding/json"
	"sync"
	"time"

	"github.com/gorilla/websocket"

	"github.com/ductus/ductus/actor"
	"github.com/ductus/ductus/runtime/host"
)

// entry is one retained observable change: a broadcast row. Its ID is the
// version: the database allocates broadcast IDs in commit order of one
// actor (its turns commit one after another under its lease), so an actor's
// versions only grow.
type entry struct {
	id    int64
	name  string
	value json.RawMessage
	at    time.Time
	// frame is this change as an update frame, framed once for every
	// subscriber (nil if it could not be prepared: each write encodes it).
	frame *websocket.PreparedMessage
}

// prepare frames e once as an update of ref.
func (e *entry) prepare(ref actor.Ref) {
	b, err := json.Marshal(updateFrame{Op: OpUpdate, Ref: ref, Version: e.id, Changes: map[string]json.RawMessage{e.name: e.value}})
	if err != nil {
		return
	}
	e.frame, _ = websocket.NewPreparedMessage(websocket.TextMessage, b)
}

// refState is what the hub knows of one actor: its latest version, the
// changes retained for resuming clients, and its subscribers here.
type refState struct {
	latest int64
	// floor: every change of this actor with a version above floor is in
	// ring (versions at or below it may have been evicted or never seen).
	floor   int64
	ring    []entry
	subs    map[*sub]struct{}
	touched time.Time
}

// hub fans the host's broadcasts out to subscriptions and retains recent
// changes per actor for resuming clients. Lock order: hub.mu, then a
// connection's queue lock.
type hub struct {
	mu        sync.Mutex
	refs      map[actor.Ref]*refState
	floor     int64 // for actors with no refState: changes above it were all seen
	retainN   int
	retainFor time.Duration
}

func newHub(startCursor int64, retainN int, retainFor time.Duration) *hub {
	return &hub{refs: map[actor.Ref]*refState{}, floor: startCursor, retainN: retainN, retainFor: retainFor}
}

// state returns ref's state, created at the hub's floor. Call with mu held.
func (h *hub) state(ref actor.Ref, now time.Time) *refState {
	rs := h.refs[ref]
	if rs == nil {
		rs = &refState{latest: h.floor, floor: h.floor, subs: map[*sub]struct{}{}}
		h.refs[ref] = rs
	}
	rs.touched = now
	return rs
}

// publish takes one broadcast from the host (on its broadcast goroutine,
// so it never blocks: connections' queues are bounded and non-blocking).
func (h *hub) publish(b host.Broadcast) {
	now := time.Now()
	h.mu.Lock()
	defer h.mu.Unlock()
	rs := h.state(b.Ref, now)
	if b.ID <= rs.latest {
		return // seen already (the host re-reads gaps), or older than this process
	}
	e := entry{id: b.ID, name: b.Name, value: b.Value, at: now}
	if len(rs.subs) > 0 {
		e.prepare(b.Ref)
	}
	rs.ring = append(rs.ring, e)
	rs.latest = max(rs.latest, b.ID)
	h.trim(rs, now)
	for s := range rs.subs {
		if !s.wants(e.name) {
			continue
		}
		if s.pending {
			s.held = append(s.held, e)
		} else {
			s.c.enqueueUpdate(s, e)
		}
	}
}

// trim evicts changes past the retention count or age, raising the floor.
func (h *hub) trim(rs *refState, now time.Time) {
	n := 0
	for n < len(rs.ring) && (len(rs.ring)-n > h.retainN || now.Sub(rs.ring[n].at) > h.retainFor) {
		rs.floor = rs.ring[n].id
		n++
	}
	if n > 0 {
		rs.ring = append(rs.ring[:0:0], rs.ring[n:]...)
	}
}

// sweep forgets actors with no subscribers and nothing retained for
// retainFor; the hub's floor rises past their versions, so a client
// resuming one of them later gets a snapshot rather than a guess.
func (h *hub) sweep(now time.Time) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for ref, rs := range h.refs {
		h.trim(rs, now)
		if len(rs.subs) == 0 && len(rs.ring) == 0 && now.Sub(rs.touched) > h.retainFor {
			h.floor = max(h.floor, rs.latest)
			delete(h.refs, ref)
		}
	}
}

// resume attaches s from the client's version since when every change
// after it is retained: it queues those changes and a resumed frame and
// reports true. Otherwise it changes nothing and the caller snapshots.
func (h *hub) resume(s *sub, since int64) bool {
	now := time.Now()
	h.mu.Lock()
	defer h.mu.Unlock()
	rs := h.state(s.ref, now)
	h.trim(rs, now)
	if since < rs.floor || since > rs.latest {
		// Too old (evicted, or from before this process saw the actor), or
		// from another history (a newer version than any committed here:
		// another database, or a client's bug).
		return false
	}
	for _, e := range rs.ring {
		if e.id > since && s.wants(e.name) {
			s.c.enqueueUpdate(s, e)
		}
	}
	s.c.enqueue(item{kind: kindResumed, sub: s, version: rs.latest})
	rs.subs[s] = struct{}{}
	return true
}

// beginSnapshot attaches s as pending (changes are held for it) and returns
// the version a snapshot read from now on is at least at.
func (h *hub) beginSnapshot(s *sub) int64 {
	h.mu.Lock()
	defer h.mu.Unlock()
	rs := h.state(s.ref, time.Now())
	s.pending, s.held = true, nil
	rs.subs[s] = struct{}{}
	return rs.latest
}

// endSnapshot queues the snapshot and then the changes held meanwhile (a
// held change may repeat what the snapshot shows: values are absolute, so
// applying it again changes nothing).
func (h *hub) endSnapshot(s *sub, version int64, values map[string]json.RawMessage) {
	h.mu.Lock()
	defer h.mu.Unlock()
	rs := h.refs[s.ref]
	if rs == nil {
		return
	}
	if _, ok := rs.subs[s]; !ok {
		return // removed meanwhile
	}
	s.c.enqueue(item{kind: kindSnapshot, sub: s, version: version, values: values})
	held := s.held
	s.pending, s.held = false, nil
	for _, e := range held {
		s.c.enqueueUpdate(s, e)
	}
}

// remove detaches s.
func (h *hub) remove(s *sub) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if rs := h.refs[s.ref]; rs != nil {
		delete(rs.subs, s)
	}
	s.pending, s.held = false, nil
}
