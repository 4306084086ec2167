package scenariotest

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/ductus/ductus/internal/testutil"

	"github.com/ductus/ductus/actor"
	"github.com/ductus/ductus/runtime/host"
	"github.com/ductus/ductus/runtime/store"
)

// sink records effect deliveries like an idempotent external system.
type sink struct {
	mu       sync.Mutex
	seen     map[string]int // effect ID -> deliveries
	order    map[string][]int
	failNext map[string]int // key -> failures to inject
	contexts []host.EffectContext
}

func newSink() *sink {
	return &sink{seen: map[string]int{}, order: map[string][]int{}, failNext: map[string]int{}}
}

type emitArgs struct {
	Key   string `json:"key"`
	Seq   int    `json:"seq"`
	Fail  int    `json:"fail,omitempty"`
	Fatal bool   `json:"fatal,omitempty"`
}

func (s *sink) handler(ctx context.Context, ec host.EffectContext, a emitArgs) (string, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.contexts = append(s.contexts, ec)
	if a.Fatal {
		return "", actor.Permanent(errors.New("refused for good"))
	}
	k := fmt.Sprintf("%s/%d", a.Key, a.Seq)
	if s.failNext[k] < a.Fail {
		s.failNext[k]++
		return "", fmt.Errorf("receiver down (%d)", s.failNext[k])
	}
	if s.seen[ec.ID] == 0 {
		s.order[a.Key] = append(s.order[a.Key], a.Seq)
	}
	s.seen[ec.ID]++
	return "ok " + k, nil
}

type outbox struct {
	Emitted  int      `json:"emitted"`
	Outcomes []string `json:"outcomes,omitempty"`
}

func outboxDef() *actor.Type[outbox] {
	return &actor.Type[outbox]{Name: "scenario.outbox", Messages: map[string]actor.Handler[outbox]{
		"emit": actor.Message(func(c *actor.Context, s *outbox, a emitArgs) (int, error) {
			s.Emitted++
			return s.Emitted, c.Emit("ordered", a, actor.OnSuccess("sent"), actor.OnFailure("failed"))
		}),
		"emit_later": actor.Message(func(c *actor.Context, s *outbox, a emitArgs) (int, error) {
			s.Emitted++
			return s.Emitted, c.Emit("ordered", a, actor.EffectDelay(400*time.Millisecond))
		}),
		"emit_unordered": actor.Message(func(c *actor.Context, s *outbox, a emitArgs) (int, error) {
			s.Emitted++
			return s.Emitted, c.Emit("unordered", a)
		}),
		"emit_gated": actor.Message(func(c *actor.Context, s *outbox, a emitArgs) (int, error) {
			s.Emitted++
			return s.Emitted, c.Emit("gated", a, actor.OnSuccess("sent"))
		}),
		"note": actor.Message(func(c *actor.Context, s *outbox, n string) (any, error) {
			s.Outcomes = append(s.Outcomes, "note "+n)
			return nil, nil
		}),
		"emit_patient": actor.Message(func(c *actor.Context, s *outbox, a emitArgs) (int, error) {
			s.Emitted++
			return s.Emitted, c.Emit("patient", a)
		}),
		"emit_unknown": actor.Message(func(c *actor.Context, s *outbox, _ struct{}) (any, error) {
			return nil, c.Emit("no_such_effect", nil)
		}),
		"sent": actor.Message(func(c *actor.Context, s *outbox, o map[string]any) (any, error) {
			s.Outcomes = append(s.Outcomes, "sent "+fmt.Sprint(o["result"]))
			return nil, nil
		}),
		"failed": actor.Message(func(c *actor.Context, s *outbox, o map[string]any) (any, error) {
			s.Outcomes = append(s.Outcomes, "failed "+fmt.Sprint(o["error"]))
			return nil, nil
		}),
		"get": actor.Query(func(c *actor.Context, s *outbox, _ struct{}) (outbox, error) { return *s, nil }),
	}}
}

