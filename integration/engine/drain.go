package engine

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/ductus/ductus/integration/api"
)

// Drain closes this engine's gates and waits for its work to finish, so
// an engine can be stopped or upgraded without a message left behind:
//
//   - Every source's gate closes: MLLP listeners stop accepting (the
//     server shuts down, answering what is in flight; a connection still
//     open is answered AE), HTTP sources answer 503 with Retry-After, file
//     sources leave their files where they are and schedules' runs wait
//     (given back untried). A route's hop is not a source: it goes on, so
//     what one interface routes to another drains too.
//   - The engine is drained when its gates are closed, no intake is in
//     flight and no destination has pending work (a paused destination's
//     is left out: it waits for its resume, not for the drain).
//   - Opening the gates (DELETE /drain) undoes it: MLLP listeners bind
//     again on the same addresses.
//
// The gates are this engine's, in memory: a restart opens them, and other
// engines on the same database keep their own. The pending count is the
// database's, so with several engines a drain completes once their
// senders stop too.

// ErrDraining is Intake's refusal while the engine's gates are closed:
// the source answers retryably (MLLP AE, HTTP 503) and the sender retries.
var ErrDraining = errors.New("the engine is draining")

// drainPoll is how often a drain checks whether it is done.
const drainPoll = 250 * time.Millisecond

// drainState is the engine's gate.
type drainState struct {
	mu       sync.Mutex
	closed   bool
	since    time.Time
	stop     bool          // stop the engine once drained
	opened   chan struct{} // closed when the gate opens again
	watching bool

	inflight atomic.Int64 // intakes in progress
}

// gateClosed reports whether sources must refuse new messages.
func (d *drainState) gateClosed() bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.closed
}

// waitOpen blocks until the gate is open or ctx ends.
func (d *drainState) waitOpen(ctx context.Context) error {
	d.mu.Lock()
	ch := d.opened
	closed := d.closed
	d.mu.Unlock()
	if !closed {
		return nil
	}
	select {
	case <-ch:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// gate is a source that closes and opens with the drain (MLLP: its
// listener).
type gate interface {
	closeGate()
}

// StartDrain implements api.Engine: close the gates (again: a drain
// already running only takes stop, which is never taken back).
func (e *Engine) StartDrain(ctx context.Context, stop bool) (api.Drain, error) {
	d := &e.drain
	d.mu.Lock()
	first := !d.closed
	if first {
		d.closed, d.since, d.opened = true, time.Now().UTC(), make(chan struct{})
	}
	d.stop = d.stop || stop
	watch := !d.watching
	d.watching = true
	d.mu.Unlock()
	if first {
		e.mu.Lock()
		srcs := e.sources
		e.mu.Unlock()
		for _, s := range srcs {
			if g, ok := s.(gate); ok {
				g.closeGate()
			}
		}
		e.log.Info("draining: the gates are closed", "stop_when_drained", stop)
	}
	if watch {
		go e.watchDrain(e.runCtx)
	}
	return e.DrainStatus(ctx)
}

// StopDrain implements api.Engine: open the gates.
func (e *Engine) StopDrain(ctx context.Context) (api.Drain, error) {
	d := &e.drain
	d.mu.Lock()
	if !d.closed {
		d.mu.Unlock()
		return api.Drain{}, fmt.Errorf("%w: the engine is not draining", api.ErrConflict)
	}
	d.closed, d.stop = false, false
	close(d.opened)
	d.mu.Unlock()
	e.log.Info("drain cancelled: the gates are open")
	return e.DrainStatus(ctx)
}

// DrainStatus implements api.Engine.
func (e *Engine) DrainStatus(ctx context.Context) (api.Drain, error) {
	ifs, err := e.Interfaces(ctx)
	if err != nil {
		return api.Drain{}, err
	}
	return e.drainStatus(ifs), nil
}

// State implements api.Engine: the interfaces and the drain from one read
// of the lanes' backlog.
func (e *Engine) State(ctx context.Context) (api.State, error) {
	ifs, err := e.Interfaces(ctx)
	if err != nil {
		return api.State{}, err
	}
	return api.State{Interfaces: ifs, Drain: e.drainStatus(ifs)}, nil
}

// drainStatus is the drain state with the pending work of ifs: outside
// paused destinations (what a drain waits for) and in them.
func (e *Engine) drainStatus(ifs []api.Interface) api.Drain {
	var pending, paused int64
	for _, in := range ifs {
		for _, d := range in.Destinations {
			if d.Paused != nil {
				paused += d.Pending
			} else {
				pending += d.Pending
			}
		}
	}
	d := &e.drain
	inflight := d.inflight.Load()
	d.mu.Lock()
	defer d.mu.Unlock()
	out := api.Drain{Draining: d.closed, InFlight: inflight, Pending: pending, PausedPending: paused, StopWhenDrained: d.stop}
	if d.closed {
		since := d.since
		out.Since = &since
		out.Drained = inflight == 0 && pending == 0
	}
	return out
}

// watchDrain checks a drain until it ends: cancelled, drained (then, with
// stop, it stops the engine), or the engine stopped (ctx, Run's).
func (e *Engine) watchDrain(ctx context.Context) {
	t := time.NewTicker(drainPoll)
	defer t.Stop()
	defer func() {
		e.drain.mu.Lock()
		e.drain.watching = false
		e.drain.mu.Unlock()
	}()
	logged := false
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		if !e.drain.gateClosed() {
			return
		}
		st, err := e.DrainStatus(ctx)
		if err != nil {
			e.log.Warn("draining: could not count the pending work", "err", err)
			continue
		}
		if !st.Drained {
			logged = false
			continue
		}
		if !logged {
			e.log.Info("drained: nothing in flight and nothing pending", "paused_pending", st.PausedPending)
			logged = true
		}
		if st.StopWhenDrained {
			e.log.Info("drained; stopping as asked")
			e.stopRun()
			return
		}
	}
}
