// Package wakeuptest checks cross-process wake-ups on a backend that has
// them (store.Signaler and store.Notifier: Postgres, MySQL): several
// runtime processes on one database, each with its own connection pool,
// with the safety-net poll pushed out to minutes, so anything that arrives
// in time arrived because it was signalled. Each adapter's tests run it
// unchanged.
package wakeuptest

import (
	"context"
	"encoding/json"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ductus/ductus/actor"
	"github.com/ductus/ductus/internal/testutil"
	"github.com/ductus/ductus/runtime/host"
	"github.com/ductus/ductus/runtime/store"
)

// Database makes a fresh, empty database and returns how to open a backend
// on it: every call of open is another process's pool. Both register their
// cleanups with t.
type Database func(t *testing.T) (open func(t *testing.T) store.Backend)

const (
	// poll is every host's PollInterval: far beyond any test's wait.
	poll = 10 * time.Minute
	// wait bounds every wake-up the tests wait for: far below poll, and
	// far above any backend's signal latency (MySQL polls every 25 ms).
	wait = 20 * time.Second
	// quietFor is how long a test listens to be sure no signal comes:
	// several of MySQL's signal polls.
	quietFor = 300 * time.Millisecond
)

// Run runs every test.
func Run(t *testing.T, db Database) {
	t.Run("AskBetweenWorkerProcesses", func(t *testing.T) { askBetweenWorkers(t, db(t)) })
	t.Run("TellBetweenWorkerProcesses", func(t *testing.T) { tellBetweenWorkers(t, db(t)) })
	t.Run("TellTxSignalsAfterCommit", func(t *testing.T) { tellTxSignalsAfterCommit(t, db(t)) })
	t.Run("NotifierDebounced", func(t *testing.T) { notifierDebounced(t, db(t)) })
	t.Run("NotifierAcrossPools", func(t *testing.T) { notifierAcrossPools(t, db(t)) })
}

// askBetweenWorkerProcesses: an actor cached in process B (its lease held,
// idle) is asked from process A, which has free workers of its own. A
// cannot claim it, so A must wake B; B's answer must wake A's waiter.
func askBetweenWorkers(t *testing.T, open func(t *testing.T) store.Backend) {
	ctx := testutil.Context(t)
	b := newHost(t, open(t), false)
	r := actor.Ref{Type: counterType, ID: "asked"}
	if n, err := actor.AskAs[int](ctx, b, r, "add", 1); err != nil || n != 1 {
		t.Fatalf("first Ask in B = %d, %v", n, err)
	}
	ownedBy(t, b, r, b.ID())
	a := newHost(t, open(t), false) // after B holds the actor: A cannot claim it first
	for i := 2; i <= 4; i++ {
		n, err := actor.AskAs[int](ctx, a, r, "add", 1, actor.AskTimeout(wait))
		if err != nil || n != i {
			t.Fatalf("Ask %d from A to the actor B holds = %d, %v (want %d: B must be woken, not polled)", i, n, err, i)
		}
	}
	ownedBy(t, b, r, b.ID()) // B answered: the lease never moved
}

// tellBetweenWorkerProcesses: the same with Tells, whose only wake-up is
// the debounced notifier's.
func tellBetweenWorkers(t *testing.T, open func(t *testing.T) store.Backend) {
	ctx := testutil.Context(t)
	b := newHost(t, open(t), false)
	r := actor.Ref{Type: counterType, ID: "told"}
	if _, err := actor.AskAs[int](ctx, b, r, "add", 1); err != nil {
		t.Fatal(err)
	}
	ownedBy(t, b, r, b.ID())
	a := newHost(t, open(t), false)
	for i := 0; i < 3; i++ {
		if _, err := a.Tell(ctx, r, "add", 1); err != nil {
			t.Fatal(err)
		}
	}
	testutil.Eventually(t, wait, "B to run the Tells from A", func() bool { return count(t, b, r) == 4 })
	ownedBy(t, b, r, b.ID())
}

