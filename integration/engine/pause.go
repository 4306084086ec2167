package engine

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/ductus/ductus/actor"
	"github.com/ductus/ductus/integration/api"
	"github.com/ductus/ductus/integration/config"
	"github.com/ductus/ductus/integration/ixstore"
)

// Pausing a destination holds its lanes and its sends:
//
//   - Its lane actors are paused in the runtime (ductus_actors.paused), so
//     no process runs their turns: messages keep arriving and commit to
//     the lanes' mailboxes, and nothing reads them; the intake does not
//     wake a paused destination's lanes either (wake.go). A lane
//     actor that does not exist yet (no message has gone to that lane)
//     has nothing to pause: an Ask of the no-op "hold" creates it first.
//   - Sends its lanes staged before the pause stay staged: the send
//     effect gives itself back, not attempted, while the destination is
//     paused, so a held lane's order is kept.
//
// The ductus_ix_pauses row is the truth. It is written before the lanes are
// paused and removed after they are resumed, and an engine re-applies every
// row's pause to the lanes when it starts; so a crash part-way leaves the
// destination paused, never half-resumed, and a pause survives a restart.
// Each engine re-reads the rows every pauseRefresh, so a pause made through
// another engine on the same database holds this one's sends too.

// pauseRefresh is how often an engine re-reads the paused destinations.
const pauseRefresh = 2 * time.Second

// errPaused is a send given back because its destination is paused.
var errPaused = errors.New("the destination is paused")

// pauses is the paused destinations this engine knows, by
// "<interface>/<destination>".
type pauses struct {
	mu sync.RWMutex
	m  map[string]ixstore.Pause
}

// destKey names a destination in the pauses and the lanes' counts (a lane
// actor's ID less its "/<lane>").
func destKey(iface, dest string) string { return iface + "/" + dest }

// get is the pause of the destination destKey names, if it is paused.
func (p *pauses) get(key string) (ixstore.Pause, bool) {
	p.mu.RLock()
	defer p.mu.RUnlock()
	v, ok := p.m[key]
	return v, ok
}

// any reports whether some destination is paused (the intake looks its
// destinations up only then).
func (p *pauses) any() bool {
	p.mu.RLock()
	defer p.mu.RUnlock()
	return len(p.m) > 0
}

// set replaces every pause with all.
func (p *pauses) set(all []ixstore.Pause) {
	m := make(map[string]ixstore.Pause, len(all))
	for _, v := range all {
		m[destKey(v.Interface, v.Destination)] = v
	}
	p.mu.Lock()
	p.m = m
	p.mu.Unlock()
}

// put records a pause, or (paused false) its end.
func (p *pauses) put(v ixstore.Pause, paused bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.m == nil {
		p.m = map[string]ixstore.Pause{}
	}
	if paused {
		p.m[destKey(v.Interface, v.Destination)] = v
	} else {
		delete(p.m, destKey(v.Interface, v.Destination))
	}
}

// restorePauses reads the paused destinations and pauses their lanes
// again (a crash may have come between the row and the lanes). A pause of
// a destination no longer in the project is kept, and does nothing.
func (e *Engine) restorePauses(ctx context.Context) error {
	all, err := e.ix().PauseList(ctx)
	if err != nil {
		return fmt.Errorf("engine: read the paused destinations: %w", err)
	}
	e.paused.set(all)
	for _, p := range all {
		if d := e.destination(p.Interface, p.Destination); d != nil {
			if err := e.holdLanes(ctx, d, true); err != nil {
				return err
			}
			e.log.Info("destination paused", "interface", p.Interface, "destination", p.Destination, "by", p.By, "since", p.At, "reason", p.Reason)
		}
	}
	return nil
}

// refreshPausesLoop re-reads the paused destinations until ctx ends.
func (e *Engine) refreshPausesLoop(ctx context.Context) {
	t := time.NewTicker(pauseRefresh)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		all, err := e.ix().PauseList(ctx)
		if err != nil {
			if ctx.Err() == nil {
				e.log.Warn("engine: re-read the paused destinations", "err", err)
			}
			continue
		}
		e.paused.set(all)
	}
}

// destination is an interface's destination, or nil.
func (e *Engine) destination(iface, dest string) *config.Destination {
	ir := e.ifaces[iface]
	if ir == nil {
		return nil
	}
	return ir.cfg.Destination(dest)
}

