package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/ductus/ductus/actor"
	"github.com/ductus/ductus/runtime/host"
	"github.com/ductus/ductus/runtime/store"
)

// continuousTellProcess keeps a backlog over 1,000 actors topped up with
// TellBatch calls of 5,000 while the workers process no-op turns, like
// River's continuous benchmark, and reports the processing rate. The
// backlog target is River's (75,000 jobs left: minJobs in its
// river_bench.go, the peer's backlogTarget), so both are measured with the
// same queue depth.
func continuousTellProcess(ctx context.Context, r *runner) error {
	d := time.Duration(r.n(30, 2)) * time.Second
	return r.fresh(ctx, nil, func(be backend, _ string) error {
		w := &world{}
		h, err := w.newHost(ctx, be, nil)
		if err != nil {
			return err
		}
		defer h.Shutdown(ctx)
		c, err := client(ctx, be)
		if err != nil {
			return err
		}
		defer c.Shutdown(ctx)
		var enqueued atomic.Int64
		stop := make(chan struct{})
		errc := make(chan error, 1)
		go func() {
			batch := make([]actor.Envelope, 5000)
			next := 0
			for {
				select {
				case <-stop:
					errc <- nil
					return
				default:
				}
				if enqueued.Load()-w.processed.Load() > 75_000 {
					time.Sleep(time.Millisecond)
					continue
				}
				next = roundRobin(batch, next)
				if _, err := c.TellBatch(ctx, batch); err != nil {
					errc <- err
					return
				}
				enqueued.Add(int64(len(batch)))
			}
		}()
		time.Sleep(d / 10) // warm up
		servers := serverNames[r.o.backend]
		m0 := cpuMark(servers)
		from, start := w.processed.Load(), time.Now()
		p := &progress{what: "continuous", total: int(d.Seconds()), last: time.Now()}
		for time.Since(start) < d {
			time.Sleep(100 * time.Millisecond)
			p.at(int(time.Since(start).Seconds()))
		}
		done := w.processed.Load() - from
		elapsed := time.Since(start)
		m1 := cpuMark(servers)
		close(stop)
		if err := <-errc; err != nil {
			return err
		}
		r.print("continuous_tell_process", float64(done)/elapsed.Seconds(), "msg/s", int(done))
		// Both halves' CPU per processed message: on a machine whose cores
		// are all busy, what decides the rate, and steadier than it from
		// one run to the next.
		r.printCPU("continuous_tell_process", m0, m1, int(done))
		return nil
	})
}

// roundRobin fills batch with "noop" Tells to the 1,000 counters
// a0000..a0999 in turn, the first to actor next, and returns where the
// next batch starts.
func roundRobin(batch []actor.Envelope, next int) int {
	for i := range batch {
		batch[i] = actor.Envelope{Ref: actor.Ref{Type: counterType, ID: fmt.Sprintf("a%04d", next%1000)}, Message: "noop"}
		next++
	}
	return next
}

// queueRead measures the worker's read of K ready rows with 1 thousand
// and 1 million completed messages of the same actor ahead of them: it
// must not grow with the history.
func queueRead(ctx context.Context, r *runner) error {
	for _, h := range []struct {
		name    string
		history int
	}{{"queue_read_1k_history_ms", r.n(1000, 100)}, {"queue_read_1m_history_ms", r.n(1_000_000, 1000)}} {
		err := r.fresh(ctx, nil, func(be backend, _ string) error {
			if err := fill(ctx, be, counterType, 1, h.history, "noop", nil); err != nil {
				return err
			}
			w := &world{}
			hs, err := w.newHost(ctx, be, func(c *host.Config) { c.BatchSize = 500; c.PassMessages = 1 << 30; c.PassDuration = time.Hour })
			if err != nil {
				return err
			}
			err = waitFor(ctx, "history", h.history, func() int { return int(w.processed.Load()) })
			hs.Shutdown(ctx)
			if err != nil {
				return err
			}
			const k = 64
			if err := fill(ctx, be, counterType, 1, k, "noop", nil); err != nil {
				return err
			}
			ls, err := be.LeaseClaim(ctx, &store.LeaseClaimParams{Owner: "bench", TTL: time.Hour, Limit: 1, Types: []string{counterType}})
			if err != nil || len(ls) != 1 {
				return fmt.Errorf("claim the queue's actor: %v %v", ls, err)
			}
			reads := r.n(200, 10)
			var total time.Duration
			for i := 0; i < reads; i++ {
				start := time.Now()
				msgs, err := be.MessageTake(ctx, &store.MessageTakeParams{Owner: "bench", Lease: ls[0].LeaseRef, Limit: k})
				total += time.Since(start)
				if err != nil || len(msgs) != k {
					return fmt.Errorf("take: %d messages, %v", len(msgs), err)
				}
				ids := make([]int64, len(msgs))
				for j, m := range msgs {
					ids[j] = m.ID
				}
				if _, err := be.TurnCommit(ctx, &store.TurnCommitParams{Owner: "bench", Lease: ls[0].LeaseRef, Returned: ids}); err != nil {
					return err
				}
			}
			r.print(h.name, float64(total.Microseconds())/1000/float64(reads), "ms", reads)
			return nil
		})
		if err != nil {
			return err
		}
	}
	return nil
}

