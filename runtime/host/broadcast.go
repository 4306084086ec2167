package host

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"time"

	"github.com/ductus/ductus/actor"
	"github.com/ductus/ductus/runtime/store"
)

// Broadcast is a committed change of an observable, published to
// subscribers after its commit. It is a notification, not the source of
// truth: a subscriber that missed one (a reconnect, a crash) reads the
// current values with Observe.
type Broadcast struct {
	ID           int64
	Ref          actor.Ref
	Name         string
	Value        json.RawMessage
	StateVersion int
	At           time.Time
}

type subscriptions struct {
	mu    sync.RWMutex
	next  int
	byRef map[actor.Ref]map[int]func(Broadcast)
	all   map[int]func(Broadcast)
}

func newSubscriptions() *subscriptions {
	return &subscriptions{byRef: map[actor.Ref]map[int]func(Broadcast){}, all: map[int]func(Broadcast){}}
}

// Subscribe calls fn (on the broadcast goroutine: keep it short) for every
// broadcast of ref's observables committed from now on, after the
// subscription policy allows it. The returned function unsubscribes.
func (h *Host) Subscribe(ctx context.Context, ref actor.Ref, fn func(Broadcast)) (func(), error) {
	if _, err := h.reg.Lookup(ref.Type); err != nil {
		return nil, err
	}
	if err := actor.ValidateID(ref.ID, h.cfg.Limits.IDBytes); err != nil {
		return nil, err
	}
	if err := h.cfg.Policies.Authorize(ctx, actor.Request{Operation: actor.OpSubscription, Ref: ref}); err != nil {
		return nil, err
	}
	h.catchUpBroadcasts()
	s := h.subs
	s.mu.Lock()
	defer s.mu.Unlock()
	s.next++
	id := s.next
	if s.byRef[ref] == nil {
		s.byRef[ref] = map[int]func(Broadcast){}
	}
	s.byRef[ref][id] = fn
	return func() {
		s.mu.Lock()
		defer s.mu.Unlock()
		delete(s.byRef[ref], id)
		if len(s.byRef[ref]) == 0 {
			delete(s.byRef, ref)
		}
	}, nil
}

// SubscribeAll calls fn for every broadcast of every actor (the realtime
// package fans them out to its own clients, each authorized there).
func (h *Host) SubscribeAll(fn func(Broadcast)) func() {
	h.catchUpBroadcasts()
	s := h.subs
	s.mu.Lock()
	defer s.mu.Unlock()
	s.next++
	id := s.next
	s.all[id] = fn
	return func() {
		s.mu.Lock()
		defer s.mu.Unlock()
		delete(s.all, id)
	}
}

// catchUpBroadcasts waits, when the tailer skipped reads for want of
// subscribers, for one read that brings its cursor up to date, so a new
// subscriber is not handed broadcasts committed before it subscribed (the
// same as when the tailer read after every commit). Only the tailer sets
// bcStale, so it is running to answer; a shutdown ends the wait.
func (h *Host) catchUpBroadcasts() {
	if !h.bcStale.Load() || !h.subs.none() {
		return
	}
	done := make(chan struct{})
	select {
	case h.bcSync <- done:
		select {
		case <-done:
		case <-h.ctx.Done():
		}
	case <-h.ctx.Done():
	}
}

// none reports whether nobody is subscribed.
func (s *subscriptions) none() bool {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return len(s.byRef) == 0 && len(s.all) == 0
}

func (s *subscriptions) publish(b Broadcast) int {
	s.mu.RLock()
	defer s.mu.RUnlock()
	n := 0
	for _, fn := range s.byRef[b.Ref] {
		fn(b)
		n++
	}
	for _, fn := range s.all {
		fn(b)
		n++
	}
	return n
}

// Observe returns an actor's current observable values from its committed
// state (the reconnect source of truth), after the subscription policy.
func (h *Host) Observe(ctx context.Context, ref actor.Ref) (map[string]json.RawMessage, int, error) {
	def, err := h.reg.Lookup(ref.Type)
	if err != nil {
		return nil, 0, err
	}
	if err := h.cfg.Policies.Authorize(ctx, actor.Request{Operation: actor.OpSubscription, Ref: ref}); err != nil {
		return nil, 0, err
	}
	var state []byte
	version := 0
	info, err := h.be.ActorGet(ctx, ref)
	switch {
	case err == nil:
		state, version = info.State, info.StateVersion
	case !isNotFound(err):
		return nil, 0, err
	}
	impl, err := def.Load(state, version)
	if err != nil {
		return nil, 0, err
	}
	out := map[string]json.RawMessage{}
	for name, v := range impl.Observe() {
		b, err := actor.Encode("observable "+name, v, h.cfg.Limits.StateBytes, h.cfg.Limits.Depth)
		if err != nil {
			return nil, 0, fmt.Errorf("observable %q: %w", name, err)
		}
		out[name] = b
	}
	return out, def.Spec().StateVersion, nil
}

// broadcastLoop tails committed broadcast rows and publishes them to this
// process's subscribers. IDs can commit out of order on server backends (a
// lower ID committing after a higher one was read), so gaps below the
// cursor are re-read for a while before they are given up.
func (h *Host) broadcastLoop(ctx context.Context, cursor int64) {
	gaps := map[int64]time.Time{} // missing IDs below the cursor, with when to give up
	t := time.NewTicker(h.cfg.PollInterval)
	defer t.Stop()
	var synced chan struct{} // a subscriber waiting for this read
	for {
		select {
		case <-ctx.Done():
			return
		case <-h.bcWake:
			if h.subs.none() && synced == nil {
				// Nobody to publish to: a read per commit of a busy process
				// cost a query per turn for nothing. The ticker's reads keep
				// the cursor near, and a first subscriber waits for a read
				// (bcSync).
				h.bcStale.Store(true)
				continue
			}
		case synced = <-h.bcSync:
		case <-t.C:
		}
		h.bcStale.Store(false)
		from := cursor
		for id := range gaps {
			from = min(from, id-1)
		}
		rows, err := h.be.BroadcastRead(ctx, &store.BroadcastReadParams{AfterID: from, Limit: 1000})
		if err != nil {
			if ctx.Err() == nil {
				h.log.Warn("reading broadcasts failed", "err", err)
			}
			if synced != nil { // the subscriber goes ahead; the ticker retries
				close(synced)
				synced = nil
			}
			continue
		}
		now := time.Now()
		var delivered []int64
		for _, r := range rows {
			if r.ID <= cursor {
				if _, missing := gaps[r.ID]; !missing {
					continue // published already
				}
				delete(gaps, r.ID)
			} else {
				for g := cursor + 1; g < r.ID && len(gaps) < 10_000; g++ {
					gaps[g] = now.Add(10 * time.Second)
				}
				cursor = r.ID
			}
			if h.subs.publish(Broadcast{ID: r.ID, Ref: r.Ref, Name: r.Name, Value: r.Value, StateVersion: r.StateVersion, At: r.CreatedAt}) > 0 {
				delivered = append(delivered, r.ID)
			}
		}
		for id, until := range gaps {
			if now.After(until) {
				delete(gaps, id)
			}
		}
		h.met.broadcasts.Add(float64(len(delivered)))
		if len(delivered) > 0 {
			if err := h.be.BroadcastMarkDelivered(ctx, delivered); err != nil && ctx.Err() == nil {
				h.log.Warn("recording broadcast delivery failed", "err", err)
			}
		}
		if len(rows) == 1000 {
			h.poke(h.bcWake) // more to read (a waiting subscriber waits for it)
		} else if synced != nil {
			close(synced)
			synced = nil
		}
	}
}