func effectHost(t *testing.T, be store.Backend, sk *sink, mod ...func(*host.Config)) *host.Host {
	reg := actor.NewRegistry()
	reg.MustRegister(outboxDef())
	fast5 := host.RetryPolicy{MaxAttempts: 5, Base: 20 * time.Millisecond, Max: 100 * time.Millisecond}
	return newHost(t, be, reg, append([]func(*host.Config){func(c *host.Config) {
		c.Effects = map[string]host.Effect{
			"ordered":   {Handler: host.EffectFunc(sk.handler), Ordered: true, Retry: fast5},
			"unordered": {Handler: host.EffectFunc(sk.handler), Retry: fast5},
		}
	}}, mod...)...)
}

func oref(id string) actor.Ref { return actor.Ref{Type: "scenario.outbox", ID: id} }

func init() {
	scenario("OrderedEffectsInOrderWithBlockingFailure", func(t *testing.T, be store.Backend) {
		sk := newSink()
		h := effectHost(t, be, sk)
		ctx := testutil.Context(t)
		for i := 1; i <= 6; i++ {
			fail := 0
			if i == 3 {
				fail = 2 // effect 3 fails twice: 4..6 must wait for it
			}
			if _, err := h.Tell(ctx, oref("o"), "emit", emitArgs{Key: "o", Seq: i, Fail: fail}); err != nil {
				t.Fatal(err)
			}
		}
		testutil.Eventually(t, 20*time.Second, "six ordered effects", func() bool {
			sk.mu.Lock()
			defer sk.mu.Unlock()
			return len(sk.order["o"]) == 6
		})
		sk.mu.Lock()
		got := fmt.Sprint(sk.order["o"])
		sk.mu.Unlock()
		if got != "[1 2 3 4 5 6]" {
			t.Fatalf("ordered effects ran as %s", got)
		}
		testutil.Eventually(t, 10*time.Second, "six outcome messages", func() bool {
			o, _ := actor.AskAs[outbox](ctx, h, oref("o"), "get", nil)
			return len(o.Outcomes) == 6
		})
		sk.mu.Lock()
		ec := sk.contexts[0]
		sk.mu.Unlock()
		if ec.ID == "" || ec.Ref != oref("o") || ec.Generation == 0 || ec.Attempt != 1 || !ec.Ordered {
			t.Fatalf("effect context = %+v", ec)
		}
	})

	scenario("UnorderedEffectsDeadAndOperatorRetry", func(t *testing.T, be store.Backend) {
		sk := newSink()
		h := effectHost(t, be, sk)
		ctx := testutil.Context(t)
		for i := 1; i <= 20; i++ {
			if _, err := h.Tell(ctx, oref("u"), "emit_unordered", emitArgs{Key: "u", Seq: i, Fail: i % 3}); err != nil {
				t.Fatal(err)
			}
		}
		if _, err := h.Tell(ctx, oref("u"), "emit", emitArgs{Key: "dead", Seq: 1, Fatal: true}); err != nil {
			t.Fatal(err)
		}
		testutil.Eventually(t, 20*time.Second, "twenty unordered effects", func() bool {
			sk.mu.Lock()
			defer sk.mu.Unlock()
			return len(sk.order["u"]) == 20
		})
		var dead []host.EffectInfo
		testutil.Eventually(t, 10*time.Second, "the dead effect", func() bool {
			dead, _ = h.Effects(ctx, host.EffectQuery{State: host.EffectDead, Type: "scenario.outbox"})
			return len(dead) == 1
		})
		if !contains(dead[0].Error, "refused for good") {
			t.Fatalf("dead effect = %+v", dead[0])
		}
		testutil.Eventually(t, 10*time.Second, "the on-failure message", func() bool {
			o, _ := actor.AskAs[outbox](ctx, h, oref("u"), "get", nil)
			return len(o.Outcomes) == 1 && contains(o.Outcomes[0], "refused for good")
		})
		if ok, err := h.RetryEffect(ctx, dead[0].ID); !ok || err != nil {
			t.Fatalf("operator retry = %v, %v", ok, err)
		}
		testutil.Eventually(t, 10*time.Second, "the retried effect to die again", func() bool {
			sk.mu.Lock()
			defer sk.mu.Unlock()
			n := 0
			for _, c := range sk.contexts {
				if c.ID == dead[0].StableID {
					n++
				}
			}
			return n == 2
		})
		if _, err := h.Ask(ctx, oref("u"), "emit_unknown", nil); !errors.Is(err, actor.ErrDeadLetter) {
			t.Fatalf("emitting an effect with no handler: %v", err)
		}
	})

	scenario("NotAttemptedUsesNoAttempt", func(t *testing.T, be store.Backend) {
		// A handler that could not start (its destination busy) gives the
		// effect back: with MaxAttempts 2, five such returns must neither
		// dead-letter it nor count, and the later ordered effect waits.
		sk := newSink()
		var mu sync.Mutex
		calls := map[int]int{}
		patient := func(ctx context.Context, ec host.EffectContext, a emitArgs) (string, error) {
			mu.Lock()
			calls[a.Seq]++
			n := calls[a.Seq]
			mu.Unlock()
			if a.Seq == 1 && n <= 5 {
				return "", &host.NotAttemptedError{RetryAfter: 10 * time.Millisecond, Err: errors.New("no token yet")}
			}
			return sk.handler(ctx, ec, a)
		}
		h := effectHost(t, be, sk, func(c *host.Config) {
			c.Effects["patient"] = host.Effect{Handler: host.EffectFunc(patient), Ordered: true,
				Retry: host.RetryPolicy{MaxAttempts: 2, Base: 10 * time.Millisecond, Max: 20 * time.Millisecond}}
		})
		ctx := testutil.Context(t)
		for i := 1; i <= 2; i++ {
			if _, err := h.Tell(ctx, oref("p"), "emit_patient", emitArgs{Key: "p", Seq: i}); err != nil {
				t.Fatal(err)
			}
		}
		testutil.Eventually(t, 20*time.Second, "both effects sent", func() bool {
			sk.mu.Lock()
			defer sk.mu.Unlock()
			return len(sk.order["p"]) == 2
		})
		sk.mu.Lock()
		got, first := fmt.Sprint(sk.order["p"]), sk.contexts[0]
		sk.mu.Unlock()
		mu.Lock()
		waited := calls[1]
		mu.Unlock()
		if got != "[1 2]" || waited != 6 || first.Attempt != 1 {
			t.Fatalf("sent %s after %d calls of the first (attempt %d); want [1 2] after 6 calls, attempt 1", got, waited, first.Attempt)
		}
		if dead, err := h.Effects(ctx, host.EffectQuery{State: host.EffectDead, Type: "scenario.outbox"}); err != nil || len(dead) != 0 {
			t.Fatalf("dead effects: %+v, %v", dead, err)
		}
	})

	scenario("StaleGenerationVisibleToHandler", func(t *testing.T, be store.Backend) {
		// The effect is staged by generation 1 and claimed only after the
		// actor was released and activated again (generation 2): the
		// handler sees it as stale.
		sk := newSink()
		h := effectHost(t, be, sk, func(c *host.Config) { c.IdleTimeout = 30 * time.Millisecond; c.RenewEvery = 15 * time.Millisecond })
		ctx := testutil.Context(t)
		if _, err := h.Ask(ctx, oref("g"), "emit_later", emitArgs{Key: "g", Seq: 1}); err != nil {
			t.Fatal(err)
		}
		time.Sleep(150 * time.Millisecond) // idle release
		if _, err := h.Ask(ctx, oref("g"), "get", nil); err != nil {
			t.Fatal(err)
		}
		var ec host.EffectContext
		testutil.Eventually(t, 10*time.Second, "the delayed effect", func() bool {
			sk.mu.Lock()
			defer sk.mu.Unlock()
			if len(sk.contexts) == 0 {
				return false
			}
			ec = sk.contexts[0]
			return true
		})
		if !ec.Stale() || ec.Generation != 1 || ec.ActorGeneration < 2 {
			t.Fatalf("effect context %+v: want stale (staged by generation 1, actor now later)", ec)
		}
	})
}