func runEffects(ctx context.Context, r *runner, name string, actors, each int, ordered bool) error {
	return r.fresh(ctx, nil, func(be backend, _ string) error {
		w := &world{}
		h, err := w.newHost(ctx, be, nil)
		if err != nil {
			return err
		}
		defer h.Shutdown(ctx)
		total := actors * each
		var batch []actor.Envelope
		for a := 0; a < actors; a++ {
			batch = append(batch, actor.Envelope{Ref: actor.Ref{Type: fxType, ID: fmt.Sprintf("a%04d", a)}, Message: "emit", Args: emitArgs{Count: each, Ordered: ordered}})
		}
		start := time.Now()
		if _, err := h.TellBatch(ctx, batch); err != nil {
			return err
		}
		if err := waitFor(ctx, name, total, func() int { return int(w.effects.Load()) }); err != nil {
			return err
		}
		r.print(name, float64(total)/time.Since(start).Seconds(), "effects/s", total)
		return nil
	})
}

func effectsUnordered(ctx context.Context, r *runner) error {
	return runEffects(ctx, r, "effects_unordered", r.n(200, 4), r.n(50, 5), false)
}

func effectsOrdered(ctx context.Context, r *runner) error {
	return runEffects(ctx, r, "effects_ordered_200_actors", r.n(200, 4), r.n(50, 5), true)
}

// reminders arms 10,000 one-shot reminders due at one instant and times
// their occurrences from that instant until every one has run.
func reminders(ctx context.Context, r *runner) error {
	actors, each := r.n(100, 4), r.n(100, 5)
	return r.fresh(ctx, nil, func(be backend, _ string) error {
		w := &world{}
		h, err := w.newHost(ctx, be, nil)
		if err != nil {
			return err
		}
		defer h.Shutdown(ctx)
		dbNow, err := be.Now(ctx)
		if err != nil {
			return err
		}
		due := dbNow.Add(3 * time.Second)
		for a := 0; a < actors; a++ {
			if _, err := h.Ask(ctx, actor.Ref{Type: alarmType, ID: fmt.Sprintf("a%04d", a)}, "arm", armArgs{Count: each, At: due}); err != nil {
				return err
			}
		}
		if wait := time.Until(due); wait > 0 {
			time.Sleep(wait)
		}
		start := time.Now()
		total := actors * each
		if err := waitFor(ctx, "reminder occurrences", total, func() int { return int(w.ticks.Load()) }); err != nil {
			return err
		}
		r.print("reminders_10000_due", float64(total)/time.Since(start).Seconds(), "occurrences/s", total)
		return nil
	})
}

// sendToChain relays messages around rings of actors with SendTo.
func sendToChain(ctx context.Context, r *runner) error {
	chains, ring, hops := r.n(envInt("BENCH_CHAINS", 50), 2), 10, r.n(200, 10)
	return r.fresh(ctx, nil, func(be backend, _ string) error {
		w := &world{}
		h, err := w.newHost(ctx, be, nil)
		if err != nil {
			return err
		}
		defer h.Shutdown(ctx)
		var batch []actor.Envelope
		for c := 0; c < chains; c++ {
			chain := fmt.Sprintf("c%d", c)
			batch = append(batch, actor.Envelope{Ref: actor.Ref{Type: chainType, ID: chain + "-0"}, Message: "hop", Args: hopArgs{Chain: chain, Ring: ring, Left: hops}})
		}
		start := time.Now()
		if _, err := h.TellBatch(ctx, batch); err != nil {
			return err
		}
		total := chains * hops
		if err := waitFor(ctx, "hops", total, func() int { return int(w.hops.Load()) }); err != nil {
			return err
		}
		// The first hop of each chain is a Tell, every other one a send.
		r.print("send_to_chain", float64(total-chains)/time.Since(start).Seconds(), "msg/s", total-chains)
		return nil
	})
}

// broadcastFanout changes 100 actors' observable over and over and counts
// the broadcasts a subscriber receives per second, until every actor's
// last value has arrived.
func broadcastFanout(ctx context.Context, r *runner) error {
	actors, per := r.n(100, 4), r.n(100, 5)
	return r.fresh(ctx, nil, func(be backend, _ string) error {
		w := &world{}
		h, err := w.newHost(ctx, be, func(c *host.Config) { c.BatchSize = 1 })
		if err != nil {
			return err
		}
		defer h.Shutdown(ctx)
		var mu sync.Mutex
		last := map[string]int{}
		var received atomic.Int64
		defer h.SubscribeAll(func(b host.Broadcast) {
			var n int
			_ = json.Unmarshal(b.Value, &n)
			mu.Lock()
			last[b.Ref.ID] = max(last[b.Ref.ID], n)
			mu.Unlock()
			received.Add(1)
		})()
		start := time.Now()
		var batch []actor.Envelope
		for i := 0; i < per; i++ {
			for a := 0; a < actors; a++ {
				batch = append(batch, actor.Envelope{Ref: actor.Ref{Type: counterType, ID: fmt.Sprintf("a%04d", a)}, Message: "noop"})
			}
		}
		if _, err := h.TellBatch(ctx, batch); err != nil {
			return err
		}
		err = waitFor(ctx, "final values", actors, func() int {
			mu.Lock()
			defer mu.Unlock()
			n := 0
			for _, v := range last {
				if v == per {
					n++
				}
			}
			return n
		})
		if err != nil {
			return err
		}
		n := int(received.Load())
		r.print("broadcast_fanout", float64(n)/time.Since(start).Seconds(), "broadcasts/s", n)
		return nil
	})
}

func envInt(name string, def int) int {
	if v, err := strconv.Atoi(os.Getenv(name)); err == nil && v > 0 {
		return v
	}
	return def
}
