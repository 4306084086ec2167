package host

import (
	"container/list"
	"context"
	"math"
	"sync"
	"time"

	"github.com/ductus/ductus/actor"
	"github.com/ductus/ductus/runtime/store"
)

// activation is one leased actor held by this process.
type activation struct {
	pk   int64
	gen  int64
	ref  actor.Ref
	def  actor.Definition
	spec actor.Spec

	// Fields below are used by the one executor running the activation
	// (loaded, impl, state, observed) or under cache.mu (the rest).
	loaded   bool
	impl     actor.Activation
	stored   []byte // state as last committed (nil: never)
	storedV  int
	state    []byte // the in-memory state, encoded after the last turn
	observed map[string][]byte
	initial  []byte // the lease's state at claim, for loading
	initialV int

	running bool
	// wakes counts wake-ups that found the activation running (under
	// cache.mu); wakesTaken is its value when the executor last started
	// a take (executor only). A wake-up that came before a take started is
	// answered by that take: the work that caused it was committed before
	// the wake-up, so the take's snapshot sees it. Only a later one sends
	// the activation round again; a wake-up per poll of a busy actor would
	// otherwise cost an empty take (a write transaction) after every pass.
	wakes      uint64
	wakesTaken uint64
	lost       bool
	lastUsed   time.Time
	elem       *list.Element // position in the idle LRU while idle
}

func (a *activation) lease() store.LeaseRef { return store.LeaseRef{ActorPK: a.pk, Generation: a.gen} }

// deactivate runs the best-effort OnDeactivate hook.
func (a *activation) deactivate(ctx context.Context, h *Host) {
	if a.impl == nil || a.lost {
		return
	}
	defer func() {
		if r := recover(); r != nil {
			h.log.Warn("OnDeactivate panicked", "actor", a.ref.String(), "panic", r)
		}
	}()
	a.impl.Deactivate(actor.NewContext(ctx, actor.TurnInfo{Ref: a.ref, Generation: a.gen}, h.log, h.checker))
}

// cache holds this process's activations: running ones and idle ones
// (kept, lease renewed, for IdleTimeout, least recently used evicted past
// the capacity).
type cache struct {
	mu       sync.Mutex
	byPK     map[int64]*activation
	idle     *list.List // front = most recently used
	capacity int
	// full is poked when the cache holds more than capacity and an idle
	// activation could go: the lease loop evicts at once rather than at its
	// next tick, so the bound holds as activations are added.
	full chan struct{}
}

func (c *cache) init(capacity int) {
	c.byPK = map[int64]*activation{}
	c.idle = list.New()
	c.capacity = capacity
	c.full = make(chan struct{}, 1)
}

// checkFull pokes the lease loop when an idle activation must make room.
// Called with mu held.
func (c *cache) checkFull() {
	if c.capacity > 0 && len(c.byPK) > c.capacity && c.idle.Len() > 0 {
		select {
		case c.full <- struct{}{}:
		default:
		}
	}
}

// add registers a freshly claimed activation as running. A stale entry
// for the same actor (an older generation this process lost) is replaced.
func (c *cache) add(a *activation) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if old, ok := c.byPK[a.pk]; ok && old.elem != nil {
		c.idle.Remove(old.elem)
		old.elem = nil
	}
	a.running = true
	c.byPK[a.pk] = a
	c.checkFull()
}

// wakeIdle marks a cached actor as having work: an idle one is returned to
// be scheduled (and marked running); a running one will loop again.
func (c *cache) wakeIdle(pk int64) (*activation, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	a, ok := c.byPK[pk]
	if !ok || a.lost {
		return nil, ok
	}
	if a.running {
		a.wakes++
		return nil, true
	}
	if a.elem != nil {
		c.idle.Remove(a.elem)
		a.elem = nil
	}
	a.running = true
	return a, true
}

// pkOf finds the cached activation of ref by a scan of the cache (for an
// operator's call, not the message path).
func (c *cache) pkOf(ref actor.Ref) (int64, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for pk, a := range c.byPK {
		if a.ref == ref && !a.lost {
			return pk, true
		}
	}
	return 0, false
}

// park returns an activation that ran out of work to the idle set, unless
// work arrived meanwhile (then it should run again: returns true).
func (c *cache) park(a *activation, now time.Time) (again bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if a.wakes != a.wakesTaken {
		return true
	}
	a.running = false
	a.lastUsed = now
	a.elem = c.idle.PushFront(a)
	c.checkFull() // an add found no idle activation to evict: this one may be it
	return false
}

// taking records that the executor is about to take a's next messages:
// the wake-ups so far are answered by that take.
func (c *cache) taking(a *activation) {
	c.mu.Lock()
	a.wakesTaken = a.wakes
	c.mu.Unlock()
}

