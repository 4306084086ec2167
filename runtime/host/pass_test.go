package host

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/ductus/ductus/internal/testutil"

	"github.com/ductus/ductus/actor"
	"github.com/ductus/ductus/runtime/store"
)

// TestPassDurationYields gives one worker a hot actor with a long backlog
// and a cold actor behind it. The message budget is out of reach, so only
// the pass's time budget can make the hot actor yield: the cold actor's
// message must run before the hot backlog is done.
func TestPassDurationYields(t *testing.T) {
	be := openSQLite(t)
	hk := &testHooks{work: 2 * time.Millisecond}
	client := startHost(t, be, tallyRegistry(hk), func(c *Config) { c.NoWorkers = true })
	ctx := testutil.Context(t)
	const hot = 300
	batch := make([]actor.Envelope, hot)
	for i := range batch {
		batch[i] = actor.Envelope{Ref: tref("hot"), Message: "slow", Args: 1}
	}
	if _, err := client.TellBatch(ctx, batch); err != nil {
		t.Fatal(err)
	}
	cold, err := client.Tell(ctx, tref("cold"), "add", 1)
	if err != nil {
		t.Fatal(err)
	}
	startHost(t, be, tallyRegistry(hk), func(c *Config) {
		c.Workers, c.BatchSize = 1, 4
		c.PassMessages, c.PassDuration = 1<<20, 30*time.Millisecond
	})
	testutil.Eventually(t, 30*time.Second, "the cold actor's message", func() bool { return messageState(t, be, cold) == store.MessageCompleted })
	if left := actorInfo(t, be, tref("hot")).Unfinished; left == 0 {
		t.Fatal("the hot backlog finished before the cold actor ran: the pass never yielded on its time budget")
	}
	testutil.Eventually(t, 60*time.Second, "the hot backlog", func() bool { return actorInfo(t, be, tref("hot")).Unfinished == 0 })
}

// TestShutdownTimeoutCancelsTurns shuts down while a turn waits on its
// context: after ShutdownTimeout the turn is cancelled, Shutdown returns,
// the lease is released and the message, never completed, runs again on
// another host.
func TestShutdownTimeoutCancelsTurns(t *testing.T) {
	be := openSQLite(t)
	hk := &testHooks{gate: make(chan struct{}), entered: make(chan struct{}, 1)}
	h := startHost(t, be, tallyRegistry(hk), func(c *Config) { c.ShutdownTimeout = 100 * time.Millisecond })
	ctx := testutil.Context(t)
	r := tref("stuck")
	id, err := h.Tell(ctx, r, "wait", nil)
	if err != nil {
		t.Fatal(err)
	}
	select {
	case <-hk.entered:
	case <-ctx.Done():
		t.Fatal("the turn never started")
	}
	done := make(chan error, 1)
	go func() { done <- h.Shutdown(context.Background()) }()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("shutdown: %v", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("Shutdown did not return: the running turn was never cancelled")
	}
	hk.mu.Lock()
	saw := hk.sawErr
	hk.mu.Unlock()
	if !errors.Is(saw, context.Canceled) {
		t.Fatalf("the turn's context ended with %v, want context.Canceled", saw)
	}
	if st := messageState(t, be, id); st != store.MessagePending {
		t.Fatalf("the cancelled message is %s, want pending (it runs again elsewhere)", st)
	}
	if owner := actorInfo(t, be, r).LeaseOwner; owner != "" {
		t.Fatalf("the lease is still held by %q after shutdown", owner)
	}
	close(hk.gate) // the next attempt completes
	startHost(t, be, tallyRegistry(hk))
	testutil.Eventually(t, 30*time.Second, "the message to run again", func() bool { return messageState(t, be, id) == store.MessageCompleted })
}

// TestBusyProcessClaimsStarvedActors keeps one worker saturated with 20
// actors it holds (each pass drains its actor, which a poll wakes again
// when the next messages arrive), then tells an actor it does not hold. No
// executor is ever free when the dispatcher looks, so only the claim of
// work that has waited (claimStarved) brings the new actor in; without it
// the actor starved for as long as the others kept the process busy.
func TestBusyProcessClaimsStarvedActors(t *testing.T) {
	be := openSQLite(t)
	hk := &testHooks{work: time.Millisecond}
	client := startHost(t, be, tallyRegistry(hk), func(c *Config) { c.NoWorkers = true })
	ctx := testutil.Context(t)
	startHost(t, be, tallyRegistry(hk), func(c *Config) {
		c.Workers, c.BatchSize = 1, 4
		c.PassMessages, c.PassDuration = 1<<20, time.Hour
	})
	const hot = 20
	var hotRefs []actor.Ref
	for i := 0; i < hot; i++ {
		hotRefs = append(hotRefs, tref(fmt.Sprintf("hot%02d", i)))
	}
	// The feeder keeps about ten messages per hot actor queued.
	feedCtx, stop := context.WithCancel(ctx)
	fed := make(chan error, 1)
	go func() {
		defer close(fed)
		for feedCtx.Err() == nil {
			left := 0
			for _, r := range hotRefs {
				if a, err := be.ActorGet(feedCtx, r); err == nil {
					left += a.Unfinished
				}
			}
			if left > 10*hot {
				time.Sleep(2 * time.Millisecond)
				continue
			}
			batch := make([]actor.Envelope, hot)
			for i, r := range hotRefs {
				batch[i] = actor.Envelope{Ref: r, Message: "slow", Args: 1}
			}
			if _, err := client.TellBatch(feedCtx, batch); err != nil && feedCtx.Err() == nil {
				fed <- err
				return
			}
		}
	}()
	defer func() {
		stop()
		if err := <-fed; err != nil {
			t.Error(err)
		}
	}()
	// Every hot actor is held by the worker and running before the cold one comes.
	testutil.Eventually(t, 30*time.Second, "every hot actor to be held", func() bool {
		for _, r := range hotRefs {
			a, err := be.ActorGet(ctx, r)
			if err != nil || a.LeaseOwner == "" || a.State == nil {
				return false
			}
		}
		return true
	})
	cold, err := client.Tell(ctx, tref("cold"), "add", 1)
	if err != nil {
		t.Fatal(err)
	}
	testutil.Eventually(t, 10*time.Second, "the cold actor's message while the worker is busy", func() bool {
		return messageState(t, be, cold) == store.MessageCompleted
	})
}