// destinationOf is destination, or actor.ErrNotFound naming what is not
// there.
func (e *Engine) destinationOf(iface, dest string) (*config.Destination, error) {
	if e.ifaces[iface] == nil {
		return nil, fmt.Errorf("%w: no interface %q", actor.ErrNotFound, iface)
	}
	d := e.destination(iface, dest)
	if d == nil {
		return nil, fmt.Errorf("%w: interface %s has no destination %q", actor.ErrNotFound, iface, dest)
	}
	return d, nil
}

// holdLanes pauses (hold) or resumes every lane actor of d.
func (e *Engine) holdLanes(ctx context.Context, d *config.Destination, hold bool) error {
	ir := e.ifaces[d.Interface]
	for lane := range max(ir.cfg.Partitions, 1) {
		ref := actor.Ref{Type: laneType, ID: d.ActorID(lane)}
		if !hold {
			if _, err := e.rt.Resume(ctx, ref); err != nil {
				return fmt.Errorf("engine: resume lane %s: %w", ref.ID, err)
			}
			continue
		}
		ok, err := e.rt.Pause(ctx, ref)
		if err == nil && !ok {
			// No message has gone to this lane yet: make its actor.
			if _, err = e.rt.Ask(ctx, ref, "hold", struct{}{}); err == nil {
				ok, err = e.rt.Pause(ctx, ref)
			}
		}
		if err == nil && !ok {
			err = errors.New("the lane actor is not there")
		}
		if err != nil {
			return fmt.Errorf("engine: pause lane %s: %w", ref.ID, err)
		}
	}
	return nil
}

// PauseDestination implements api.Engine.
func (e *Engine) PauseDestination(ctx context.Context, iface, dest, by, reason string) (api.Pause, error) {
	d, err := e.destinationOf(iface, dest)
	if err != nil {
		return api.Pause{}, err
	}
	p := ixstore.Pause{Interface: iface, Destination: dest, Reason: reason, By: by, At: time.Now().UTC().Truncate(time.Microsecond)}
	ok, err := e.ix().PauseInsert(ctx, &p)
	if err != nil {
		return api.Pause{}, fmt.Errorf("engine: record the pause of %s/%s: %w", iface, dest, err)
	}
	if !ok {
		if cur, known := e.paused.get(destKey(iface, dest)); known {
			return api.Pause{}, fmt.Errorf("%w: %s/%s is paused already, by %s at %s: %s", api.ErrConflict, iface, dest, cur.By, cur.At.Format(time.RFC3339), cur.Reason)
		}
		return api.Pause{}, fmt.Errorf("%w: %s/%s is paused already", api.ErrConflict, iface, dest)
	}
	e.paused.put(p, true)
	if err := e.holdLanes(ctx, d, true); err != nil {
		// The row stands: the next start pauses the lanes again, and the
		// sends are held already.
		return api.Pause{}, err
	}
	e.log.Info("destination paused", "interface", iface, "destination", dest, "by", by, "reason", reason)
	return pauseView(p), nil
}

// ResumeDestination implements api.Engine.
func (e *Engine) ResumeDestination(ctx context.Context, iface, dest, by string) error {
	d, err := e.destinationOf(iface, dest)
	if err != nil {
		return err
	}
	all, err := e.ix().PauseList(ctx)
	if err != nil {
		return fmt.Errorf("engine: read the paused destinations: %w", err)
	}
	if !slices.ContainsFunc(all, func(p ixstore.Pause) bool { return p.Interface == iface && p.Destination == dest }) {
		return fmt.Errorf("%w: %s/%s is not paused", api.ErrConflict, iface, dest)
	}
	if err := e.holdLanes(ctx, d, false); err != nil {
		return err
	}
	ok, err := e.ix().PauseDelete(ctx, &ixstore.PauseDeleteParams{Interface: iface, Destination: dest})
	if err != nil {
		return fmt.Errorf("engine: remove the pause of %s/%s: %w", iface, dest, err)
	}
	if !ok {
		// Resumed at the same time through another engine: resumed all
		// the same.
		e.log.Info("destination resumed by another call at the same time", "interface", iface, "destination", dest)
	}
	e.paused.put(ixstore.Pause{Interface: iface, Destination: dest}, false)
	e.log.Info("destination resumed", "interface", iface, "destination", dest, "by", by)
	return nil
}

func pauseView(p ixstore.Pause) api.Pause {
	return api.Pause{By: p.By, At: p.At.UTC(), Reason: p.Reason}
}

// ix is the engine's store.
func (e *Engine) ix() ixstore.Store { return e.be.EngineStore() }
