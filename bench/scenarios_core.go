package main

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/ductus/ductus/actor"
	"github.com/ductus/ductus/runtime/host"
	"github.com/ductus/ductus/runtime/store"
)

// allScenarios lists the scenarios in the order a full run takes them.
// The two that write a million rows or more (continuous_tell_process,
// queue_read) come last, so no lighter scenario runs while the server may
// still be writing them back. (This is a precaution: the one slowdown
// first blamed on it, effects_ordered_200_actors on PostgreSQL, was the
// effect statements' plans, and it ran at full rate right after
// queue_read once those were fixed.)
func allScenarios() []scenario {
	list := []scenario{
		{"baseline_commit", baselineCommit, []string{"baseline_commit_1conn", "baseline_commit_16conn"}},
		{"enqueue_one_actor", enqueueOneActor, nil},
		{"enqueue_16conn", enqueue16, nil},
		{"claim_200_actors", claim200, nil},
		{"process_40_round_robin", process40, []string{"activation_reuse_pct", "statements_per_turn"}},
		{"process_200_cold", process200Cold, nil},
		{"process_hot_actor", processHot, nil},
		{"process_4_workers", process4Workers, nil},
		{"ask_latency", askLatency, []string{"ask_latency_p50_ms", "ask_latency_p95_ms", "ask_latency_p99_ms"}},
		{"ask_cross_process", askCrossProcess, []string{"ask_cross_process_p50_ms", "ask_cross_process_p99_ms"}},
		{"effects_unordered", effectsUnordered, nil},
		{"effects_ordered_200_actors", effectsOrdered, nil},
		{"reminders_10000_due", reminders, nil},
		{"send_to_chain", sendToChain, nil},
		{"broadcast_fanout", broadcastFanout, nil},
		{"innodb_row_costs", innodbRowCosts, rowCostFigures()},
		{"continuous_split", continuousSplit, []string{"split_enqueue", "split_enqueue_client_cpu_us", "split_enqueue_server_cpu_us", "split_process", "split_process_client_cpu_us", "split_process_server_cpu_us"}},
		{"continuous_tell_process", continuousTellProcess, []string{"continuous_tell_process_client_cpu_us", "continuous_tell_process_server_cpu_us"}},
		{"queue_read", queueRead, []string{"queue_read_1k_history_ms", "queue_read_1m_history_ms"}},
		{"realtime_update_latency", realtimeLatency, []string{"realtime_update_latency_p50_ms", "realtime_update_latency_p99_ms"}},
		{"realtime_updates_per_s", realtimeThroughput, nil},
		{"realtime_idle_connection_kb", realtimeIdle, nil},
	}
	// The engine's scenarios come last: they are a layer above the rest.
	return append(list, engineScenarios()...)
}

// fresh runs fn on a new, empty database.
func (r *runner) fresh(ctx context.Context, count *counter, fn func(be backend, dsn string) error) error {
	dsn, cleanup, err := r.env.fresh(ctx)
	if err != nil {
		return err
	}
	defer cleanup()
	be, err := r.env.open(ctx, dsn, count)
	if err != nil {
		return err
	}
	defer be.Close()
	return fn(be, dsn)
}

func baselineCommit(ctx context.Context, r *runner) error {
	d := time.Duration(r.n(10, 1)) * time.Second
	for _, conns := range []int{1, 16} {
		err := r.fresh(ctx, nil, func(_ backend, dsn string) error {
			n, err := r.env.baseline(ctx, dsn, conns, d)
			if err != nil {
				return err
			}
			r.baselines[conns] = float64(n) / d.Seconds()
			r.print(fmt.Sprintf("baseline_commit_%dconn", conns), float64(n)/d.Seconds(), "tx/s", n)
			return nil
		})
		if err != nil {
			return err
		}
	}
	return nil
}

func client(ctx context.Context, be backend) (*host.Host, error) {
	return (&world{}).newHost(ctx, be, func(c *host.Config) { c.NoWorkers = true })
}

func enqueueOneActor(ctx context.Context, r *runner) error {
	n := r.n(5000, 20)
	return r.fresh(ctx, nil, func(be backend, _ string) error {
		c, err := client(ctx, be)
		if err != nil {
			return err
		}
		defer c.Shutdown(ctx)
		ref := actor.Ref{Type: counterType, ID: "one"}
		p := &progress{what: "tells", total: n, last: time.Now()}
		start := time.Now()
		for i := 0; i < n; i++ {
			if _, err := c.Tell(ctx, ref, "noop", nil); err != nil {
				return err
			}
			p.at(i)
		}
		r.print("enqueue_one_actor", float64(n)/time.Since(start).Seconds(), "msg/s", n)
		return nil
	})
}