// tellTxSignalsAfterCommit: TellTx inside a caller's transaction wakes no
// other process before the caller commits; Notify after the commit does.
func tellTxSignalsAfterCommit(t *testing.T, open func(t *testing.T) store.Backend) {
	ctx := testutil.Context(t)
	a := newHost(t, open(t), true) // no workers: only others can run it
	other := open(t)
	ch := listen(t, other)
	syncListener(t, other, ch)
	b := newHost(t, other, false) // a worker process, woken only by signals

	tx, err := a.Backend().Begin(ctx, store.TxOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = tx.Rollback(context.Background()) }()
	r := actor.Ref{Type: counterType, ID: "in-tx"}
	_, pks, err := a.TellTx(ctx, tx, []actor.Envelope{{Ref: r, Message: "add", Args: 1}})
	if err != nil || len(pks) != 1 {
		t.Fatalf("TellTx = %v, %v", pks, err)
	}
	quiet(t, ch, "before the caller's commit")
	if err := tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	quiet(t, ch, "after the commit, before Notify")
	a.Notify(pks)
	waitFor(t, ch, "work after Notify", func(s store.Signal) bool { return s.Work })
	testutil.Eventually(t, wait, "a worker process to run the committed message", func() bool { return count(t, b, r) == 1 })
}

// notifierDebounced: a burst of Tells from a process without workers
// costs at most two notifications (one in flight, one owed), none of them
// on a Tell's path, and they wake a worker process that polls only every
// ten minutes.
func notifierDebounced(t *testing.T, open func(t *testing.T) store.Backend) {
	ctx := testutil.Context(t)
	be := open(t)
	n, ok := be.(store.Notifier)
	if !ok {
		t.Fatalf("%s is not a store.Notifier", be.Name())
	}
	gate := &gatedNotifier{Backend: be, n: n, release: make(chan struct{})}
	a := newHost(t, gate, true)
	b := newHost(t, open(t), false)

	const senders, each = 10, 10
	var wg sync.WaitGroup
	errs := make(chan error, senders)
	for i := 0; i < senders; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			for j := 0; j < each; j++ {
				// The first notification is held until every Tell has
				// returned: no Tell waits for it.
				if _, err := a.Tell(ctx, actor.Ref{Type: counterType, ID: string(rune('a' + i))}, "add", 1); err != nil {
					errs <- err
					return
				}
			}
		}(i)
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	close(gate.release)
	testutil.Eventually(t, wait, "the worker process to run every Tell", func() bool {
		total := 0
		for i := 0; i < senders; i++ {
			total += count(t, b, actor.Ref{Type: counterType, ID: string(rune('a' + i))})
		}
		return total == senders*each
	})
	if c := gate.calls.Load(); c < 1 || c > 2 {
		t.Fatalf("%d Tells sent %d notifications, want 1 or 2", senders*each, c)
	}
}

// notifierAcrossPools: Notify's work, done and broadcast signals reach a
// listener on another pool.
func notifierAcrossPools(t *testing.T, open func(t *testing.T) store.Backend) {
	ctx := testutil.Context(t)
	sender, other := open(t), open(t)
	ch := listen(t, other)
	syncListener(t, other, ch)
	n := sender.(store.Notifier)
	if err := n.Notify(ctx, store.Signal{Done: []int64{7, 9}}); err != nil {
		t.Fatal(err)
	}
	got := map[int64]bool{}
	waitFor(t, ch, "done 7 and 9", func(s store.Signal) bool {
		for _, id := range s.Done {
			got[id] = true
		}
		return got[7] && got[9]
	})
	if err := n.Notify(ctx, store.Signal{Work: true}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, ch, "work", func(s store.Signal) bool { return s.Work })
	if err := n.Notify(ctx, store.Signal{Broadcast: true}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, ch, "broadcast", func(s store.Signal) bool { return s.Broadcast })
}

// gatedNotifier counts Notify calls and holds the first until release.
type gatedNotifier struct {
	store.Backend
	n       store.Notifier
	calls   atomic.Int64
	release chan struct{}
}

