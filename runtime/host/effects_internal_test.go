package host

import (
	"context"
	"encoding/json"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/ductus/ductus/actor"
	"github.com/ductus/ductus/internal/testutil"
	"github.com/ductus/ductus/runtime/store"
)

// finishRecorder is a backend that only records effect outcomes; any other
// call panics (the embedded interface is nil), so a test notices one.
type finishRecorder struct {
	store.Backend
	mu      sync.Mutex
	batches [][]store.EffectOutcome
}

func (f *finishRecorder) EffectFinish(_ context.Context, p *store.EffectFinishParams) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.batches = append(f.batches, append([]store.EffectOutcome(nil), p.Outcomes...))
	return nil
}

func (f *finishRecorder) recorded() (batches, outcomes int, largest int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, b := range f.batches {
		outcomes += len(b)
		largest = max(largest, len(b))
	}
	return len(f.batches), outcomes, largest
}

func testHost(t *testing.T, be store.Backend, effects map[string]Effect, mod ...func(*Config)) *Host {
	t.Helper()
	cfg := Config{Backend: be, Registry: actor.NewRegistry(), Effects: effects}
	for _, m := range mod {
		m(&cfg)
	}
	h, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return h
}

// startFlusher runs a flusher whose timer never fires in a test, so only
// its count and back-off triggers can flush.
func startFlusher(t *testing.T, h *Host) *flusher {
	fl := newFlusher(h)
	fl.every = time.Hour
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	t.Cleanup(func() { cancel(); <-done })
	go func() { fl.run(ctx); close(done) }()
	return fl
}

func TestFlushRecordsAtMostFiftyPerTransaction(t *testing.T) {
	rec := &finishRecorder{}
	h := testHost(t, rec, nil)
	fl := newFlusher(h)
	fl.every = time.Hour
	// 120 outcomes wait before the flusher runs (it was busy): one flush
	// must still record them 50 at a time.
	for i := range 120 {
		fl.add(store.EffectOutcome{ID: int64(i + 1), Attempt: 1, Success: true})
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { fl.run(ctx); close(done) }()
	testutil.Eventually(t, 10*time.Second, "120 outcomes", func() bool { _, n, _ := rec.recorded(); return n == 120 })
	cancel()
	<-done
	batches, _, largest := rec.recorded()
	if largest > effectFlushCount || batches != 3 {
		t.Fatalf("%d flushes, the largest of %d outcomes; want 3 of at most %d", batches, largest, effectFlushCount)
	}
}

func TestFailedOrderedEffectFlushesBeforeBackOff(t *testing.T) {
	rec := &finishRecorder{}
	var calls int
	fail := func(context.Context, EffectContext, json.RawMessage) (any, error) {
		calls++
		return nil, errors.New("receiver down")
	}
	h := testHost(t, rec, map[string]Effect{"send": {Handler: fail, Ordered: true}})
	fl := startFlusher(t, h)
	run := []store.Effect{{ID: 1, Name: "send", Ordered: true, Attempt: 1}, {ID: 2, Name: "send", Ordered: true, Attempt: 1},
		{ID: 3, Name: "send", Ordered: true, Attempt: 1}}
	h.runEffects(context.Background(), run, fl, time.Now().Add(time.Hour))
	// The flusher's timer is an hour away and 3 outcomes are far from the
	// count: only the back-off trigger can have flushed them.
	testutil.Eventually(t, 10*time.Second, "the failure and the released rest to be recorded", func() bool { _, n, _ := rec.recorded(); return n == 3 })
	rec.mu.Lock()
	defer rec.mu.Unlock()
	var got []store.EffectOutcome
	for _, b := range rec.batches {
		got = append(got, b...)
	}
	if calls != 1 || got[0].ID != 1 || got[0].RetryAfter <= 0 || !got[1].Release || !got[2].Release {
		t.Fatalf("%d attempts, outcomes %+v; want one failed attempt with a back-off, the rest released", calls, got)
	}
}

func TestNoAttemptStartsUnlessItsClaimOutlastsIt(t *testing.T) {
	const timeout = 300 * time.Millisecond
	for _, tc := range []struct {
		name     string
		left     time.Duration // of the claim when the run starts
		attempts int
	}{
		// margin = min(5s, (ClaimTTL-timeout)/2) = 350ms: an attempt needs
		// 650ms of claim left.
		{"claim about to expire", 500 * time.Millisecond, 0},
		{"claim long enough", time.Hour, 3},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rec := &finishRecorder{}
			var calls int
			ok := func(context.Context, EffectContext, json.RawMessage) (any, error) { calls++; return nil, nil }
			h := testHost(t, rec, map[string]Effect{"send": {Handler: ok, Ordered: true, Timeout: timeout}},
				func(c *Config) { c.ClaimTTL = time.Second })
			fl := newFlusher(h)
			run := []store.Effect{{ID: 1, Name: "send", Ordered: true, Attempt: 1}, {ID: 2, Name: "send", Ordered: true, Attempt: 1},
				{ID: 3, Name: "send", Ordered: true, Attempt: 1}}
			h.runEffects(context.Background(), run, fl, time.Now().Add(tc.left))
			fl.flush()
			_, n, _ := rec.recorded()
			released := 0
			for _, b := range rec.batches {
				for _, o := range b {
					if o.Release {
						released++
					}
				}
			}
			if calls != tc.attempts || n != 3 || released != 3-tc.attempts {
				t.Fatalf("%d attempts, %d outcomes (%d released); want %d attempts and the rest released", calls, n, released, tc.attempts)
			}
		})
	}
}

func TestEffectBackoffDefaults(t *testing.T) {
	// 1s doubling to 60s, ±20% jitter.
	b := Effect{}.backoff()
	for _, tc := range []struct {
		attempt int
		nominal time.Duration
	}{{1, time.Second}, {2, 2 * time.Second}, {3, 4 * time.Second}, {6, 32 * time.Second}, {7, time.Minute}, {40, time.Minute}} {
		for range 20 {
			d := b.Delay(tc.attempt)
			if lo, hi := tc.nominal*8/10, tc.nominal*12/10; d < lo || d > hi {
				t.Fatalf("attempt %d waits %s, want %s ±20%%", tc.attempt, d, tc.nominal)
			}
		}
	}
}
