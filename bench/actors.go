package main

import (
	"context"
	"encoding/json"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/ductus/ductus/actor"
	"github.com/ductus/ductus/runtime/host"
	"github.com/ductus/ductus/runtime/store"
)

type backend = store.Backend

// counter counts statements (or anything) across goroutines.
type counter = atomic.Int64

// benchState is the state of every benchmark actor.
type benchState struct {
	N int `json:"n"`
}

// world is the bench's actor types and the counters their handlers bump.
type world struct {
	processed atomic.Int64 // "noop" messages run
	hops      atomic.Int64 // chain hops run
	ticks     atomic.Int64 // reminder occurrences run
	effects   atomic.Int64 // effect handler calls
}

const (
	counterType = "bench.counter"
	chainType   = "bench.chain"
	alarmType   = "bench.alarm"
	fxType      = "bench.fx"
)

func (w *world) registry() *actor.Registry {
	reg := actor.NewRegistry()
	reg.MustRegister(&actor.Type[benchState]{Name: counterType, Messages: map[string]actor.Handler[benchState]{
		"noop": actor.Message(func(c *actor.Context, s *benchState, _ struct{}) (any, error) {
			s.N++
			w.processed.Add(1)
			return nil, nil
		}),
		"get": actor.Query(func(c *actor.Context, s *benchState, _ struct{}) (int, error) { return s.N, nil }),
	}, Observables: map[string]func(*benchState) any{"n": func(s *benchState) any { return s.N }}})
	reg.MustRegister(&actor.Type[benchState]{Name: chainType, Messages: map[string]actor.Handler[benchState]{
		// hop forwards to the next actor of a ring until the hop budget is spent.
		"hop": actor.Message(func(c *actor.Context, s *benchState, a hopArgs) (any, error) {
			s.N++
			w.hops.Add(1)
			if a.Left <= 1 {
				return nil, nil
			}
			next := actor.Ref{Type: chainType, ID: fmt.Sprintf("%s-%d", a.Chain, (a.At+1)%a.Ring)}
			return nil, c.SendTo(next, "hop", hopArgs{Chain: a.Chain, At: (a.At + 1) % a.Ring, Ring: a.Ring, Left: a.Left - 1})
		}),
	}})
	reg.MustRegister(&actor.Type[benchState]{Name: alarmType, Messages: map[string]actor.Handler[benchState]{
		"arm": actor.Message(func(c *actor.Context, s *benchState, a armArgs) (any, error) {
			for i := 0; i < a.Count; i++ {
				if err := c.Schedule(fmt.Sprintf("r%d", i), actor.At(a.At), "tick", nil); err != nil {
					return nil, err
				}
			}
			return nil, nil
		}),
		"tick": actor.Message(func(c *actor.Context, s *benchState, _ struct{}) (any, error) {
			s.N++
			w.ticks.Add(1)
			return nil, nil
		}),
	}})
	reg.MustRegister(&actor.Type[benchState]{Name: fxType, Messages: map[string]actor.Handler[benchState]{
		"emit": actor.Message(func(c *actor.Context, s *benchState, a emitArgs) (any, error) {
			for i := 0; i < a.Count; i++ {
				name := "noop"
				if a.Ordered {
					name = "noop_ordered"
				}
				if err := c.Emit(name, map[string]int{"i": i}); err != nil {
					return nil, err
				}
			}
			return nil, nil
		}),
	}})
	return reg
}

type hopArgs struct {
	Chain string `json:"chain"`
	At    int    `json:"at"`
	Ring  int    `json:"ring"`
	Left  int    `json:"left"`
}

type armArgs struct {
	Count int       `json:"count"`
	At    time.Time `json:"at"`
}

type emitArgs struct {
	Count   int  `json:"count"`
	Ordered bool `json:"ordered"`
}

func (w *world) effectHandlers() map[string]host.Effect {
	noop := func(ctx context.Context, ec host.EffectContext, args []byte) (any, error) {
		w.effects.Add(1)
		return nil, nil
	}
	h := host.EffectHandler(func(ctx context.Context, ec host.EffectContext, raw json.RawMessage) (any, error) {
		return noop(ctx, ec, raw)
	})
	return map[string]host.Effect{
		"noop":         {Handler: h},
		"noop_ordered": {Handler: h, Ordered: true},
	}
}

// newHost starts a host for a scenario.
func (w *world) newHost(ctx context.Context, be backend, mod func(*host.Config)) (*host.Host, error) {
	// No mailbox cap: the hot-actor scenario queues 20,000 messages to one actor.
	cfg := host.Config{Backend: be, Registry: w.registry(), Effects: w.effectHandlers(), PollInterval: 100 * time.Millisecond,
		Limits: actor.Limits{MailboxMessages: -1}}
	// BENCH_BATCH overrides K, to measure the default's choice.
	if k := envInt("BENCH_BATCH", 0); k > 0 {
		cfg.BatchSize = k
	}
	if mod != nil {
		mod(&cfg)
	}
	h, err := host.New(cfg)
	if err != nil {
		return nil, err
	}
	if err := h.Start(ctx); err != nil {
		return nil, err
	}
	return h, nil
}

// waitFor polls cond until it holds (or 10 minutes pass), reporting progress.
func waitFor(ctx context.Context, what string, total int, done func() int) error {
	p := &progress{what: what, total: total, last: time.Now()}
	deadline := time.Now().Add(10 * time.Minute)
	for {
		n := done()
		if n >= total {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%s: timed out at %d/%d", what, n, total)
		}
		if ctx.Err() != nil {
			return fmt.Errorf("%s: %w at %d/%d", what, ctx.Err(), n, total)
		}
		p.at(n)
		time.Sleep(2 * time.Millisecond)
	}
}
