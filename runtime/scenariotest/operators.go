package scenariotest

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/ductus/ductus/internal/testutil"

	"github.com/ductus/ductus/actor"
	"github.com/ductus/ductus/runtime/host"
	"github.com/ductus/ductus/runtime/store"
)

// deadLetterOf asks a message that dead-letters and returns its ID.
func deadLetterOf(t *testing.T, h *host.Host, ctx context.Context, r actor.Ref, message string) actor.MessageID {
	t.Helper()
	_, err := h.Ask(ctx, r, message, nil)
	var dl *actor.DeadLetterError
	if !errors.As(err, &dl) {
		t.Fatalf("%s %s: %v, want a dead letter", r, message, err)
	}
	return dl.MessageID
}

// operatorHost runs ledgers and outboxes, with an "ordered" effect.
func operatorHost(t *testing.T, be store.Backend, mod ...func(*host.Config)) *host.Host {
	sk := newSink()
	return newHost(t, be, ledgerRegistry(&hooks{}, outboxDef(), alarmDef()), append([]func(*host.Config){func(c *host.Config) {
		c.Effects = map[string]host.Effect{
			"ordered":   {Handler: host.EffectFunc(sk.handler), Ordered: true},
			"unordered": {Handler: host.EffectFunc(sk.handler)},
		}
	}}, mod...)...)
}

func init() {
	scenario("DeadLetterInspectAndDiscard", func(t *testing.T, be store.Backend) {
		h := operatorHost(t, be)
		ctx := testutil.Context(t)
		id := deadLetterOf(t, h, ctx, lref("dl"), "poison")
		d, err := h.DeadLetter(ctx, id)
		if err != nil || d.Ref != lref("dl") || d.Name != "poison" || !contains(d.Error, "poison pill") || d.Attempts != 3 || d.DeadAt.IsZero() {
			t.Fatalf("dead letter = %+v, %v", d, err)
		}
		list, err := h.DeadLetters(ctx, host.DeadLetterQuery{Type: ledgerType, Limit: 10})
		if err != nil || len(list) != 1 || list[0].Message != id {
			t.Fatalf("dead letters = %+v, %v", list, err)
		}
		if ok, err := h.DiscardDeadLetter(ctx, id); !ok || err != nil {
			t.Fatalf("discard = %v, %v", ok, err)
		}
		if _, err := h.DeadLetter(ctx, id); !errors.Is(err, actor.ErrNotFound) {
			t.Fatalf("a discarded dead letter: %v", err)
		}
		if ok, err := h.DiscardDeadLetter(ctx, id); ok || err != nil {
			t.Fatalf("discarding it again = %v, %v", ok, err)
		}
		if list, _ := h.DeadLetters(ctx, host.DeadLetterQuery{Type: ledgerType, Limit: 10}); len(list) != 0 {
			t.Fatalf("dead letters after the discard: %+v", list)
		}
	})

	scenario("OperatorCallsCheckThePolicyFirst", operatorPolicyScenario)

	scenario("DirectoryPendingWorkAndLease", func(t *testing.T, be store.Backend) {
		h := operatorHost(t, be, func(c *host.Config) { c.IdleTimeout = time.Minute })
		ctx := testutil.Context(t)
		if _, err := h.Ask(ctx, lref("held"), "add", addArgs{N: 1}); err != nil {
			t.Fatal(err)
		}
		held, err := h.Actor(ctx, lref("held"))
		if err != nil || held.LeaseOwner != h.ID() || !held.LeaseExpires.After(time.Now().Add(-time.Second)) || held.Unfinished != 0 || held.Paused {
			t.Fatalf("a cached actor: %+v, %v; want its lease held by this host and nothing pending", held, err)
		}
		if _, err := h.Ask(ctx, lref("waiting"), "add", addArgs{N: 1}); err != nil {
			t.Fatal(err)
		}
		if _, err := h.Pause(ctx, lref("waiting")); err != nil {
			t.Fatal(err)
		}
		before := time.Now().Add(-time.Second)
		for i := 0; i < 2; i++ {
			if _, err := h.Tell(ctx, lref("waiting"), "add", addArgs{N: 1}); err != nil {
				t.Fatal(err)
			}
		}
		list, err := h.Actors(ctx, host.ActorQuery{Type: ledgerType, Limit: 10})
		if err != nil || len(list) != 2 {
			t.Fatalf("directory = %+v, %v", list, err)
		}
		w := list[1]
		if w.Ref != lref("waiting") || !w.Paused || w.Unfinished != 2 || w.HeadDue.Before(before) || w.HeadDue.After(time.Now().Add(time.Second)) {
			t.Fatalf("a paused actor with two messages: %+v", w)
		}
	})

	scenario("QuietActorsHaveNoReminders", func(t *testing.T, be store.Backend) {
		h := operatorHost(t, be, func(c *host.Config) { c.IdleTimeout = 20 * time.Millisecond; c.RenewEvery = 10 * time.Millisecond })
		ctx := testutil.Context(t)
		if _, err := h.Ask(ctx, aref("plain"), "cancel", "none"); err != nil {
			t.Fatal(err)
		}
		if _, err := h.Ask(ctx, aref("alarmed"), "every", 3_600_000); err != nil {
			t.Fatal(err)
		}
		time.Sleep(300 * time.Millisecond)
		quiet, err := h.Actors(ctx, host.ActorQuery{Type: "scenario.alarm", Quiet: 100 * time.Millisecond})
		if err != nil || len(quiet) != 1 || quiet[0].Ref != aref("plain") {
			t.Fatalf("quiet actors = %+v, %v; want only the one without a reminder", quiet, err)
		}
	})

	scenario("PruneEffectsOutboxAndBroadcasts", func(t *testing.T, be store.Backend) {
		h := operatorHost(t, be)
		ctx := testutil.Context(t)
		for i := 1; i <= 3; i++ {
			if _, err := h.Ask(ctx, oref("pr"), "emit_unordered", emitArgs{Key: "pr", Seq: i}); err != nil {
				t.Fatal(err)
			}
			if _, err := h.Ask(ctx, lref("pr"), "add", addArgs{N: 1}); err != nil { // a broadcast of count
				t.Fatal(err)
			}
		}
		if _, err := h.Ask(ctx, oref("pr"), "emit", emitArgs{Key: "pr", Seq: 9, Fatal: true}); err != nil {
			t.Fatal(err)
		}
		if _, err := h.Ask(ctx, aref("pr"), "relay", map[string]any{"to": []string{"d1", "d2", "d3"}, "n": 1}); err != nil {
			t.Fatal(err)
		}
		testutil.Eventually(t, 10*time.Second, "three done effects, a dead one and three sends", func() bool {
			done, _ := h.Effects(ctx, host.EffectQuery{State: host.EffectDone, Type: "scenario.outbox"})
			dead, _ := h.Effects(ctx, host.EffectQuery{State: host.EffectDead, Type: "scenario.outbox"})
			n := 0
			for _, d := range []string{"d1", "d2", "d3"} {
				if a, err := be.ActorGet(ctx, aref(d)); err == nil && a.Unfinished == 0 && a.State != nil {
					n++
				}
			}
			return len(done) == 3 && len(dead) == 1 && n == 3
		})
		time.Sleep(100 * time.Millisecond)
		// Bounded batches: one row per table per call.
		res, err := be.Prune(ctx, &store.PruneParams{Keep: 50 * time.Millisecond, Limit: 1})
		if err != nil || res.Messages != 1 || res.Effects != 1 || res.Outbox != 1 || res.Broadcasts != 1 {
			t.Fatalf("prune with a limit of 1 = %+v, %v", res, err)
		}
		res, err = be.Prune(ctx, &store.PruneParams{Keep: 50 * time.Millisecond, Limit: 1000})
		if err != nil || res.Effects != 2 || res.Outbox != 2 || res.Broadcasts != 2 {
			t.Fatalf("prune = %+v, %v; want the other 2 done effects, 2 delivered sends and 2 broadcasts", res, err)
		}
		if dead, _ := h.Effects(ctx, host.EffectQuery{State: host.EffectDead, Type: "scenario.outbox"}); len(dead) != 1 {
			t.Fatalf("pruning removed a dead effect, which is kept for inspection: %+v", dead)
		}
		if l := getLedger(t, h, lref("pr")); l.N != 3 {
			t.Fatalf("pruning history changed state: %+v", l)
		}
	})
}

