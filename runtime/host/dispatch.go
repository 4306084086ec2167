package host

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/ductus/ductus/actor"
	"github.com/ductus/ductus/runtime/store"
)

// hints are actors a local enqueue or a signal woke: the dispatcher claims
// them by key first, so a Tell to an idle actor does not wait for the
// longest-waiting scan to reach it.
type hints struct {
	mu  sync.Mutex
	pks map[int64]struct{}
}

func (x *hints) init() { x.pks = map[int64]struct{}{} }

func (x *hints) add(pk int64) {
	x.mu.Lock()
	x.pks[pk] = struct{}{}
	x.mu.Unlock()
}

func (x *hints) take(n int) []int64 {
	x.mu.Lock()
	defer x.mu.Unlock()
	out := make([]int64, 0, min(n, len(x.pks)))
	for pk := range x.pks {
		if len(out) == n {
			break
		}
		out = append(out, pk)
		delete(x.pks, pk)
	}
	return out
}

// workArrived is called after an enqueue committed for actor pk.
func (h *Host) workArrived(pk int64) {
	if h.cfg.NoWorkers {
		return
	}
	a, cached := h.cache.wakeIdle(pk)
	if a != nil {
		h.schedule(a)
		return
	}
	if cached {
		return // running: its executor takes the new message next
	}
	h.hints.add(pk)
	h.poke(h.wake)
}

// schedule hands an activation (marked running) to an executor. It never
// blocks the caller: the run queue is bounded by the executors, so an
// overflow goes through a goroutine.
func (h *Host) schedule(a *activation) {
	select {
	case h.runq <- a:
	default:
		if !h.startRun() {
			return // closing: Shutdown releases the lease with the rest
		}
		go func() {
			defer h.runWG.Done()
			select {
			case h.runq <- a:
			case <-h.ctx.Done():
				h.cache.remove(a)
			}
		}()
	}
}

// dispatchLoop claims activations while executors are free: actors woken by
// local enqueues first, then the longest-waiting candidates. It sleeps until
// woken (a local enqueue, a signal from another process, a freed executor)
// or the poll interval passes, when it also looks for work other processes
// enqueued to activations cached here.
func (h *Host) dispatchLoop(ctx context.Context) {
	poll := time.NewTicker(h.cfg.PollInterval)
	defer poll.Stop()
	backoff := time.Duration(0)
	for {
		polled := false
		select {
		case <-ctx.Done():
			return
		case <-h.wake:
		case <-poll.C:
			polled = true
		}
		if h.isClosing() {
			continue
		}
		if polled {
			h.pollOwned(ctx)
		}
		err := h.claimAvailable(ctx)
		if err == nil && polled {
			err = h.claimStarved(ctx)
		}
		if err != nil {
			if ctx.Err() != nil {
				return
			}
			h.met.storeErrors.WithLabelValues("claim").Inc()
			backoff = min(max(backoff*2, 10*time.Millisecond), time.Second)
			h.log.Warn("claiming activations failed", "err", err, "retry_in", backoff)
			sleep(ctx, backoff)
			h.poke(h.wake)
			continue
		}
		backoff = 0
	}
}

// claimStarved claims, while every executor is busy, up to Workers actors
// whose work has been claimable for two poll intervals: work no idle
// process is taking. Without it a process kept busy by the activations it
// holds never claims another actor (claimAvailable waits for a free
// executor, and the cached ones take every executor that frees), so in a
// lone process the actors it did not hold starved for as long as the
// others kept it busy. They queue behind the woken activations; an idle
// process would have claimed them at its next signal or poll, so it loses
// nothing to this one.
func (h *Host) claimStarved(ctx context.Context) error {
	if len(h.free)-len(h.runq) > 0 {
		return nil // claimAvailable claimed what the free executors can run
	}
	leases, err := h.be.LeaseClaim(ctx, &store.LeaseClaimParams{Owner: h.id, TTL: h.cfg.LeaseTTL, Limit: h.cfg.Workers,
		Types: h.types, MinWait: 2 * h.cfg.PollInterval})
	for _, l := range leases {
		h.startActivation(l)
	}
	return err
}

// startRun counts a pass, or an activation waiting to be handed to an
// executor, for Shutdown to wait for. Once the host is closing it counts
// nothing and says so: Shutdown waits on the count, and a WaitGroup must
// not go up from zero while a Wait is in progress (that panicked when a
// poll scheduled a busy host's activations during a shutdown). Nothing
// new starts after closing anyway; Shutdown releases the leases of what
// did not run.
func (h *Host) startRun() bool {
	h.claimMu.Lock()
	defer h.claimMu.Unlock()
	if h.closing {
		return false
	}
	h.runWG.Add(1)
	return true
}

func (h *Host) isClosing() bool {
	h.claimMu.Lock()
	defer h.claimMu.Unlock()
	return h.closing
}