func (g *gatedNotifier) Notify(ctx context.Context, s store.Signal) error {
	if g.calls.Add(1) == 1 {
		select {
		case <-g.release:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	return g.n.Notify(ctx, s)
}

const counterType = "wakeup.counter"

type counter struct {
	N int `json:"n"`
}

func registry() *actor.Registry {
	reg := actor.NewRegistry()
	reg.MustRegister(&actor.Type[counter]{
		Name: counterType,
		Messages: map[string]actor.Handler[counter]{
			"add": actor.Message(func(c *actor.Context, s *counter, n int) (int, error) {
				s.N += n
				return s.N, nil
			}),
		},
	})
	return reg
}

// newHost starts a process whose safety-net poll never comes during a
// test and whose idle activations stay cached (their leases held).
func newHost(t *testing.T, be store.Backend, noWorkers bool) *host.Host {
	t.Helper()
	cfg := host.Config{Backend: be, Registry: registry(), Workers: 2, NoWorkers: noWorkers,
		PollInterval: poll, IdleTimeout: poll, AskTimeout: wait, Logger: testutil.Logger()}
	if noWorkers {
		cfg.Workers = 0
	}
	h, err := host.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := h.Start(testutil.Context(t)); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = h.Shutdown(context.Background()) })
	return h
}

// count reads an actor's committed counter (0 when it does not exist).
func count(t *testing.T, h *host.Host, r actor.Ref) int {
	t.Helper()
	info, err := h.Backend().ActorGet(testutil.Context(t), r)
	if err != nil || info.State == nil {
		return 0
	}
	var c counter
	if err := json.Unmarshal(info.State, &c); err != nil {
		t.Fatal(err)
	}
	return c.N
}

func ownedBy(t *testing.T, h *host.Host, r actor.Ref, owner string) {
	t.Helper()
	info, err := h.Backend().ActorGet(testutil.Context(t), r)
	if err != nil {
		t.Fatal(err)
	}
	if info.LeaseOwner != owner {
		t.Fatalf("%s is leased by %q, want %q", r, info.LeaseOwner, owner)
	}
}

// listen starts be's Listen and returns its signals.
func listen(t *testing.T, be store.Backend) <-chan store.Signal {
	t.Helper()
	sig, ok := be.(store.Signaler)
	if !ok {
		t.Fatalf("%s is not a store.Signaler", be.Name())
	}
	ctx, cancel := context.WithCancel(context.Background())
	ch := make(chan store.Signal, 256)
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = sig.Listen(ctx, func(s store.Signal) {
			select {
			case ch <- s:
			default:
			}
		})
	}()
	t.Cleanup(func() { cancel(); <-done })
	return ch
}

// syncListener returns once the listener hears signals (it may start after
// Listen returns), with everything heard so far drained.
func syncListener(t *testing.T, be store.Backend, ch <-chan store.Signal) {
	t.Helper()
	n := be.(store.Notifier)
	deadline := time.Now().Add(wait)
	for heard := false; !heard; {
		if time.Now().After(deadline) {
			t.Fatal("the listener never heard a probe")
		}
		if err := n.Notify(testutil.Context(t), store.Signal{Work: true}); err != nil {
			t.Fatal(err)
		}
		select {
		case <-ch:
			heard = true
		case <-time.After(200 * time.Millisecond):
		}
	}
	for {
		select {
		case <-ch:
		case <-time.After(quietFor):
			return
		}
	}
}

func quiet(t *testing.T, ch <-chan store.Signal, when string) {
	t.Helper()
	select {
	case s := <-ch:
		t.Fatalf("a signal %+v arrived %s", s, when)
	case <-time.After(quietFor):
	}
}

func waitFor(t *testing.T, ch <-chan store.Signal, what string, match func(store.Signal) bool) {
	t.Helper()
	deadline := time.After(wait)
	for {
		select {
		case s := <-ch:
			if match(s) {
				return
			}
		case <-deadline:
			t.Fatalf("no %s signal within %s", what, wait)
		}
	}
}
