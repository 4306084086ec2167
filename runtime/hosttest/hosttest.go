// Package hosttest is test support for services built on the runtime, as
// River's rivertest is for River: it runs a service's actor types on a
// host over a temporary SQLite database with timings shortened for tests,
// waits until work is done, and checks what one message's turn stages, so
// a service tests its actors without a database server.
//
// It imports "testing" and belongs in _test.go files only:
//
//	func TestOrder(t *testing.T) {
//		h := hosttest.Start(t, host.Config{Registry: registry(), Effects: fakeEffects()})
//		if err := h.Tell(ctx, ref, "place", order); err != nil { ... }
//		hosttest.WaitIdle(t, h, host.BacklogQuery{})
//		p := hosttest.Turn(t, h, ref, "ship", nil)
//		hosttest.RequireEffect(t, p, "courier.book")
//	}
package hosttest

import (
	"context"
	"encoding/json"
	"path/filepath"
	"testing"
	"time"

	"github.com/ductus/ductus/actor"
	"github.com/ductus/ductus/adapters/sqlite"
	"github.com/ductus/ductus/runtime/host"
)

// DefaultWait bounds WaitIdle: long enough for a loaded CI machine, short
// enough that a stuck actor fails the test rather than hangs it.
const DefaultWait = 30 * time.Second

// Start opens a fresh SQLite database in t's temporary directory, starts
// a host on it with cfg, and shuts both down when t ends. cfg.Registry is
// required and cfg.Backend must be nil. Zero timings take test values
// instead of production defaults: a 10ms poll, a failed message retried
// after 10ms (doubling to 100ms) and dead-lettered after 3 attempts, 5s
// leases, a 5s shutdown. Set a field to keep your own.
func Start(t testing.TB, cfg host.Config) *host.Host {
	t.Helper()
	if cfg.Backend != nil {
		t.Fatal("hosttest.Start: leave Config.Backend nil; Start opens a temporary SQLite database")
	}
	if cfg.Registry == nil {
		t.Fatal("hosttest.Start: Config.Registry is required")
	}
	fast(&cfg)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	be, err := sqlite.Open(ctx, sqlite.Config{Path: filepath.Join(t.TempDir(), "hosttest.db"), Logger: cfg.Logger})
	if err != nil {
		t.Fatalf("hosttest: open SQLite: %v", err)
	}
	cfg.Backend = be
	h, err := host.New(cfg)
	if err != nil {
		be.Close()
		t.Fatalf("hosttest: %v", err)
	}
	if err := h.Start(ctx); err != nil {
		be.Close()
		t.Fatalf("hosttest: start the host: %v", err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if err := h.Shutdown(ctx); err != nil {
			t.Errorf("hosttest: shutdown: %v", err)
		}
		if err := be.Close(); err != nil {
			t.Errorf("hosttest: close SQLite: %v", err)
		}
	})
	return h
}

// fast fills zero timings with test values.
func fast(c *host.Config) {
	set := func(v *time.Duration, d time.Duration) {
		if *v == 0 {
			*v = d
		}
	}
	set(&c.PollInterval, 10*time.Millisecond)
	set(&c.LeaseTTL, 5*time.Second)
	set(&c.IdleTimeout, time.Second)
	set(&c.ShutdownTimeout, 5*time.Second)
	set(&c.AskTimeout, 10*time.Second)
	set(&c.Heartbeat, time.Second)
	if c.Retry == (host.RetryPolicy{}) {
		c.Retry = host.RetryPolicy{MaxAttempts: 3, Base: 10 * time.Millisecond, Max: 100 * time.Millisecond}
	}
	if c.Workers == 0 && !c.NoWorkers {
		c.Workers = 4
	}
}

// WaitIdle waits until the scope q names has nothing left to run (no
// message, effect or send pending from or to it: host.Backlog.Idle), and
// fails t with the last backlog after DefaultWait.
func WaitIdle(t testing.TB, h *host.Host, q host.BacklogQuery) {
	t.Helper()
	WaitIdleWithin(t, h, q, DefaultWait)
}

// WaitIdleWithin is WaitIdle with its own bound.
func WaitIdleWithin(t testing.TB, h *host.Host, q host.BacklogQuery, d time.Duration) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	tick := time.NewTicker(5 * time.Millisecond)
	defer tick.Stop()
	var last host.Backlog
	for {
		n, err := h.Backlog(ctx, q)
		switch {
		case err == nil && n.Idle():
			return
		case err == nil:
			last = n
		case ctx.Err() == nil:
			t.Fatalf("hosttest: backlog of %+v: %v", q, err)
		}
		select {
		case <-ctx.Done():
			t.Fatalf("hosttest: %+v not idle after %s: %+v", q, d, last)
		case <-tick.C:
		}
	}
}

// Turn runs message on the actor's stored state in memory (host.Preview)
// and returns what its turn would commit; it fails t when the message
// cannot run at all (unknown type or message, bad arguments). The
// handler's own error is in the preview's Err.
func Turn(t testing.TB, h *host.Host, ref actor.Ref, message string, args any) *host.TurnPreview {
	t.Helper()
	p, err := h.Preview(context.Background(), ref, message, args)
	if err != nil {
		t.Fatalf("hosttest: %s %s: %v", ref, message, err)
	}
	return p
}

// RequireEffect fails t unless the turn staged exactly one effect named
// name, and returns it.
func RequireEffect(t testing.TB, p *host.TurnPreview, name string) actor.StagedEffect {
	t.Helper()
	var found []actor.StagedEffect
	for _, e := range p.Staged.Effects {
		if e.Name == name {
			found = append(found, e)
		}
	}
	if len(found) != 1 {
		t.Fatalf("hosttest: the turn staged %d effects named %q, want 1 (staged: %+v)", len(found), name, p.Staged.Effects)
	}
	return found[0]
}

// RequireSend fails t unless the turn staged exactly one message to to
// named message, and returns it.
func RequireSend(t testing.TB, p *host.TurnPreview, to actor.Ref, message string) actor.StagedSend {
	t.Helper()
	var found []actor.StagedSend
	for _, s := range p.Staged.Sends {
		if s.To == to && s.Message == message {
			found = append(found, s)
		}
	}
	if len(found) != 1 {
		t.Fatalf("hosttest: the turn staged %d sends of %q to %s, want 1 (staged: %+v)", len(found), message, to, p.Staged.Sends)
	}
	return found[0]
}

// RequireReminder fails t unless the turn set (or cancelled) exactly one
// reminder named name, and returns it.
func RequireReminder(t testing.TB, p *host.TurnPreview, name string) actor.StagedReminder {
	t.Helper()
	var found []actor.StagedReminder
	for _, r := range p.Staged.Reminders {
		if r.Name == name {
			found = append(found, r)
		}
	}
	if len(found) != 1 {
		t.Fatalf("hosttest: the turn staged %d reminder changes named %q, want 1 (staged: %+v)", len(found), name, p.Staged.Reminders)
	}
	return found[0]
}

// RequireNothingStaged fails t if the turn staged anything.
func RequireNothingStaged(t testing.TB, p *host.TurnPreview) {
	t.Helper()
	if !p.Staged.Empty() {
		t.Fatalf("hosttest: the turn staged %+v, want nothing", p.Staged)
	}
}

// Decode decodes JSON a turn produced (a result, a state, staged
// arguments) into T, failing t when it does not decode.
func Decode[T any](t testing.TB, raw []byte) T {
	t.Helper()
	var v T
	if err := json.Unmarshal(raw, &v); err != nil {
		t.Fatalf("hosttest: decode %s as %T: %v", raw, v, err)
	}
	return v
}
