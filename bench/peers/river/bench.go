package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/riverdriver/riverpgxv5"
	"github.com/riverqueue/river/rivertype"
)

// The settings of River's own continuous benchmark, `river bench` without
// --num-total-jobs, as set in cmd/river/riverbench/river_bench.go of
// github.com/riverqueue/river. They are River's tuned values for throughput;
// change them only to follow River's benchmark.
const (
	fetchCooldown     = 2 * time.Millisecond  // river.Config.FetchCooldown
	fetchPollInterval = 20 * time.Millisecond // river.Config.FetchPollInterval
	maxWorkers        = 2_000                 // default queue's MaxWorkers
	insertBatchSize   = 5_000                 // jobs per InsertMany
	backlogTarget     = 75_000                // "minJobs": refill until this many are left
	insertCheckEvery  = 250 * time.Millisecond
	availableEvery    = 1 * time.Second // River counts available jobs this often
	progressEvery     = 2 * time.Second // River's iterationPeriod
)

// readyTimeout bounds the wait for the first full backlog. River allows 5 s;
// this is longer so a slow or busy machine yields a figure, not a failure.
const readyTimeout = 2 * time.Minute

// benchArgs is River's benchmark job: kind "benchmark", one number.
type benchArgs struct {
	Num int `json:"num"`
}

// Kind names the job kind as River's benchmark does.
func (benchArgs) Kind() string { return "benchmark" }

// noopWorker works a job by doing nothing, as River's BenchmarkWorker does,
// so the figure is River's own overhead: fetch, run, complete.
type noopWorker struct {
	river.WorkerDefaults[benchArgs]
}

// Work does nothing and succeeds.
func (*noopWorker) Work(context.Context, *river.Job[benchArgs]) error { return nil }

// result is one measured window.
type result struct {
	worked   int64         // jobs completed inside the window
	elapsed  time.Duration // length of the window
	inserted int64         // jobs inserted over the whole run
}

// counters are shared by the run's goroutines.
type counters struct {
	inserted  atomic.Int64
	left      atomic.Int64 // inserted and not yet seen finished: River's numJobsLeft
	worked    atomic.Int64
	anomalies atomic.Int64 // cancelled or discarded jobs; a no-op job has none
	available atomic.Int64 // last count of available rows, for progress only
}

// runContinuous runs River's continuous mode: a backlog kept at about
// backlogTarget by batched inserts while 2,000 workers work no-op jobs. It
// counts jobs as River's benchmark does, by completion events from a
// subscription (which include the completer's commit, unlike counting in the
// worker), excludes warmup, and measures over duration.
func runContinuous(ctx context.Context, pool *pgxpool.Pool, warmup, duration time.Duration, logger *slog.Logger) (result, error) {
	runCtx, cancel := context.WithCancelCause(ctx)

	workers := river.NewWorkers()
	if err := river.AddWorkerSafely(workers, &noopWorker{}); err != nil {
		cancel(nil)
		return result{}, fmt.Errorf("register worker: %w", err)
	}
	client, err := river.NewClient(riverpgxv5.New(pool), &river.Config{
		FetchCooldown:     fetchCooldown,
		FetchPollInterval: fetchPollInterval,
		Logger:            quietLogger(logger),
		Queues:            map[string]river.QueueConfig{river.QueueDefault: {MaxWorkers: maxWorkers}},
		Workers:           workers,
	})
	if err != nil {
		cancel(nil)
		return result{}, fmt.Errorf("river client: %w", err)
	}
	events, unsubscribe := client.SubscribeConfig(&river.SubscribeConfig{
		// As large as the backlog so no completion event is ever dropped:
		// a dropped event would corrupt the count.
		ChanSize: backlogTarget,
		Kinds:    []river.EventKind{river.EventKindJobCompleted, river.EventKindJobCancelled, river.EventKindJobFailed},
	})

	var (
		c     counters
		wg    sync.WaitGroup
		ready = make(chan struct{})
	)
	defer func() {
		cancel(nil)
		wg.Wait()
		unsubscribe()
	}()
	wg.Go(func() { countEvents(runCtx, events, &c, logger) })
	wg.Go(func() {
		if err := insertContinuously(runCtx, client, &c, ready, logger); err != nil {
			cancel(err)
		}
	})
	wg.Go(func() { pollAvailable(runCtx, pool, &c, logger) })

	insertStart := time.Now()
	select {
	case <-ready:
		logger.Info("initial backlog inserted", "jobs", c.inserted.Load(), "took", time.Since(insertStart).Round(time.Millisecond))
	case <-runCtx.Done():
		return result{}, runError(runCtx, "waiting for the initial backlog")
	case <-time.After(readyTimeout):
		return result{}, fmt.Errorf("initial backlog of %d jobs not inserted within %s", backlogTarget, readyTimeout)
	}

	if err := client.Start(runCtx); err != nil {
		return result{}, fmt.Errorf("start river client: %w", err)
	}
	// Registered after the cancel-and-wait defer, so it runs first: the
	// client stops cleanly while the counting goroutine is still reading.
	defer func() {
		stopCtx, stopCancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer stopCancel()
		if err := client.Stop(stopCtx); err != nil {
			logger.Warn("stop river client", "err", err)
		}
	}()
	logger.Info("river client started", "max_workers", maxWorkers, "warmup", warmup, "duration", duration)

	if err := watch(runCtx, "warmup", warmup, &c, logger); err != nil {
		return result{}, err
	}
	w0, t0 := c.worked.Load(), time.Now()
	if err := watch(runCtx, "measure", duration, &c, logger); err != nil {
		return result{}, err
	}
	w1, t1 := c.worked.Load(), time.Now()

	if n := c.anomalies.Load(); n > 0 {
		return result{}, fmt.Errorf("%d jobs were cancelled or discarded; a no-op job must always complete", n)
	}
	res := result{worked: w1 - w0, elapsed: t1.Sub(t0), inserted: c.inserted.Load()}
	logger.Info("measured", "jobs", res.worked, "seconds", res.elapsed.Seconds(),
		"jobs_per_s", float64(res.worked)/res.elapsed.Seconds(), "inserted_total", res.inserted)
	return res, nil
}

