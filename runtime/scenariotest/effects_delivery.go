package scenariotest

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ductus/ductus/internal/testutil"

	"github.com/ductus/ductus/actor"
	"github.com/ductus/ductus/runtime/host"
	"github.com/ductus/ductus/runtime/store"
)

// finishSpy records every batch of effect outcomes the runtime writes,
// optionally taking its time about it (a busy database).
type finishSpy struct {
	store.Backend
	delay   time.Duration
	mu      sync.Mutex
	batches [][]store.EffectOutcome
}

func (s *finishSpy) EffectFinish(ctx context.Context, p *store.EffectFinishParams) error {
	s.mu.Lock()
	s.batches = append(s.batches, append([]store.EffectOutcome(nil), p.Outcomes...))
	s.mu.Unlock()
	time.Sleep(s.delay)
	return s.Backend.EffectFinish(ctx, p)
}

func (s *finishSpy) outcomes() []store.EffectOutcome {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []store.EffectOutcome
	for _, b := range s.batches {
		out = append(out, b...)
	}
	return out
}

// laneWatch is an ordered receiver that takes its time and notes whether
// two sends of one lane ever overlapped.
type laneWatch struct {
	mu       sync.Mutex
	inflight map[string]int
	overlaps []string
	order    map[string][]int
	seen     map[string]bool
}

func (w *laneWatch) handler(ctx context.Context, ec host.EffectContext, a emitArgs) (string, error) {
	w.mu.Lock()
	w.inflight[a.Key]++
	if w.inflight[a.Key] > 1 {
		w.overlaps = append(w.overlaps, fmt.Sprintf("%s/%d (attempt %d)", a.Key, a.Seq, ec.Attempt))
	}
	if !w.seen[ec.ID] {
		w.seen[ec.ID] = true
		w.order[a.Key] = append(w.order[a.Key], a.Seq)
	}
	w.mu.Unlock()
	defer func() {
		w.mu.Lock()
		w.inflight[a.Key]--
		w.mu.Unlock()
	}()
	select {
	case <-time.After(100 * time.Millisecond):
		return "ok", nil
	case <-ctx.Done():
		return "", ctx.Err()
	}
}

