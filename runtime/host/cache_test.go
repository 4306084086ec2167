package host

import (
	"testing"
	"time"

	"github.com/ductus/ductus/internal/testutil"

	"github.com/ductus/ductus/actor"
)

// idleCount reports how many activations sit idle in h's cache.
func idleCount(h *Host) int {
	h.cache.mu.Lock()
	defer h.cache.mu.Unlock()
	return h.cache.idle.Len()
}

// TestCacheCapacityEvictsLeastRecentlyUsed holds the cache to its capacity
// as activations are added, evicting the least recently used idle one at
// once (renewal ticks are a minute apart here, so waiting for the next one
// would fail the test).
func TestCacheCapacityEvictsLeastRecentlyUsed(t *testing.T) {
	be := openSQLite(t)
	h := startHost(t, be, tallyRegistry(&testHooks{}), func(c *Config) {
		c.CacheCapacity = 2
		c.LeaseTTL, c.RenewEvery, c.IdleTimeout = 3*time.Minute, time.Minute, time.Hour
	})
	ctx := testutil.Context(t)
	ask := func(id string, idle int) {
		t.Helper()
		if _, err := h.Ask(ctx, tref(id), "add", 1); err != nil {
			t.Fatal(err)
		}
		testutil.Eventually(t, 10*time.Second, id+" to go idle", func() bool { return idleCount(h) == idle })
	}
	ask("a", 1)
	ask("b", 2)
	ask("a", 2) // a is now the most recently used
	if _, err := h.Ask(ctx, tref("c"), "add", 1); err != nil {
		t.Fatal(err)
	}
	testutil.Eventually(t, 10*time.Second, "b's lease to be released", func() bool { return actorInfo(t, be, tref("b")).LeaseOwner == "" })
	for _, id := range []string{"a", "c"} {
		if owner := actorInfo(t, be, tref(id)).LeaseOwner; owner != h.ID() {
			t.Errorf("%s: lease owner %q, want this host (only the least recently used goes)", id, owner)
		}
	}
	if n := h.cache.size(); n > 2 {
		t.Fatalf("the cache holds %d activations, over its capacity of 2", n)
	}
	if v := metricValue(t, h, "ductus_activations_cached"); v > 2 {
		t.Fatalf("ductus_activations_cached = %v", v)
	}
}

// TestIdleActivationKeepsItsLease leaves an activation idle for longer
// than its lease: renewal keeps the same lease (generation) alive, and the
// next message runs on it without a new claim.
func TestIdleActivationKeepsItsLease(t *testing.T) {
	be := openSQLite(t)
	const ttl = 2 * time.Second
	h := startHost(t, be, tallyRegistry(&testHooks{}), func(c *Config) {
		c.LeaseTTL, c.RenewEvery, c.IdleTimeout = ttl, 200*time.Millisecond, time.Hour
	})
	ctx := testutil.Context(t)
	r := tref("idle")
	if _, err := h.Ask(ctx, r, "add", 1); err != nil {
		t.Fatal(err)
	}
	first := actorInfo(t, be, r)
	time.Sleep(5 * ttl / 2) // idle: no message renews it, only the lease loop
	now, err := be.Now(ctx)
	if err != nil {
		t.Fatal(err)
	}
	held := actorInfo(t, be, r)
	if held.LeaseOwner != h.ID() || held.Generation != first.Generation || !held.LeaseExpires.After(now) {
		t.Fatalf("after %s idle: owner %q generation %d expires %s (now %s); want this host's generation %d, unexpired",
			5*ttl/2, held.LeaseOwner, held.Generation, held.LeaseExpires, now, first.Generation)
	}
	if n, err := actor.AskAs[int](ctx, h, r, "add", 1); err != nil || n != 2 {
		t.Fatalf("add = %d, %v", n, err)
	}
	if g := actorInfo(t, be, r).Generation; g != first.Generation {
		t.Fatalf("generation %d -> %d: the cached activation was lost and claimed again", first.Generation, g)
	}
	if v := metricValue(t, h, "ductus_activations_total"); v != 1 {
		t.Fatalf("ductus_activations_total = %v, want 1", v)
	}
}
