package scenariotest

import (
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/ductus/ductus/actor"
	"github.com/ductus/ductus/internal/testutil"
	"github.com/ductus/ductus/runtime/host"
	"github.com/ductus/ductus/runtime/store"
)

func init() {
	scenario("DestroyAndFreshIncarnation", func(t *testing.T, be store.Backend) {
		var client actor.Client
		var askErr, destroyErr error
		inner := &actor.Type[ledger]{Name: "scenario.inner", Messages: map[string]actor.Handler[ledger]{
			"try": actor.Message(func(c *actor.Context, s *ledger, _ struct{}) (any, error) {
				_, askErr = client.Ask(c, lref("d"), "get", nil)
				_, destroyErr = client.Destroy(c, lref("d"))
				return nil, nil
			}),
		}}
		h := newHost(t, be, ledgerRegistry(&hooks{}, inner))
		client = h
		ctx := testutil.Context(t)
		if _, err := h.Ask(ctx, lref("d"), "add", addArgs{N: 3}); err != nil {
			t.Fatal(err)
		}
		if _, err := h.Ask(ctx, actor.Ref{Type: "scenario.inner", ID: "i"}, "try", nil); err != nil {
			t.Fatal(err)
		}
		if !errors.Is(askErr, actor.ErrActorContext) || !errors.Is(destroyErr, actor.ErrActorContext) {
			t.Fatalf("from actor context: ask %v, destroy %v; want ErrActorContext", askErr, destroyErr)
		}
		existed, err := h.Destroy(ctx, lref("d"))
		if err != nil || !existed {
			t.Fatalf("destroy = %v, %v", existed, err)
		}
		if existed, err := h.Destroy(ctx, lref("d")); err != nil || existed {
			t.Fatalf("second destroy = %v, %v", existed, err)
		}
		if n, err := actor.AskAs[int](ctx, h, lref("d"), "add", addArgs{N: 1}); err != nil || n != 1 {
			t.Fatalf("a fresh incarnation starts from the initial state: %d, %v", n, err)
		}
	})

	scenario("StateMigrationOnActivation", func(t *testing.T, be store.Backend) {
		type v1 struct {
			Count int `json:"count"`
		}
		type v2 struct {
			Count    int    `json:"count"`
			Currency string `json:"currency"`
		}
		old := &actor.Type[v1]{Name: "scenario.wallet", StateVersion: 1, Messages: map[string]actor.Handler[v1]{
			"add": actor.Message(func(c *actor.Context, s *v1, n int) (int, error) { s.Count += n; return s.Count, nil }),
		}}
		reg1 := actor.NewRegistry()
		reg1.MustRegister(old)
		h1 := newHost(t, be, reg1)
		ctx := testutil.Context(t)
		for _, id := range []string{"w1", "w2"} {
			if _, err := h1.Ask(ctx, actor.Ref{Type: "scenario.wallet", ID: id}, "add", 5); err != nil {
				t.Fatal(err)
			}
		}
		if err := h1.Shutdown(ctx); err != nil {
			t.Fatal(err)
		}
		newer := &actor.Type[v2]{Name: "scenario.wallet", StateVersion: 2,
			Migrations: []actor.Migration{{From: 1, To: 2, Fn: actor.MigrateObject(func(m map[string]any) error {
				if _, ok := m["currency"]; !ok {
					m["currency"] = "USD"
				}
				return nil
			})}},
			Messages: map[string]actor.Handler[v2]{
				"get": actor.Query(func(c *actor.Context, s *v2, _ struct{}) (v2, error) { return *s, nil }),
				"add": actor.Message(func(c *actor.Context, s *v2, n int) (int, error) { s.Count += n; return s.Count, nil }),
			}}
		reg2 := actor.NewRegistry()
		reg2.MustRegister(newer)
		h2 := newHost(t, be, reg2)
		rep, err := h2.DryRunMigration(ctx, "scenario.wallet", nil)
		if err != nil || rep.Checked != 2 || rep.Migrated != 2 || len(rep.Failures) != 0 {
			t.Fatalf("dry run = %v, %v", rep, err)
		}
		if info, _ := be.ActorGet(ctx, actor.Ref{Type: "scenario.wallet", ID: "w1"}); info.StateVersion != 1 {
			t.Fatal("the dry run wrote state")
		}
		got, err := actor.AskAs[v2](ctx, h2, actor.Ref{Type: "scenario.wallet", ID: "w1"}, "get", nil)
		if err != nil || got.Count != 5 || got.Currency != "USD" {
			t.Fatalf("migrated state = %+v, %v", got, err)
		}
		info, _ := be.ActorGet(ctx, actor.Ref{Type: "scenario.wallet", ID: "w1"})
		if info.StateVersion != 2 {
			t.Fatalf("the migrated state was not persisted with the next commit: version %d", info.StateVersion)
		}
		if err := h2.Shutdown(ctx); err != nil {
			t.Fatal(err)
		}
		// The old code meets a newer stored version: it refuses before any
		// message runs, and does not dead-letter the message.
		h3 := newHost(t, be, reg1)
		id, err := h3.Tell(ctx, actor.Ref{Type: "scenario.wallet", ID: "w1"}, "add", 1)
		if err != nil {
			t.Fatal(err)
		}
		time.Sleep(300 * time.Millisecond)
		st, _ := be.MessageStatus(ctx, []int64{int64(id)})
		if st[0].State != store.MessagePending {
			t.Fatalf("old code ran or dead-lettered a message for newer state: %s", st[0].State)
		}
		info, _ = be.ActorGet(ctx, actor.Ref{Type: "scenario.wallet", ID: "w1"})
		var s v2
		_ = json.Unmarshal(info.State, &s)
		if info.StateVersion != 2 || s.Count != 5 {
			t.Fatalf("old code changed newer state: %+v", info)
		}
		// A broken migration fails the dry run and names the actor.
		broken := &actor.Type[v2]{Name: "scenario.wallet", StateVersion: 3, Migrations: []actor.Migration{
			{From: 1, To: 2, Fn: newer.Migrations[0].Fn},
			{From: 2, To: 3, Fn: func(json.RawMessage) (json.RawMessage, error) { return json.RawMessage(`{not json`), nil }},
		}, Messages: newer.Messages}
		reg3 := actor.NewRegistry()
		reg3.MustRegister(broken)
		h4 := newHost(t, be, reg3, func(c *host.Config) { c.NoWorkers = true })
		rep, err = h4.DryRunMigration(ctx, "scenario.wallet", nil)
		if err != nil || len(rep.Failures) != 2 || !errors.Is(rep.Failures[0].Err, actor.ErrMigration) {
			t.Fatalf("dry run of a broken step = %v (%+v), %v", rep, rep.Failures, err)
		}
	})

	scenario("RegistryRefusesBadDefinitions", func(t *testing.T, be store.Backend) {
		noop := map[string]actor.Handler[ledger]{"m": actor.Message(func(*actor.Context, *ledger, struct{}) (any, error) { return nil, nil })}
		cases := map[string]*actor.Type[ledger]{
			"bad name":        {Name: "9bad name", Messages: noop},
			"no messages":     {Name: "scenario.empty"},
			"backwards step":  {Name: "scenario.cycle", StateVersion: 3, Messages: noop, Migrations: []actor.Migration{{From: 2, To: 1, Fn: func(b json.RawMessage) (json.RawMessage, error) { return b, nil }}}},
			"duplicate steps": {Name: "scenario.dup", StateVersion: 3, Messages: noop, Migrations: []actor.Migration{{From: 1, To: 2, Fn: func(b json.RawMessage) (json.RawMessage, error) { return b, nil }}, {From: 1, To: 2, Fn: func(b json.RawMessage) (json.RawMessage, error) { return b, nil }}}},
		}
		for name, def := range cases {
			if err := actor.NewRegistry().Register(def); !errors.Is(err, actor.ErrInvalidDefinition) {
				t.Errorf("%s: %v", name, err)
			}
		}
		reg := actor.NewRegistry()
		reg.MustRegister(&actor.Type[ledger]{Name: "scenario.once", Messages: noop})
		if err := reg.Register(&actor.Type[ledger]{Name: "scenario.once", Messages: noop}); !errors.Is(err, actor.ErrInvalidDefinition) {
			t.Errorf("duplicate type: %v", err)
		}
		// A gap in the steps is refused at registration, naming the step,
		// and would fail the activation if it got that far.
		gap := &actor.Type[ledger]{Name: "scenario.gap", StateVersion: 3, Messages: noop,
			Migrations: []actor.Migration{{From: 1, To: 2, Fn: func(b json.RawMessage) (json.RawMessage, error) { return b, nil }}}}
		if err := actor.NewRegistry().Register(gap); !errors.Is(err, actor.ErrInvalidDefinition) || !contains(err.Error(), "from version 2 to 3") {
			t.Errorf("a gap in the steps: %v", err)
		}
		if _, err := gap.Load([]byte(`{"n":1}`), 1); !errors.Is(err, actor.ErrMigration) || !contains(err.Error(), "from version 2 to 3") {
			t.Errorf("missing step: %v", err)
		}
	})

	scenario("ActivationChangesWaitForASuccessfulCommit", func(t *testing.T, be store.Backend) {
		// OnActivate's change and a migration are persisted by the next
		// commit that completes a message, never by one that only fails
		// (or dead-letters) a message.
		msgs := map[string]actor.Handler[ledger]{
			"add": actor.Message(func(c *actor.Context, s *ledger, n int) (int, error) { s.N += n; return s.N, nil }),
			"poison": actor.Message(func(c *actor.Context, s *ledger, _ struct{}) (any, error) {
				return nil, actor.Permanent(errors.New("refused"))
			}),
		}
		v1 := &actor.Type[ledger]{Name: "scenario.activated", Messages: msgs}
		v2 := &actor.Type[ledger]{Name: "scenario.activated", StateVersion: 2, Messages: msgs,
			Migrations: []actor.Migration{{From: 1, To: 2, Fn: actor.MigrateObject(func(m map[string]any) error { m["status"] = "migrated"; return nil })}},
			OnActivate: func(c *actor.Context, s *ledger) error { s.N += 100; return nil },
		}
		ctx := testutil.Context(t)
		old := actor.Ref{Type: "scenario.activated", ID: "old"}
		reg1 := actor.NewRegistry()
		reg1.MustRegister(v1)
		h1 := newHost(t, be, reg1)
		if _, err := h1.Ask(ctx, old, "add", 1); err != nil {
			t.Fatal(err)
		}
		if err := h1.Shutdown(ctx); err != nil {
			t.Fatal(err)
		}
		reg2 := actor.NewRegistry()
		reg2.MustRegister(v2)
		h2 := newHost(t, be, reg2)
		fresh := actor.Ref{Type: "scenario.activated", ID: "fresh"}
		for _, r := range []actor.Ref{old, fresh} {
			before, _ := be.ActorGet(ctx, r)
			if _, err := h2.Ask(ctx, r, "poison", nil); !errors.Is(err, actor.ErrDeadLetter) {
				t.Fatalf("%s poison: %v", r, err)
			}
			after, err := be.ActorGet(ctx, r)
			if err != nil {
				t.Fatal(err)
			}
			if before != nil && (string(after.State) != string(before.State) || after.StateVersion != before.StateVersion) {
				t.Errorf("%s: a commit that only dead-lettered wrote state %s v%d (was %s v%d)", r, after.State, after.StateVersion, before.State, before.StateVersion)
			}
			if before == nil && (after.State != nil || contains(string(after.State), "100")) {
				t.Errorf("%s: a commit that only dead-lettered wrote OnActivate's state %s", r, after.State)
			}
		}
		for r, want := range map[actor.Ref]string{old: `"n":102`, fresh: `"n":101`} {
			if _, err := h2.Ask(ctx, r, "add", 1); err != nil {
				t.Fatal(err)
			}
			info, _ := be.ActorGet(ctx, r)
			if !contains(string(info.State), want) || info.StateVersion != 2 {
				t.Errorf("%s: after a successful message, state %s v%d; want %s at v2", r, info.State, info.StateVersion, want)
			}
		}
		if info, _ := be.ActorGet(ctx, old); !contains(string(info.State), "migrated") {
			t.Errorf("the migration's change was not persisted: %s", info.State)
		}
	})
}