// operatorPolicyScenario checks that every operator call passes the
// administration policy before it reads anything: a refused caller learns
// nothing from an ID (the same refusal for rows that exist and rows that
// do not), and an operator whose policy hides an actor type sees that
// type's rows as missing.
func operatorPolicyScenario(t *testing.T, be store.Backend) {
	var mu sync.Mutex
	actions := map[string]bool{}
	pol := func(ctx context.Context, req actor.Request) error {
		mu.Lock()
		actions[req.Action] = true
		mu.Unlock()
		switch role, _ := req.Caller.(string); {
		case role == "admin":
			return nil
		case role == "ledger-operator" && (req.Ref.Type == "" || req.Ref.Type == ledgerType):
			return nil
		}
		return errors.New("operators only")
	}
	h := operatorHost(t, be, func(c *host.Config) { c.Policies.Administration = pol })
	ctx := testutil.Context(t)
	admin, nobody, scoped := actor.WithCaller(ctx, "admin"), actor.WithCaller(ctx, "nobody"), actor.WithCaller(ctx, "ledger-operator")
	ledgerDL := deadLetterOf(t, h, ctx, lref("pol"), "poison")
	outboxDL := deadLetterOf(t, h, ctx, oref("pol"), "emit_unknown")
	if _, err := h.Tell(ctx, oref("pol"), "emit", emitArgs{Key: "pol", Seq: 1, Fatal: true}); err != nil {
		t.Fatal(err)
	}
	var dead []host.EffectInfo
	testutil.Eventually(t, 10*time.Second, "the dead effect", func() bool {
		dead, _ = h.Effects(admin, host.EffectQuery{State: host.EffectDead})
		return len(dead) == 1
	})
	deadFx := dead[0].ID
	const missing = 1 << 40
	byID := func(id int64) []struct {
		action string
		call   func(context.Context) error
	} {
		return []struct {
			action string
			call   func(context.Context) error
		}{
			{"dead_letter.read", func(c context.Context) error { _, err := h.DeadLetter(c, actor.MessageID(id)); return err }},
			{"dead_letter.retry", func(c context.Context) error { _, err := h.RetryDeadLetter(c, actor.MessageID(id)); return err }},
			{"dead_letter.discard", func(c context.Context) error { _, err := h.DiscardDeadLetter(c, actor.MessageID(id)); return err }},
			{"effect.retry", func(c context.Context) error { _, err := h.RetryEffect(c, id); return err }},
			{"effect.discard", func(c context.Context) error { _, err := h.DiscardEffect(c, id); return err }},
		}
	}
	calls := []struct {
		action string
		call   func(context.Context) error
	}{
		{"dead_letter.list", func(c context.Context) error { _, err := h.DeadLetters(c, host.DeadLetterQuery{Limit: 10}); return err }},
		{"actor.pause", func(c context.Context) error { _, err := h.Pause(c, lref("pol")); return err }},
		{"actor.resume", func(c context.Context) error { _, err := h.Resume(c, lref("pol")); return err }},
		{"actor.skip_head", func(c context.Context) error { _, err := h.SkipHead(c, lref("pol"), "x"); return err }},
		{"actor.list", func(c context.Context) error {
			_, err := h.Actors(c, host.ActorQuery{Type: ledgerType})
			return err
		}},
		{"actor.read", func(c context.Context) error { _, err := h.Actor(c, lref("pol")); return err }},
		{"effect.list", func(c context.Context) error {
			_, err := h.Effects(c, host.EffectQuery{State: host.EffectDead})
			return err
		}},
		{"reminder.list", func(c context.Context) error {
			_, err := h.Reminders(c, host.ReminderQuery{Ref: lref("pol")})
			return err
		}},
		{"process.list", func(c context.Context) error { _, err := h.Processes(c, host.ProcessQuery{}); return err }},
		{"migration.dry_run", func(c context.Context) error { _, err := h.DryRunMigration(c, ledgerType, nil); return err }},
	}
	calls = append(calls, byID(int64(ledgerDL))...)
	calls = append(calls, byID(missing)...)
	calls = append(calls, byID(deadFx)...)
	for _, c := range calls {
		mu.Lock()
		clear(actions)
		mu.Unlock()
		if err := c.call(nobody); !errors.Is(err, actor.ErrForbidden) {
			t.Errorf("%s by a refused caller: %v, want ErrForbidden whether or not the row exists", c.action, err)
		}
		mu.Lock()
		if !actions[c.action] {
			t.Errorf("%s: the policy saw %v", c.action, actions)
		}
		mu.Unlock()
	}
	// An operator of ledgers only: another type's rows look missing, the
	// same as rows that do not exist, and stay untouched.
	for _, id := range []int64{int64(outboxDL), missing} {
		if _, err := h.DeadLetter(scoped, actor.MessageID(id)); !errors.Is(err, actor.ErrNotFound) {
			t.Errorf("dead letter %d read by a ledger operator: %v, want not found", id, err)
		}
		if _, err := h.RetryDeadLetter(scoped, actor.MessageID(id)); !errors.Is(err, actor.ErrNotFound) {
			t.Errorf("dead letter %d retried by a ledger operator: %v, want not found", id, err)
		}
		if ok, err := h.DiscardDeadLetter(scoped, actor.MessageID(id)); ok || err != nil {
			t.Errorf("dead letter %d discarded by a ledger operator: %v, %v", id, ok, err)
		}
	}
	for _, id := range []int64{deadFx, missing} {
		if _, err := h.RetryEffect(scoped, id); !errors.Is(err, actor.ErrNotFound) {
			t.Errorf("effect %d retried by a ledger operator: %v, want not found", id, err)
		}
		if ok, err := h.DiscardEffect(scoped, id); ok || err != nil {
			t.Errorf("effect %d discarded by a ledger operator: %v, %v", id, ok, err)
		}
	}
	if d, err := h.DeadLetter(admin, outboxDL); err != nil || d.Ref != oref("pol") {
		t.Fatalf("the outbox dead letter after the refusals: %+v, %v", d, err)
	}
	if d, err := h.DeadLetter(scoped, ledgerDL); err != nil || d.Ref != lref("pol") {
		t.Fatalf("a ledger dead letter read by a ledger operator: %+v, %v", d, err)
	}
	if ok, err := h.DiscardEffect(admin, deadFx); !ok || err != nil {
		t.Fatalf("the admin discarding the dead effect: %v, %v", ok, err)
	}
}