// claimAvailable claims as many activations as there are free executors
// (and no more: a claimed actor waiting for an executor holds a lease
// nobody else can use).
func (h *Host) claimAvailable(ctx context.Context) error {
	for {
		free := len(h.free) - len(h.runq)
		if free <= 0 {
			return nil
		}
		p := &store.LeaseClaimParams{Owner: h.id, TTL: h.cfg.LeaseTTL, Limit: free, Types: h.types}
		if pks := h.hints.take(free); len(pks) > 0 {
			p.PKs = pks
		}
		leases, err := h.be.LeaseClaim(ctx, p)
		if err != nil {
			for _, pk := range p.PKs {
				h.hints.add(pk)
			}
			return err
		}
		for _, l := range leases {
			h.startActivation(l)
		}
		if p.PKs != nil {
			if len(leases) < len(p.PKs) {
				h.hintsMissed(p.PKs, leases)
			}
			continue // hints done: now the general scan
		}
		if len(leases) < free {
			return nil
		}
	}
}

// hintsMissed wakes other processes when actors this process enqueued to
// could not be claimed here: most often another process holds the lease
// (an activation cached there, idle for up to IdleTimeout), and it would
// otherwise find the message only at its next poll. The signal is
// debounced and sent after the enqueue committed. (An actor with no due
// work left, already taken by another process, costs a signal nobody
// needed.)
func (h *Host) hintsMissed(pks []int64, got []store.Lease) {
	claimed := make(map[int64]bool, len(got))
	for _, l := range got {
		claimed[l.ActorPK] = true
	}
	for _, pk := range pks {
		if !claimed[pk] && !h.cache.has(pk) {
			h.signalSoon()
			return
		}
	}
}

// has reports whether an actor is cached here (its lease is this
// process's own).
func (c *cache) has(pk int64) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	a, ok := c.byPK[pk]
	return ok && !a.lost
}

func (h *Host) startActivation(l store.Lease) {
	def, err := h.reg.Lookup(l.Ref.Type)
	if err != nil { // cannot happen: claims ask only for registered types
		h.log.Error("claimed an actor of an unregistered type", "actor", l.Ref.String())
		return
	}
	a := &activation{pk: l.ActorPK, gen: l.Generation, ref: l.Ref, def: def, spec: def.Spec(), initial: l.State, initialV: l.StateVersion}
	h.cache.add(a)
	h.met.activations.WithLabelValues(l.Ref.Type).Inc()
	h.schedule(a)
}

// pollOwned finds work other processes enqueued for actors cached here.
func (h *Host) pollOwned(ctx context.Context) {
	if h.cache.size() == 0 {
		return
	}
	owned, err := h.be.LeaseOwnedDue(ctx, h.id)
	if err != nil {
		if ctx.Err() == nil {
			h.log.Warn("polling owned actors failed", "err", err)
		}
		return
	}
	for _, l := range owned {
		if a, _ := h.cache.wakeIdle(l.ActorPK); a != nil {
			h.schedule(a)
		}
	}
}

// wakeNamed runs the actors a signal names when this process holds every
// one of them (no query to find them), and reports whether it did; when
// the signal names none, or one is held elsewhere, the caller polls.
func (h *Host) wakeNamed(pks []int64) bool {
	if len(pks) == 0 {
		return false
	}
	for _, pk := range pks {
		if !h.cache.has(pk) {
			return false
		}
	}
	for _, pk := range pks {
		if a, _ := h.cache.wakeIdle(pk); a != nil {
			h.schedule(a)
		}
	}
	return true
}

// executorLoop runs passes over activations, one at a time.
func (h *Host) executorLoop(ctx context.Context) {
	for {
		select {
		case <-ctx.Done():
			return
		case a := <-h.runq:
			select {
			case <-h.free:
			case <-ctx.Done():
				return
			}
			if h.startRun() {
				h.pass(ctx, a)
				h.runWG.Done()
			}
			h.free <- struct{}{}
			h.poke(h.wake)
		}
	}
}

// listen turns the backend's cross-process signals into wake-ups.
func (h *Host) listen(ctx context.Context, sig store.Signaler) {
	for ctx.Err() == nil {
		err := sig.Listen(ctx, func(s store.Signal) {
			if s.Broadcast {
				h.poke(h.bcWake) // read only when this process has subscribers
			}
			if s.Work {
				h.poke(h.wake)
				h.poke(h.fxWake)
				h.poke(h.sendWk)
				if !h.wakeNamed(s.PKs) {
					h.pollOwned(ctx)
				}
			}
			for _, id := range s.Done {
				h.waiters.signal(id, nil)
			}
		})
		if err != nil && ctx.Err() == nil && !errors.Is(err, context.Canceled) {
			h.log.Warn("wake-up listener stopped; polling until it is back", "err", err)
			sleep(ctx, time.Second)
		}
	}
}

func sleep(ctx context.Context, d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
	case <-t.C:
	}
}

var _ = actor.ErrClosed