// enqueue16 is 16 concurrent callers, each telling its own actor.
func enqueue16(ctx context.Context, r *runner) error {
	n := r.n(20_000, 64)
	return r.fresh(ctx, nil, func(be backend, _ string) error {
		c, err := client(ctx, be)
		if err != nil {
			return err
		}
		defer c.Shutdown(ctx)
		start := time.Now()
		errs := make(chan error, 16)
		for g := 0; g < 16; g++ {
			go func() {
				ref := actor.Ref{Type: counterType, ID: fmt.Sprintf("caller-%d", g)}
				for i := 0; i < n/16; i++ {
					if _, err := c.Tell(ctx, ref, "noop", nil); err != nil {
						errs <- err
						return
					}
				}
				errs <- nil
			}()
		}
		for g := 0; g < 16; g++ {
			if err := <-errs; err != nil {
				return err
			}
		}
		r.print("enqueue_16conn", float64(n/16*16)/time.Since(start).Seconds(), "msg/s", n/16*16)
		return nil
	})
}

// fill enqueues per messages to each of actors ids, round-robin, in
// batches, through a client host.
func fill(ctx context.Context, be backend, typ string, actors, per int, name string, args any) error {
	c, err := client(ctx, be)
	if err != nil {
		return err
	}
	defer c.Shutdown(ctx)
	var batch []actor.Envelope
	for i := 0; i < per; i++ {
		for a := 0; a < actors; a++ {
			batch = append(batch, actor.Envelope{Ref: actor.Ref{Type: typ, ID: fmt.Sprintf("a%04d", a)}, Message: name, Args: args})
			if len(batch) == 2000 {
				if _, err := c.TellBatch(ctx, batch); err != nil {
					return err
				}
				batch = batch[:0]
			}
		}
	}
	if len(batch) > 0 {
		_, err = c.TellBatch(ctx, batch)
	}
	return err
}

// claim200 claims 200 actors with due work the way the dispatcher does:
// up to one actor per free worker (8 by default) per claim transaction.
func claim200(ctx context.Context, r *runner) error {
	actors := r.n(200, 10)
	return r.fresh(ctx, nil, func(be backend, _ string) error {
		if err := fill(ctx, be, counterType, actors, 1, "noop", nil); err != nil {
			return err
		}
		start := time.Now()
		claimed := 0
		for claimed < actors {
			ls, err := be.LeaseClaim(ctx, &store.LeaseClaimParams{Owner: "bench", TTL: time.Minute, Limit: 8, Types: []string{counterType}})
			if err != nil {
				return err
			}
			if len(ls) == 0 {
				return fmt.Errorf("claimed %d of %d, then nothing", claimed, actors)
			}
			claimed += len(ls)
		}
		r.print("claim_200_actors", float64(claimed)/time.Since(start).Seconds(), "claims/s", claimed)
		return nil
	})
}

// processBacklog enqueues a backlog, then times a fresh host draining it.
// It reports the rate and returns the host's activations and the
// statements sent while draining.
func processBacklog(ctx context.Context, r *runner, name string, actors, per int, mod func(*host.Config)) (activations float64, statements int64, err error) {
	var count counter
	err = r.fresh(ctx, &count, func(be backend, _ string) error {
		if err := fill(ctx, be, counterType, actors, per, "noop", nil); err != nil {
			return err
		}
		w := &world{}
		total := actors * per
		count.Store(0)
		start := time.Now()
		h, err := w.newHost(ctx, be, mod)
		if err != nil {
			return err
		}
		err = waitFor(ctx, name, total, func() int { return int(w.processed.Load()) })
		elapsed := time.Since(start)
		statements = count.Load()
		activations = metricSum(h, "ductus_activations_total")
		h.Shutdown(ctx)
		if err != nil {
			return err
		}
		r.print(name, float64(total)/elapsed.Seconds(), "msg/s", total)
		return nil
	})
	return activations, statements, err
}

func process40(ctx context.Context, r *runner) error {
	per := r.n(500, 5)
	acts, stmts, err := processBacklog(ctx, r, "process_40_round_robin", 40, per, nil)
	if err != nil {
		return err
	}
	total := 40 * per
	r.print("activation_reuse_pct", 100*(1-acts/float64(total)), "%", total)
	r.print("statements_per_turn", float64(stmts)/float64(total), "statements/msg", total)
	return nil
}

func process200Cold(ctx context.Context, r *runner) error {
	_, _, err := processBacklog(ctx, r, "process_200_cold", r.n(200, 10), 5, nil)
	return err
}

