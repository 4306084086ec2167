package postgres

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ductus/ductus/actor"
	"github.com/ductus/ductus/runtime/store"
)

// Store-level benchmarks of the adapter's hot path (the runtime's own
// benchmarks live in bench/). They report rates; nothing asserts them.

func benchBackend(b *testing.B, conns int32) *Backend {
	b.Helper()
	if skipReason != "" {
		b.Skip(skipReason)
	}
	be, err := Open(context.Background(), Config{DSN: testDSN, Schema: newSchema(), MaxConns: conns})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { be.Close() })
	return be
}

// parallel runs fn on n goroutines until b.N operations are done.
func parallel(b *testing.B, n int, fn func(g, i int) error) {
	var next atomic.Int64
	var wg sync.WaitGroup
	errs := make(chan error, n)
	b.ResetTimer()
	for g := 0; g < n; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := int(next.Add(1))
				if i > b.N {
					return
				}
				if err := fn(g, i); err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	b.StopTimer()
	close(errs)
	for err := range errs {
		b.Fatal(err)
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "ops/s")
}

// BenchmarkBaselineCommit is the server's durable-commit limit through the
// same pool: a one-row INSERT and COMMIT per transaction.
func BenchmarkBaselineCommit(b *testing.B) {
	for _, conns := range []int{1, 16} {
		b.Run(fmt.Sprintf("conns=%d", conns), func(b *testing.B) {
			be := benchBackend(b, int32(conns))
			if _, err := be.Pool().Exec(context.Background(), `CREATE TABLE bench_baseline (id bigserial PRIMARY KEY, v text)`); err != nil {
				b.Fatal(err)
			}
			parallel(b, conns, func(int, int) error {
				_, err := be.Pool().Exec(context.Background(), `INSERT INTO bench_baseline (v) VALUES ('x')`)
				return err
			})
		})
	}
}

// BenchmarkTell is one message per enqueue transaction.
func BenchmarkTell(b *testing.B) {
	for _, c := range []struct {
		conns  int
		actors int
	}{{1, 1}, {16, 1}, {16, 1000}} {
		b.Run(fmt.Sprintf("conns=%d/actors=%d", c.conns, c.actors), func(b *testing.B) {
			be := benchBackend(b, int32(c.conns))
			parallel(b, c.conns, func(_, i int) error {
				_, err := be.MailboxEnqueue(context.Background(), nil, &store.MailboxEnqueueParams{MailboxCap: 1 << 30,
					Messages: []store.NewMessage{{Ref: actor.Ref{Type: "b", ID: fmt.Sprint(i % c.actors)}, Name: "m", Args: []byte(`{"n":1}`)}}})
				return err
			})
		})
	}
}

// BenchmarkTellBatch is batches of 5,000 messages over 1,000 actors.
func BenchmarkTellBatch(b *testing.B) {
	be := benchBackend(b, 4)
	msgs := make([]store.NewMessage, 5000)
	for i := range msgs {
		msgs[i] = store.NewMessage{Ref: actor.Ref{Type: "b", ID: fmt.Sprint(i % 1000)}, Name: "m", Args: []byte(`{"n":1}`)}
	}
	parallel(b, 1, func(int, int) error {
		_, err := be.MailboxEnqueue(context.Background(), nil, &store.MailboxEnqueueParams{Messages: msgs, MailboxCap: 1 << 30})
		return err
	})
	b.ReportMetric(float64(b.N*len(msgs))/b.Elapsed().Seconds(), "msgs/s")
}

// BenchmarkProcess runs the store side of continuous processing: a
// producer keeps a backlog over 1,000 actors with batches of 5,000 while
// workers claim, take K and commit no-op turns with the next take folded
// in. b.N is the number of messages processed.
func BenchmarkProcess(b *testing.B) {
	for _, k := range []int{10, 100} {
		b.Run(fmt.Sprintf("K=%d", k), func(b *testing.B) {
			be := benchBackend(b, 16)
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			var processed, enqueued atomic.Int64
			go func() {
				msgs := make([]store.NewMessage, 5000)
				for i := range msgs {
					msgs[i] = store.NewMessage{Ref: actor.Ref{Type: "p", ID: fmt.Sprint(i % 1000)}, Name: "m", Args: []byte(`{}`)}
				}
				for ctx.Err() == nil {
					if enqueued.Load()-processed.Load() > 50_000 {
						time.Sleep(time.Millisecond)
						continue
					}
					if _, err := be.MailboxEnqueue(ctx, nil, &store.MailboxEnqueueParams{Messages: msgs}); err == nil {
						enqueued.Add(int64(len(msgs)))
					}
				}
			}()
			b.ResetTimer()
			var wg sync.WaitGroup
			for w := 0; w < 12; w++ {
				wg.Add(1)
				go func() {
					defer wg.Done()
					owner := fmt.Sprintf("w%d", w)
					for processed.Load() < int64(b.N) {
						ls, err := be.LeaseClaim(ctx, &store.LeaseClaimParams{Owner: owner, TTL: time.Minute, Limit: 1, Types: []string{"p"}})
						if err != nil || len(ls) == 0 {
							time.Sleep(time.Millisecond)
							continue
						}
						l := ls[0].LeaseRef
						msgs, err := be.MessageTake(ctx, &store.MessageTakeParams{Owner: owner, Lease: l, Limit: k})
						for err == nil && len(msgs) > 0 && processed.Load() < int64(b.N) {
							var res store.TurnCommitResult
							res, err = be.TurnCommit(ctx, &store.TurnCommitParams{Owner: owner, Lease: l, State: []byte(`{"n":1}`), Completed: completions(msgs), TakeNext: k})
							processed.Add(int64(len(msgs)))
							msgs = res.Next
						}
						_ = be.LeaseRelease(ctx, &store.LeaseReleaseParams{Owner: owner, Leases: []store.LeaseRef{l}})
					}
				}()
			}
			wg.Wait()
			b.StopTimer()
			b.ReportMetric(float64(processed.Load())/b.Elapsed().Seconds(), "msgs/s")
			cancel()
			time.Sleep(1500 * time.Millisecond) // statistics reach the views in about a second
			var upd, hot int64
			if err := be.Pool().QueryRow(context.Background(), `SELECT n_tup_upd, n_tup_hot_upd FROM pg_stat_user_tables
				WHERE schemaname = $1 AND relname = 'ductus_actors'`, be.Schema()).Scan(&upd, &hot); err == nil && upd > 0 {
				b.ReportMetric(100*float64(hot)/float64(upd), "%hot-actor-updates")
			}
		})
	}
}
