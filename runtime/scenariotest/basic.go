package scenariotest

import (
	"encoding/json"
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

func init() {
	scenario("TellAskInOrder", func(t *testing.T, be store.Backend) {
		h := newHost(t, be, ledgerRegistry(&hooks{}))
		ctx := testutil.Context(t)
		r := lref("a")
		for i := 1; i <= 300; i++ {
			if _, err := h.Tell(ctx, r, "add", addArgs{N: 1, Tag: int64(i)}); err != nil {
				t.Fatal(err)
			}
		}
		n, err := actor.AskAs[int](ctx, h, r, "add", addArgs{N: 1})
		if err != nil || n != 301 {
			t.Fatalf("ask = %d, %v; want 301", n, err)
		}
		l := getLedger(t, h, r)
		for i, tag := range l.Applied {
			if tag != int64(i+1) {
				t.Fatalf("applied out of order at %d: %v", i, l.Applied[max(0, i-3):i+1])
			}
		}
	})

	scenario("ConcurrentTellsOneActor", func(t *testing.T, be store.Backend) {
		h := newHost(t, be, ledgerRegistry(&hooks{}))
		ctx := testutil.Context(t)
		const goroutines, each = 8, 50
		var wg sync.WaitGroup
		errs := make(chan error, goroutines)
		for g := 0; g < goroutines; g++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := 0; i < each; i++ {
					if _, err := h.Tell(ctx, lref("hot"), "add", addArgs{N: 1}); err != nil {
						errs <- err
						return
					}
				}
			}()
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			t.Fatalf("tell: %v", err)
		}
		testutil.Eventually(t, 30*time.Second, "all increments", func() bool { return getLedger(t, h, lref("hot")).N == goroutines*each })
		info, err := h.Actor(ctx, lref("hot"))
		if err != nil || info.Unfinished != 0 {
			t.Fatalf("actor = %+v, %v", info, err)
		}
	})
	concurrent["ConcurrentTellsOneActor"] = true

	scenario("ManyActorsManyHosts", func(t *testing.T, be store.Backend) {
		// Two hosts on one database share the actors; every message is
		// applied exactly once per committed turn, in order.
		reg := func() *actor.Registry { return ledgerRegistry(&hooks{}) }
		h1 := newHost(t, be, reg())
		h2 := newHost(t, be, reg())
		ctx := testutil.Context(t)
		const actors, each = 20, 30
		var batch []actor.Envelope
		for i := 1; i <= each; i++ {
			for a := 0; a < actors; a++ {
				batch = append(batch, actor.Envelope{Ref: lref(fmt.Sprintf("m%02d", a)), Message: "add", Args: addArgs{N: 1, Tag: int64(i)}})
			}
		}
		if _, err := h1.TellBatch(ctx, batch[:len(batch)/2]); err != nil {
			t.Fatal(err)
		}
		if _, err := h2.TellBatch(ctx, batch[len(batch)/2:]); err != nil {
			t.Fatal(err)
		}
		for a := 0; a < actors; a++ {
			r := lref(fmt.Sprintf("m%02d", a))
			testutil.Eventually(t, 30*time.Second, "actor "+r.ID, func() bool { return getLedger(t, h1, r).N == each })
			l := getLedger(t, h2, r)
			for i, tag := range l.Applied {
				if tag != int64(i+1) {
					t.Fatalf("%s applied %v", r.ID, l.Applied)
				}
			}
		}
	})
	concurrent["ManyActorsManyHosts"] = true

	scenario("TellBatchAllOrNothing", func(t *testing.T, be store.Backend) {
		h := newHost(t, be, ledgerRegistry(&hooks{}))
		ctx := testutil.Context(t)
		_, err := h.TellBatch(ctx, []actor.Envelope{
			{Ref: lref("b1"), Message: "add", Args: addArgs{N: 1}},
			{Ref: lref("b2"), Message: "no_such_message"},
		})
		if !errors.Is(err, actor.ErrUnknownMessage) {
			t.Fatalf("err = %v, want ErrUnknownMessage", err)
		}
		if _, err := be.ActorGet(ctx, lref("b1")); !errors.Is(err, actor.ErrNotFound) {
			t.Fatalf("a refused batch wrote b1: %v", err)
		}
		ids, err := h.TellBatch(ctx, []actor.Envelope{
			{Ref: lref("b1"), Message: "add", Args: addArgs{N: 1}},
			{Ref: lref("b2"), Message: "add", Args: addArgs{N: 2}},
			{Ref: lref("b1"), Message: "add", Args: addArgs{N: 3}},
		})
		if err != nil || len(ids) != 3 || ids[0] == ids[2] {
			t.Fatalf("batch = %v, %v", ids, err)
		}
		testutil.Eventually(t, 10*time.Second, "the batch", func() bool { return getLedger(t, h, lref("b1")).N == 4 && getLedger(t, h, lref("b2")).N == 2 })
	})

	scenario("IdempotencyKey", func(t *testing.T, be store.Backend) {
		h := newHost(t, be, ledgerRegistry(&hooks{}))
		ctx := testutil.Context(t)
		a, err := h.Tell(ctx, lref("i"), "add", addArgs{N: 5}, actor.WithIdempotencyKey("order-42"))
		if err != nil {
			t.Fatal(err)
		}
		b, err := h.Tell(ctx, lref("i"), "add", addArgs{N: 5}, actor.WithIdempotencyKey("order-42"))
		if err != nil || b != a {
			t.Fatalf("repeat = %d, %v; want %d", b, err, a)
		}
		if l := getLedger(t, h, lref("i")); l.N != 5 {
			t.Fatalf("n = %d: the repeat ran", l.N)
		}
	})

	scenario("AvailableAtDelays", func(t *testing.T, be store.Backend) {
		h := newHost(t, be, ledgerRegistry(&hooks{}))
		ctx := testutil.Context(t)
		now, _ := be.Now(ctx)
		id, err := h.Tell(ctx, lref("d"), "add", addArgs{N: 1}, actor.AvailableAt(now.Add(400*time.Millisecond)))
		if err != nil {
			t.Fatal(err)
		}
		time.Sleep(150 * time.Millisecond)
		if st, _ := be.MessageStatus(ctx, []int64{int64(id)}); st[0].State != store.MessagePending {
			t.Fatalf("a delayed message ran early: %s", st[0].State)
		}
		testutil.Eventually(t, 10*time.Second, "the delayed message", func() bool {
			st, _ := be.MessageStatus(ctx, []int64{int64(id)})
			return st[0].State == store.MessageCompleted
		})
	})

	scenario("AskTimeoutLeavesMessageQueued", func(t *testing.T, be store.Backend) {
		reg := ledgerRegistry(&hooks{})
		client := newHost(t, be, reg, func(c *host.Config) { c.NoWorkers = true })
		ctx := testutil.Context(t)
		_, err := client.Ask(ctx, lref("t"), "add", addArgs{N: 7}, actor.AskTimeout(100*time.Millisecond))
		if !errors.Is(err, actor.ErrAskTimeout) {
			t.Fatalf("err = %v, want ErrAskTimeout", err)
		}
		worker := newHost(t, be, ledgerRegistry(&hooks{}))
		testutil.Eventually(t, 10*time.Second, "the message to run after the timeout", func() bool { return getLedger(t, worker, lref("t")).N == 7 })
	})

	scenario("OnActivateAndOnDeactivate", func(t *testing.T, be store.Backend) {
		var deactivated sync.WaitGroup
		deactivated.Add(1)
		var once sync.Once
		def := &actor.Type[ledger]{
			Name: "scenario.hooked",
			OnActivate: func(c *actor.Context, s *ledger) error {
				if s.Status == "" {
					s.Status = "activated"
				}
				return nil
			},
			OnDeactivate: func(c *actor.Context, s *ledger) {
				s.Status = "deactivated: not persisted"
				once.Do(deactivated.Done)
			},
			Messages: map[string]actor.Handler[ledger]{
				"get": actor.Query(func(c *actor.Context, s *ledger, _ struct{}) (ledger, error) { return *s, nil }),
				"add": actor.Message(func(c *actor.Context, s *ledger, n int) (int, error) { s.N += n; return s.N, nil }),
			},
		}
		reg := actor.NewRegistry()
		reg.MustRegister(def)
		h := newHost(t, be, reg, func(c *host.Config) { c.IdleTimeout = 100 * time.Millisecond; c.RenewEvery = 50 * time.Millisecond })
		ctx := testutil.Context(t)
		r := actor.Ref{Type: "scenario.hooked", ID: "x"}
		l, err := actor.AskAs[ledger](ctx, h, r, "get", nil)
		if err != nil || l.Status != "activated" {
			t.Fatalf("get = %+v, %v", l, err)
		}
		// A query does not change state, but the activation's change is
		// persisted with the commit anyway.
		info, _ := h.Actor(ctx, r)
		if string(info.State) == "" || !contains(string(info.State), "activated") {
			t.Fatalf("OnActivate's change was not persisted with the next commit: %s", info.State)
		}
		deactivated.Wait() // the idle timeout evicts it
		l, _ = actor.AskAs[ledger](ctx, h, r, "get", nil)
		if l.Status != "activated" {
			t.Fatalf("OnDeactivate's change was persisted: %+v", l)
		}
	})

	scenario("GracefulShutdownReleasesLeases", func(t *testing.T, be store.Backend) {
		reg := ledgerRegistry(&hooks{})
		h, err := host.New(host.Config{Backend: be, Registry: reg, LeaseTTL: time.Hour, PollInterval: 20 * time.Millisecond, Logger: testutil.Logger()})
		if err != nil {
			t.Fatal(err)
		}
		ctx := testutil.Context(t)
		if err := h.Start(ctx); err != nil {
			t.Fatal(err)
		}
		if _, err := h.Ask(ctx, lref("s"), "add", addArgs{N: 1}); err != nil {
			t.Fatal(err)
		}
		if err := h.Shutdown(ctx); err != nil {
			t.Fatal(err)
		}
		if info, _ := be.ActorGet(ctx, lref("s")); info.LeaseOwner != "" {
			t.Fatalf("lease still held after shutdown: %+v", info)
		}
		procs, _ := be.ProcessList(ctx)
		if len(procs) != 1 || procs[0].StoppedAt.IsZero() {
			t.Fatalf("process row = %+v", procs)
		}
		// Another host takes the actor at once, not after the hour-long lease.
		h2 := newHost(t, be, ledgerRegistry(&hooks{}))
		n, err := actor.AskAs[int](ctx, h2, lref("s"), "add", addArgs{N: 1}, actor.AskTimeout(10*time.Second))
		if err != nil || n != 2 {
			t.Fatalf("after shutdown: %d, %v", n, err)
		}
	})

	scenario("FairnessHotActorYields", func(t *testing.T, be store.Backend) {
		reg := ledgerRegistry(&hooks{})
		client := newHost(t, be, reg, func(c *host.Config) { c.NoWorkers = true })
		ctx := testutil.Context(t)
		var batch []actor.Envelope
		for i := 0; i < 3000; i++ {
			batch = append(batch, actor.Envelope{Ref: lref("hot"), Message: "add", Args: addArgs{N: 1}})
		}
		if _, err := client.TellBatch(ctx, batch); err != nil {
			t.Fatal(err)
		}
		coldID, err := client.Tell(ctx, lref("cold"), "add", addArgs{N: 1})
		if err != nil {
			t.Fatal(err)
		}
		// One worker, small passes: the cold actor must not wait for the
		// whole hot backlog.
		w := newHost(t, be, ledgerRegistry(&hooks{}), func(c *host.Config) { c.Workers = 1; c.PassMessages = 100; c.BatchSize = 50 })
		testutil.Eventually(t, 30*time.Second, "the cold actor", func() bool {
			st, _ := be.MessageStatus(ctx, []int64{int64(coldID)})
			return st[0].State == store.MessageCompleted
		})
		// Read the hot actor's committed state directly: an Ask would queue
		// behind its backlog.
		if hot := storedLedger(t, be, lref("hot")).N; hot >= 3000 {
			t.Fatalf("the hot actor finished (%d) before the cold one ran: no fairness yield", hot)
		}
		testutil.Eventually(t, 60*time.Second, "the hot backlog", func() bool { return storedLedger(t, be, lref("hot")).N == 3000 })
		_ = w
	})
}

// storedLedger reads an actor's committed state from the store.
func storedLedger(t *testing.T, be store.Backend, r actor.Ref) ledger {
	t.Helper()
	info, err := be.ActorGet(testutil.Context(t), r)
	if errors.Is(err, actor.ErrNotFound) {
		return ledger{}
	}
	if err != nil {
		t.Fatalf("actor %s: %v", r, err)
	}
	var l ledger
	if info.State != nil {
		if err := json.Unmarshal(info.State, &l); err != nil {
			t.Fatal(err)
		}
	}
	return l
}

func contains(s, sub string) bool {
	for i := 0; i+len(sub) <= len(s); i++ {
		if s[i:i+len(sub)] == sub {
			return true
		}
	}
	return false
}