// watch waits for d while printing River-style progress lines on stderr
// every progressEvery.
func watch(ctx context.Context, phase string, d time.Duration, c *counters, logger *slog.Logger) error {
	if d <= 0 {
		return nil
	}
	start := time.Now()
	done := time.NewTimer(d)
	defer done.Stop()
	tick := time.NewTicker(progressEvery)
	defer tick.Stop()
	lastWorked, lastInserted, last := c.worked.Load(), c.inserted.Load(), start
	for {
		select {
		case <-ctx.Done():
			return runError(ctx, phase)
		case <-done.C:
			return nil
		case now := <-tick.C:
			worked, inserted := c.worked.Load(), c.inserted.Load()
			logger.Info("progress", "phase", phase,
				"t", now.Sub(start).Round(time.Second),
				"worked", worked-lastWorked,
				"inserted", inserted-lastInserted,
				"jobs_per_s", float64(worked-lastWorked)/now.Sub(last).Seconds(),
				"available", c.available.Load())
			lastWorked, lastInserted, last = worked, inserted, now
		}
	}
}

// runError explains why the run's context ended: an interrupt, or the
// failure of one of the run's goroutines.
func runError(ctx context.Context, during string) error {
	cause := context.Cause(ctx)
	if errors.Is(cause, context.Canceled) {
		return fmt.Errorf("interrupted during %s: %w", during, cause)
	}
	return fmt.Errorf("run failed during %s: %w", during, cause)
}

// countEvents counts finished jobs from the subscription.
func countEvents(ctx context.Context, events <-chan *river.Event, c *counters, logger *slog.Logger) {
	for {
		select {
		case <-ctx.Done():
			return
		case ev, ok := <-events:
			if !ok || ev == nil {
				return
			}
			switch ev.Kind {
			case river.EventKindJobCompleted:
				c.worked.Add(1)
			case river.EventKindJobFailed:
				// A failure that will be retried is not finished; River's
				// benchmark treats it the same way.
				if ev.Job.State == rivertype.JobStateDiscarded {
					c.anomalies.Add(1)
					logger.Error("job discarded", "job_id", ev.Job.ID)
				}
				continue
			default:
				c.anomalies.Add(1)
				logger.Error("job unexpectedly finished", "kind", ev.Kind, "job_id", ev.Job.ID)
			}
			c.left.Add(-1)
		}
	}
}

// insertContinuously is River's insertJobsContinuously: every 250 ms, insert
// a batch of 5,000 jobs, and more batches until at least 75,000 are left
// unworked. As in River, the first batch of a round is inserted whatever the
// backlog (River checks the target after each insert), so the insert rate is
// never below 20,000 jobs/s and the backlog grows past the target on a
// machine that works fewer. ready is closed once the first full backlog is in.
func insertContinuously(ctx context.Context, client *river.Client[pgx.Tx], c *counters, ready chan<- struct{}, logger *slog.Logger) error {
	batch := make([]river.InsertManyParams, insertBatchSize)
	num := 0
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(insertCheckEvery):
		}
		for {
			for i := range batch {
				num++
				batch[i].Args = benchArgs{Num: num}
			}
			if _, err := client.InsertMany(ctx, batch); err != nil {
				if ctx.Err() != nil {
					return nil
				}
				return fmt.Errorf("insert batch of %d jobs: %w", len(batch), err)
			}
			c.inserted.Add(insertBatchSize)
			if c.left.Add(insertBatchSize) >= backlogTarget {
				break
			}
			if ctx.Err() != nil {
				return nil
			}
		}
		if ready != nil {
			close(ready)
			ready = nil
			logger.Debug("backlog target reached", "left", c.left.Load())
		}
	}
}

// pollAvailable counts available jobs each second, as River's benchmark does;
// the count is progress output only, but the query is part of the load River
// puts on the server, so it is kept.
func pollAvailable(ctx context.Context, pool *pgxpool.Pool, c *counters, logger *slog.Logger) {
	tick := time.NewTicker(availableEvery)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
			var n int64
			err := pool.QueryRow(ctx, "SELECT count(*) FROM river_job WHERE state = 'available'").Scan(&n)
			if err != nil {
				if ctx.Err() == nil {
					logger.Warn("count available jobs", "err", err)
				}
				continue
			}
			c.available.Store(n)
		}
	}
}