func init() {
	scenario("OrderedEffectsNeverOverlapAcrossHosts", func(t *testing.T, be store.Backend) {
		// A slow receiver and a claim of 1s: a run of 16 effects would
		// outlive its claim, and the other host would take the lane over
		// while the first still sends. No send may start on a claim that
		// could expire before it ends.
		w := &laneWatch{inflight: map[string]int{}, order: map[string][]int{}, seen: map[string]bool{}}
		slow := func(c *host.Config) {
			c.ClaimTTL = time.Second
			for name, e := range c.Effects {
				e.Timeout = 300 * time.Millisecond
				c.Effects[name] = e
			}
			c.Effects["ordered"] = host.Effect{Handler: host.EffectFunc(w.handler), Ordered: true, Timeout: 300 * time.Millisecond,
				Retry: host.RetryPolicy{Base: 20 * time.Millisecond, Max: 100 * time.Millisecond}}
		}
		h1 := effectHost(t, be, newSink(), slow)
		effectHost(t, be, newSink(), slow)
		ctx := testutil.Context(t)
		const n = 20
		for _, key := range []string{"la", "lb"} {
			for i := 1; i <= n; i++ {
				if _, err := h1.Tell(ctx, oref(key), "emit", emitArgs{Key: key, Seq: i}); err != nil {
					t.Fatal(err)
				}
			}
		}
		testutil.Eventually(t, 60*time.Second, "every effect of both lanes", func() bool {
			w.mu.Lock()
			defer w.mu.Unlock()
			return len(w.order["la"]) == n && len(w.order["lb"]) == n
		})
		w.mu.Lock()
		defer w.mu.Unlock()
		if len(w.overlaps) > 0 {
			t.Fatalf("sends of one lane overlapped: %v", w.overlaps)
		}
		for key, seqs := range w.order {
			for i, s := range seqs {
				if s != i+1 {
					t.Fatalf("lane %s sent in the order %v", key, seqs)
				}
			}
		}
	})

	scenario("EffectOutcomeBeyondAFullMailbox", func(t *testing.T, be store.Backend) {
		// The effects finish while their actor's mailbox is over its cap
		// and system allowance: the outcome messages must still arrive.
		gate := make(chan struct{})
		var entered atomic.Int32
		gated := host.EffectFunc(func(ctx context.Context, _ host.EffectContext, a emitArgs) (string, error) {
			entered.Add(1)
			select {
			case <-gate:
				return fmt.Sprintf("sent %d", a.Seq), nil
			case <-ctx.Done():
				return "", ctx.Err()
			}
		})
		h := effectHost(t, be, newSink(), func(c *host.Config) {
			c.Limits.MailboxMessages, c.SystemAllowance = 2, 1
			c.Effects["gated"] = host.Effect{Handler: gated}
		})
		ctx := testutil.Context(t)
		r := oref("full")
		for i := 1; i <= 3; i++ {
			if _, err := h.Ask(ctx, r, "emit_gated", emitArgs{Key: "g", Seq: i}); err != nil {
				t.Fatal(err)
			}
		}
		testutil.Eventually(t, 10*time.Second, "three effects in their handlers", func() bool { return entered.Load() == 3 })
		if _, err := h.Pause(ctx, r); err != nil {
			t.Fatal(err)
		}
		for _, n := range []string{"a", "b"} {
			if _, err := h.Tell(ctx, r, "note", n); err != nil {
				t.Fatal(err)
			}
		}
		if _, err := h.Tell(ctx, r, "note", "c"); !errors.Is(err, actor.ErrMailboxFull) {
			t.Fatalf("a third tell into a mailbox of 2: %v, want it full", err)
		}
		close(gate)
		testutil.Eventually(t, 10*time.Second, "the three effects to finish", func() bool {
			done, _ := h.Effects(ctx, host.EffectQuery{State: host.EffectDone, Type: "scenario.outbox"})
			return len(done) == 3
		})
		if _, err := h.Resume(ctx, r); err != nil {
			t.Fatal(err)
		}
		var o outbox
		testutil.Eventually(t, 10*time.Second, "two notes and three outcomes", func() bool {
			o, _ = actor.AskAs[outbox](ctx, h, r, "get", nil)
			return len(o.Outcomes) >= 5
		})
		time.Sleep(100 * time.Millisecond)
		if o, _ = actor.AskAs[outbox](ctx, h, r, "get", nil); len(o.Outcomes) != 5 {
			t.Fatalf("outcomes %v: want the two notes and all three outcome messages", o.Outcomes)
		}
	})

	scenario("EffectOutcomesFlushAtMostFifty", func(t *testing.T, be store.Backend) {
		// Recording outcomes takes 30ms here, so more than 50 finish while
		// one flush runs: the next must still write at most 50 at a time.
		spy := &finishSpy{Backend: be, delay: 30 * time.Millisecond}
		sk := newSink()
		h := effectHost(t, spy, sk)
		ctx := testutil.Context(t)
		const n = 300
		var batch []actor.Envelope
		for i := 1; i <= n; i++ {
			batch = append(batch, actor.Envelope{Ref: oref(fmt.Sprintf("f%d", i%10)), Message: "emit_unordered", Args: emitArgs{Key: "f", Seq: i}})
		}
		if _, err := h.TellBatch(ctx, batch); err != nil {
			t.Fatal(err)
		}
		testutil.Eventually(t, 60*time.Second, "every outcome recorded", func() bool {
			done := map[int64]bool{}
			for _, o := range spy.outcomes() {
				if o.Success {
					done[o.ID] = true
				}
			}
			return len(done) == n
		})
		spy.mu.Lock()
		defer spy.mu.Unlock()
		for _, b := range spy.batches {
			if len(b) > 50 {
				t.Fatalf("one flush wrote %d outcomes, want at most 50", len(b))
			}
		}
	})

	scenario("OrderedEffectDefaultBackoff", func(t *testing.T, be store.Backend) {
		// No Backoff configured: attempt 1 waits about 1s, attempt 2 about
		// 2s (±20% jitter), doubling up to 60s.
		spy := &finishSpy{Backend: be}
		sk := newSink()
		h := effectHost(t, spy, sk, func(c *host.Config) {
			c.Effects["ordered"] = host.Effect{Handler: host.EffectFunc(sk.handler), Ordered: true}
		})
		ctx := testutil.Context(t)
		if _, err := h.Tell(ctx, oref("bo"), "emit", emitArgs{Key: "bo", Seq: 1, Fail: 2}); err != nil {
			t.Fatal(err)
		}
		testutil.Eventually(t, 30*time.Second, "the effect to succeed on its third attempt", func() bool {
			sk.mu.Lock()
			defer sk.mu.Unlock()
			return len(sk.order["bo"]) == 1
		})
		var waits []time.Duration
		for _, o := range spy.outcomes() {
			if !o.Success && !o.Release && !o.Dead {
				waits = append(waits, o.RetryAfter)
			}
		}
		if len(waits) != 2 || waits[0] < 800*time.Millisecond || waits[0] > 1200*time.Millisecond ||
			waits[1] < 1600*time.Millisecond || waits[1] > 2400*time.Millisecond {
			t.Fatalf("back-offs %v; want about 1s then 2s", waits)
		}
	})

	scenario("DeadEffectDiscardedByOperator", func(t *testing.T, be store.Backend) {
		sk := newSink()
		h := effectHost(t, be, sk)
		ctx := testutil.Context(t)
		if _, err := h.Tell(ctx, oref("dd"), "emit_unordered", emitArgs{Key: "dd", Seq: 1}); err != nil {
			t.Fatal(err)
		}
		if _, err := h.Tell(ctx, oref("dd"), "emit", emitArgs{Key: "dd", Seq: 2, Fatal: true}); err != nil {
			t.Fatal(err)
		}
		var dead, done []host.EffectInfo
		testutil.Eventually(t, 10*time.Second, "one dead and one done effect", func() bool {
			dead, _ = h.Effects(ctx, host.EffectQuery{State: host.EffectDead, Type: "scenario.outbox"})
			done, _ = h.Effects(ctx, host.EffectQuery{State: host.EffectDone, Type: "scenario.outbox"})
			return len(dead) == 1 && len(done) == 1
		})
		if ok, err := h.DiscardEffect(ctx, done[0].ID); ok || err != nil {
			t.Fatalf("discarding a done effect = %v, %v; want it left alone", ok, err)
		}
		if ok, err := h.DiscardEffect(ctx, dead[0].ID); !ok || err != nil {
			t.Fatalf("discarding the dead effect = %v, %v", ok, err)
		}
		if left, _ := h.Effects(ctx, host.EffectQuery{State: host.EffectDead, Type: "scenario.outbox"}); len(left) != 0 {
			t.Fatalf("dead effects after the discard: %+v", left)
		}
		if ok, err := h.DiscardEffect(ctx, dead[0].ID); ok || err != nil {
			t.Fatalf("discarding it again = %v, %v", ok, err)
		}
		if _, err := h.RetryEffect(ctx, dead[0].ID); !errors.Is(err, actor.ErrNotFound) {
			t.Fatalf("retrying a discarded effect: %v", err)
		}
	})
}