func processHot(ctx context.Context, r *runner) error {
	_, _, err := processBacklog(ctx, r, "process_hot_actor", 1, r.n(20_000, 50), nil)
	return err
}

func process4Workers(ctx context.Context, r *runner) error {
	per := r.n(500, 5)
	return r.fresh(ctx, nil, func(be backend, dsn string) (err error) {
		if err := fill(ctx, be, counterType, 40, per, "noop", nil); err != nil {
			return err
		}
		total := 40 * per
		start := time.Now()
		stop, err := startWorkers(r, dsn, 4)
		if err != nil {
			return err
		}
		defer func() { err = errors.Join(err, stop()) }()
		err = waitFor(ctx, "process_4_workers", total, func() int { return total - unfinished(ctx, be) })
		if err != nil {
			return err
		}
		r.print("process_4_workers", float64(total)/time.Since(start).Seconds(), "msg/s", total)
		return nil
	})
}

// unfinished sums the unfinished messages of the bench counters.
func unfinished(ctx context.Context, be backend) int {
	n, after := 0, ""
	for {
		page, err := be.ActorList(ctx, &store.ActorListParams{Type: counterType, AfterID: after, Limit: 1000})
		if err != nil {
			return 1 << 30
		}
		for _, a := range page {
			n += a.Unfinished
		}
		if len(page) < 1000 {
			return n
		}
		after = page[len(page)-1].Ref.ID
	}
}

// msAt is the q-quantile of sorted latencies, in milliseconds.
func msAt(sorted []time.Duration, q float64) float64 {
	return float64(sorted[min(len(sorted)-1, int(q*float64(len(sorted))))].Microseconds()) / 1000
}

func percentiles(r *runner, name string, lat []time.Duration) {
	sortDurations(lat)
	for _, p := range []struct {
		suffix string
		q      float64
	}{{"p50", 0.50}, {"p95", 0.95}, {"p99", 0.99}} {
		if name == "ask_cross_process" && p.suffix == "p95" {
			continue
		}
		r.print(name+"_"+p.suffix+"_ms", msAt(lat, p.q), "ms", len(lat))
	}
}

func askLatency(ctx context.Context, r *runner) error {
	n := r.n(2000, 20)
	return r.fresh(ctx, nil, func(be backend, _ string) error {
		w := &world{}
		h, err := w.newHost(ctx, be, nil)
		if err != nil {
			return err
		}
		defer h.Shutdown(ctx)
		ref := actor.Ref{Type: counterType, ID: "asked"}
		for i := 0; i < 20; i++ { // warm: the activation is cached
			if _, err := h.Ask(ctx, ref, "noop", nil); err != nil {
				return err
			}
		}
		lat := make([]time.Duration, 0, n)
		for i := 0; i < n; i++ {
			start := time.Now()
			if _, err := h.Ask(ctx, ref, "noop", nil); err != nil {
				return err
			}
			lat = append(lat, time.Since(start))
		}
		percentiles(r, "ask_latency", lat)
		return nil
	})
}

// askCrossProcess asks from this process (no workers) while a worker
// process answers: the wake-up path between processes.
func askCrossProcess(ctx context.Context, r *runner) error {
	n := r.n(500, 10)
	return r.fresh(ctx, nil, func(be backend, dsn string) (err error) {
		stop, err := startWorkers(r, dsn, 1)
		if err != nil {
			return err
		}
		defer func() { err = errors.Join(err, stop()) }()
		c, err := client(ctx, be)
		if err != nil {
			return err
		}
		defer c.Shutdown(ctx)
		ref := actor.Ref{Type: counterType, ID: "remote"}
		for i := 0; i < 10; i++ {
			if _, err := c.Ask(ctx, ref, "noop", nil); err != nil {
				return err
			}
		}
		lat := make([]time.Duration, 0, n)
		for i := 0; i < n; i++ {
			start := time.Now()
			if _, err := c.Ask(ctx, ref, "noop", nil); err != nil {
				return err
			}
			lat = append(lat, time.Since(start))
		}
		percentiles(r, "ask_cross_process", lat)
		return nil
	})
}

// metricSum adds up a counter family of the host's private registry.
func metricSum(h *host.Host, name string) float64 {
	reg := h.Metrics()
	if reg == nil {
		return 0
	}
	mfs, err := reg.Gather()
	if err != nil {
		return 0
	}
	sum := 0.0
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
		for _, m := range mf.GetMetric() {
			if c := m.GetCounter(); c != nil {
				sum += c.GetValue()
			}
		}
	}
	return sum
}
