package scenariotest

import (
	"errors"
	"testing"
	"time"

	"github.com/ductus/ductus/internal/testutil"

	"github.com/ductus/ductus/actor"
	"github.com/ductus/ductus/runtime/host"
	"github.com/ductus/ductus/runtime/store"
)

func init() {
	scenario("RetryThenSucceedKeepsOrder", func(t *testing.T, be store.Backend) {
		hk := &hooks{}
		hk.failTag(2, 2) // fails twice, succeeds on the third attempt
		h := newHost(t, be, ledgerRegistry(hk))
		ctx := testutil.Context(t)
		for i := 1; i <= 4; i++ {
			if _, err := h.Tell(ctx, lref("r"), "add", addArgs{N: 1, Tag: int64(i)}); err != nil {
				t.Fatal(err)
			}
		}
		testutil.Eventually(t, 10*time.Second, "all four", func() bool { return storedLedger(t, be, lref("r")).N == 4 })
		l := getLedger(t, h, lref("r"))
		if len(l.Applied) != 4 || l.Applied[1] != 2 || l.Applied[2] != 3 {
			t.Fatalf("applied %v: a retrying message must block the later ones", l.Applied)
		}
		if l.N != 4 {
			t.Fatalf("n = %d: a failed attempt's state change leaked", l.N)
		}
	})

	scenario("PoisonDeadLettersAndUnblocks", func(t *testing.T, be store.Backend) {
		h := newHost(t, be, ledgerRegistry(&hooks{}))
		ctx := testutil.Context(t)
		_, err := h.Ask(ctx, lref("p"), "poison", nil)
		var dl *actor.DeadLetterError
		if !errors.As(err, &dl) || !errors.Is(err, actor.ErrDeadLetter) || !contains(dl.Reason, "poison pill") {
			t.Fatalf("ask of a poison message: %v", err)
		}
		if n, err := actor.AskAs[int](ctx, h, lref("p"), "add", addArgs{N: 1}); err != nil || n != 1 {
			t.Fatalf("the message after the dead one: %d, %v", n, err)
		}
		list, err := h.DeadLetters(ctx, host.DeadLetterQuery{Type: ledgerType, Limit: 10})
		if err != nil || len(list) != 1 || list[0].Attempts != 3 || list[0].Name != "poison" {
			t.Fatalf("dead letters = %+v, %v", list, err)
		}
		// Retry goes to the tail: it runs after a message told meanwhile.
		if _, err := h.Tell(ctx, lref("p"), "add", addArgs{N: 1, Tag: 7}); err != nil {
			t.Fatal(err)
		}
		newID, err := h.RetryDeadLetter(ctx, list[0].Message)
		if err != nil || newID == list[0].Message {
			t.Fatalf("retry = %d, %v", newID, err)
		}
		testutil.Eventually(t, 10*time.Second, "the retried copy to die again", func() bool {
			st, _ := be.MessageStatus(ctx, []int64{int64(newID)})
			return st[0].State == store.MessageDead
		})
		if l := getLedger(t, h, lref("p")); l.N != 2 {
			t.Fatalf("n = %d", l.N)
		}
	})

	scenario("PanicIsAFailure", func(t *testing.T, be store.Backend) {
		h := newHost(t, be, ledgerRegistry(&hooks{}))
		_, err := h.Ask(testutil.Context(t), lref("x"), "panic", nil)
		if !errors.Is(err, actor.ErrDeadLetter) || !contains(err.Error(), "panicked on purpose") {
			t.Fatalf("ask of a panicking handler: %v", err)
		}
	})

	scenario("QueryMustNotMutate", func(t *testing.T, be store.Backend) {
		h := newHost(t, be, ledgerRegistry(&hooks{}))
		// Also asked from a process that runs nothing, which knows the
		// cause only from the stored dead letter.
		remote := newHost(t, be, ledgerRegistry(&hooks{}), func(c *host.Config) { c.NoWorkers = true })
		ctx := testutil.Context(t)
		if _, err := h.Ask(ctx, lref("q"), "add", addArgs{N: 5}); err != nil {
			t.Fatal(err)
		}
		for _, c := range []actor.Client{h, remote} {
			_, err := c.Ask(ctx, lref("q"), "mutating_query", nil)
			if !errors.Is(err, actor.ErrDeadLetter) || !errors.Is(err, actor.ErrQueryMutated) {
				t.Fatalf("mutating query: %v, want a dead letter caused by ErrQueryMutated", err)
			}
		}
		if l := getLedger(t, h, lref("q")); l.N != 5 {
			t.Fatalf("n = %d: the query's change was kept", l.N)
		}
	})

	scenario("PauseResumeSkip", func(t *testing.T, be store.Backend) {
		hk := &hooks{}
		hk.failTag(1, 1000) // a head that never succeeds within the test
		h := newHost(t, be, ledgerRegistry(hk), func(c *host.Config) { c.Retry.MaxAttempts = 1000 })
		ctx := testutil.Context(t)
		if _, err := h.Tell(ctx, lref("s"), "add", addArgs{N: 1}); err != nil {
			t.Fatal(err)
		}
		testutil.Eventually(t, 10*time.Second, "the actor to exist", func() bool { return storedLedger(t, be, lref("s")).N == 1 })
		if ok, err := h.Pause(ctx, lref("s")); !ok || err != nil {
			t.Fatalf("pause = %v, %v", ok, err)
		}
		id, _ := h.Tell(ctx, lref("s"), "add", addArgs{N: 1})
		time.Sleep(200 * time.Millisecond)
		if st, _ := be.MessageStatus(ctx, []int64{int64(id)}); st[0].State != store.MessagePending {
			t.Fatalf("a paused actor ran a message: %s", st[0].State)
		}
		if _, err := h.Resume(ctx, lref("s")); err != nil {
			t.Fatal(err)
		}
		testutil.Eventually(t, 10*time.Second, "the resumed actor", func() bool { return storedLedger(t, be, lref("s")).N == 2 })
		// A stuck head: pause, skip it, resume; the next one runs.
		stuck, _ := h.Tell(ctx, lref("s"), "add", addArgs{N: 1, Tag: 1})
		next, _ := h.Tell(ctx, lref("s"), "add", addArgs{N: 1, Tag: 2})
		time.Sleep(100 * time.Millisecond)
		if _, err := h.Pause(ctx, lref("s")); err != nil {
			t.Fatal(err)
		}
		var skipped actor.MessageID
		testutil.Eventually(t, 10*time.Second, "the head to be skippable", func() bool {
			var err error
			skipped, err = h.SkipHead(ctx, lref("s"), "operator test")
			return err == nil
		})
		if skipped != stuck {
			t.Fatalf("skipped %d, want the stuck head %d", skipped, stuck)
		}
		if _, err := h.Resume(ctx, lref("s")); err != nil {
			t.Fatal(err)
		}
		testutil.Eventually(t, 10*time.Second, "the message after the skipped head", func() bool {
			st, _ := be.MessageStatus(ctx, []int64{int64(next)})
			return st[0].State == store.MessageCompleted
		})
	})
}