// remove drops an activation (lost, released or yielded).
func (c *cache) remove(a *activation) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if cur, ok := c.byPK[a.pk]; ok && cur == a {
		delete(c.byPK, a.pk)
	}
	if a.elem != nil {
		c.idle.Remove(a.elem)
		a.elem = nil
	}
}

// leases lists every activation's lease (running and idle), for renewal.
func (c *cache) leases() []store.LeaseRef {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := make([]store.LeaseRef, 0, len(c.byPK))
	for _, a := range c.byPK {
		out = append(out, a.lease())
	}
	return out
}

// markLost flags activations whose lease did not renew and removes the
// idle ones; a running one finds out at its commit.
func (c *cache) markLost(renewed []store.LeaseRef, asked []store.LeaseRef) []*activation {
	ok := make(map[store.LeaseRef]bool, len(renewed))
	for _, l := range renewed {
		ok[l] = true
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	var lost []*activation
	for _, l := range asked {
		a, found := c.byPK[l.ActorPK]
		if !found || a.gen != l.Generation || ok[l] {
			continue
		}
		a.lost = true
		lost = append(lost, a)
		if !a.running {
			delete(c.byPK, a.pk)
			if a.elem != nil {
				c.idle.Remove(a.elem)
				a.elem = nil
			}
		}
	}
	return lost
}

// evict takes idle activations past the idle timeout, and the least
// recently used beyond the capacity, out of the cache.
func (c *cache) evict(now time.Time, idle time.Duration, capacity int) []*activation {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []*activation
	for e := c.idle.Back(); e != nil; {
		a := e.Value.(*activation)
		prev := e.Prev()
		if now.Sub(a.lastUsed) < idle && len(c.byPK) <= capacity {
			break
		}
		c.idle.Remove(e)
		a.elem = nil
		delete(c.byPK, a.pk)
		out = append(out, a)
		e = prev
	}
	return out
}

// drain empties the cache at shutdown.
func (c *cache) drain() []*activation {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := make([]*activation, 0, len(c.byPK))
	for _, a := range c.byPK {
		out = append(out, a)
	}
	c.byPK = map[int64]*activation{}
	c.idle.Init()
	return out
}

func (c *cache) size() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.byPK)
}

// leaseLoop renews the leases of every held activation and evicts idle
// ones.
func (h *Host) leaseLoop(ctx context.Context) {
	t := time.NewTicker(h.cfg.RenewEvery)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-h.cache.full:
			// Over capacity: only the least recently used idle ones go.
			if evicted := h.cache.evict(time.Now(), time.Duration(math.MaxInt64), h.cfg.CacheCapacity); len(evicted) > 0 {
				h.release(ctx, evicted, false)
			}
			h.met.cached.Set(float64(h.cache.size()))
			continue
		case <-t.C:
		}
		asked := h.cache.leases()
		if len(asked) > 0 {
			renewed, err := h.be.LeaseRenew(ctx, &store.LeaseRenewParams{Owner: h.id, TTL: h.cfg.LeaseTTL, Leases: asked})
			if err != nil {
				if ctx.Err() == nil {
					h.log.Warn("lease renewal failed", "leases", len(asked), "err", err)
					h.met.storeErrors.WithLabelValues("renew").Inc()
				}
			} else {
				if lost := h.cache.markLost(renewed, asked); len(lost) > 0 {
					for _, a := range lost {
						h.met.leaseLosses.WithLabelValues(a.ref.Type).Inc()
					}
					// One line for the lot: a process that was paused past its
					// leases may lose thousands at once.
					h.log.Warn("leases lost before renewal (expired or taken over)", "count", len(lost), "first", lost[0].ref.String())
				}
			}
		}
		evicted := h.cache.evict(time.Now(), h.cfg.IdleTimeout, h.cfg.CacheCapacity)
		if len(evicted) > 0 {
			h.release(ctx, evicted, false)
		}
		h.met.cached.Set(float64(h.cache.size()))
	}
}

// release runs OnDeactivate and gives the leases back.
func (h *Host) release(ctx context.Context, acts []*activation, yield bool) {
	leases := make([]store.LeaseRef, 0, len(acts))
	for _, a := range acts {
		a.deactivate(ctx, h)
		leases = append(leases, a.lease())
	}
	if err := h.be.LeaseRelease(ctx, &store.LeaseReleaseParams{Owner: h.id, Leases: leases, Yield: yield}); err != nil && ctx.Err() == nil {
		h.log.Warn("lease release failed; the leases will expire", "leases", len(leases), "err", err)
	}
}
