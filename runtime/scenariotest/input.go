package scenariotest

import (
	"context"
	"encoding/json"
	"errors"
	"math"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ductus/ductus/internal/testutil"

	"github.com/ductus/ductus/actor"
	"github.com/ductus/ductus/runtime/host"
	"github.com/ductus/ductus/runtime/store"
	"github.com/ductus/ductus/runtime/store/storetest"
)

// rowCounts reads every runtime table's row count.
func rowCounts(t *testing.T, be store.Backend) map[string]int64 {
	t.Helper()
	n, err := storetest.RowCounts(testutil.Context(t), be)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// refusedBy is a policy that refuses one actor ID and allows the rest.
func refusedBy(id string) actor.Policy {
	return func(_ context.Context, req actor.Request) error {
		if req.Ref.ID == id {
			return errors.New("this actor is off limits")
		}
		return nil
	}
}

func init() {
	scenario("BadInputWritesNothing", func(t *testing.T, be store.Backend) {
		const idLimit = 16 // a non-default ID limit: the client enforces the configured one
		h := newHost(t, be, ledgerRegistry(&hooks{}), func(c *host.Config) {
			c.Limits = actor.Limits{ArgumentsBytes: 1024, Depth: 8, IDBytes: idLimit}
			c.Policies = actor.Policies{Message: refusedBy("forbidden")}
		})
		ctx := testutil.Context(t)
		deep := json.RawMessage(strings.Repeat("[", 20) + strings.Repeat("]", 20))
		ok := actor.Envelope{Ref: lref("batch-ok"), Message: "add", Args: addArgs{N: 1}}
		cases := []struct {
			name  string
			batch []actor.Envelope // a TellBatch when longer than one
			want  error
			limit int // for a *LimitError: the limit it must name
		}{
			{"unknown type", one(actor.Ref{Type: "no.such.type", ID: "x"}, "add", nil), actor.ErrUnknownType, 0},
			{"unknown message", one(lref("bad1"), "nope", nil), actor.ErrUnknownMessage, 0},
			{"arguments of the wrong type", one(lref("bad2"), "add", map[string]any{"n": "one"}), actor.ErrInvalidArguments, 0},
			{"arguments too large", one(lref("bad3"), "add", map[string]any{"n": 1, "pad": strings.Repeat("x", 2000)}), actor.ErrTooLarge, 1024},
			{"non-finite number", one(lref("bad4"), "add", map[string]any{"n": math.Inf(1)}), actor.ErrInvalidArguments, 0},
			{"NaN", one(lref("bad4"), "add", math.NaN()), actor.ErrInvalidArguments, 0},
			{"duplicate keys", one(lref("bad5"), "add", json.RawMessage(`{"n":1,"n":2}`)), actor.ErrInvalidArguments, 0},
			{"duplicate keys after escaping", one(lref("bad5"), "add", json.RawMessage(`{"n":1,"\u006e":2}`)), actor.ErrInvalidArguments, 0},
			{"keys equal ignoring case", one(lref("bad5"), "add", json.RawMessage(`{"n":1,"N":2}`)), actor.ErrInvalidArguments, 0},
			{"nested too deep", one(lref("bad6"), "set_status", deep), actor.ErrInvalidArguments, 0},
			{"malformed JSON", one(lref("bad7"), "add", json.RawMessage(`{"n":`)), actor.ErrInvalidArguments, 0},
			{"invalid UTF-8 in JSON", one(lref("bad8"), "set_status", json.RawMessage("\"\xff\"")), actor.ErrInvalidArguments, 0},
			{"empty ID", one(actor.Ref{Type: ledgerType, ID: ""}, "add", nil), actor.ErrInvalidID, 0},
			{"ID over the configured limit", one(lref(strings.Repeat("i", idLimit+1)), "add", nil), actor.ErrTooLarge, idLimit},
			{"ID not UTF-8", one(lref("bad\xffid"), "add", nil), actor.ErrInvalidID, 0},
			{"ID with a NUL byte", one(lref("bad\x00id"), "add", nil), actor.ErrInvalidID, 0},
			{"idempotency key over 255 bytes", []actor.Envelope{{Ref: lref("bad9"), Message: "add", Args: addArgs{N: 1},
				Options: []actor.TellOption{actor.WithIdempotencyKey(strings.Repeat("k", 256))}}}, actor.ErrTooLarge, 255},
			{"forbidden", one(lref("forbidden"), "add", addArgs{N: 1}), actor.ErrForbidden, 0},
			{"a batch with one bad message", []actor.Envelope{ok, {Ref: lref("bad10"), Message: "nope"}}, actor.ErrUnknownMessage, 0},
			{"a batch with one forbidden message", []actor.Envelope{ok, {Ref: lref("forbidden"), Message: "add"}}, actor.ErrForbidden, 0},
		}
		for _, c := range cases {
			before := rowCounts(t, be)
			var err error
			if len(c.batch) == 1 {
				e := c.batch[0]
				_, err = h.Tell(ctx, e.Ref, e.Message, e.Args, e.Options...)
			} else {
				_, err = h.TellBatch(ctx, c.batch)
			}
			if !errors.Is(err, c.want) {
				t.Errorf("%s: err = %v, want %v", c.name, err, c.want)
				continue
			}
			var le *actor.LimitError
			if c.limit != 0 && (!errors.As(err, &le) || le.Limit != c.limit) {
				t.Errorf("%s: err = %v, want a limit of %d", c.name, err, c.limit)
			}
			if d := storetest.RowDiff(before, rowCounts(t, be)); d != "" {
				t.Errorf("%s: a refused call wrote rows:%s", c.name, d)
			}
		}
		// The limits refuse only what is over them.
		if _, err := h.Ask(ctx, lref(strings.Repeat("i", idLimit)), "add", addArgs{N: 1}); err != nil {
			t.Fatalf("an ID at the limit: %v", err)
		}

		// A full mailbox: the cap counts unfinished messages. No worker
		// runs, so the mailbox stays full.
		_ = h.Shutdown(context.Background())
		client := newHost(t, be, ledgerRegistry(&hooks{}), func(c *host.Config) {
			c.NoWorkers = true
			c.Limits = actor.Limits{MailboxMessages: 3}
		})
		for i := 0; i < 3; i++ {
			if _, err := client.Tell(ctx, lref("full"), "add", addArgs{N: 1}); err != nil {
				t.Fatal(err)
			}
		}
		before := rowCounts(t, be)
		_, err := client.Tell(ctx, lref("full"), "add", addArgs{N: 1})
		var full *actor.MailboxFullError
		if !errors.As(err, &full) || !errors.Is(err, actor.ErrMailboxFull) || full.Ref != lref("full") {
			t.Fatalf("a full mailbox: %v", err)
		}
		if d := storetest.RowDiff(before, rowCounts(t, be)); d != "" {
			t.Fatalf("a refused message was written:%s", d)
		}
	})

	scenario("TurnLimitsDeadLetterAndWriteNothing", func(t *testing.T, be store.Backend) {
		// Results and state have separate limits: a 3,000-byte state fits
		// where a 3,000-byte result does not.
		type blob struct {
			Blob string `json:"blob,omitempty"`
		}
		def := &actor.Type[blob]{Name: "scenario.limits", Messages: map[string]actor.Handler[blob]{
			"result": actor.Message(func(c *actor.Context, s *blob, n int) (string, error) { return strings.Repeat("r", n), nil }),
			"grow": actor.Message(func(c *actor.Context, s *blob, n int) (int, error) {
				s.Blob = strings.Repeat("s", n)
				return n, nil
			}),
		}}
		reg := func() *actor.Registry { r := actor.NewRegistry(); r.MustRegister(def); return r }
		limits := func(c *host.Config) { c.Limits = actor.Limits{ResultBytes: 2048, StateBytes: 4096} }
		newHost(t, be, reg(), limits)
		// Asked from a process that runs nothing: the cause comes back from
		// the stored dead letter, not from the worker's memory.
		client := newHost(t, be, reg(), limits, func(c *host.Config) { c.NoWorkers = true })
		ctx := testutil.Context(t)
		r := actor.Ref{Type: "scenario.limits", ID: "x"}
		if _, err := client.Ask(ctx, r, "grow", 3000); err != nil {
			t.Fatalf("a state over the result limit but under the state limit: %v", err)
		}
		stored, _ := be.ActorGet(ctx, r)
		cases := []struct {
			name, message string
			n             int
			what          string
		}{
			{"result too large", "result", 3000, "result"},
			{"state too large", "grow", 5000, "state"},
		}
		for _, c := range cases {
			before := rowCounts(t, be)
			_, err := client.Ask(ctx, r, c.message, c.n)
			var le *actor.LimitError
			if !errors.Is(err, actor.ErrDeadLetter) || !errors.Is(err, actor.ErrTooLarge) || !errors.As(err, &le) || le.What != c.what {
				t.Errorf("%s: err = %v, want a dead letter caused by the %s limit", c.name, err, c.what)
				continue
			}
			after := rowCounts(t, be)
			want := map[string]int64{"ductus_messages": 1, "ductus_dead_letters": 1}
			for table, n := range after {
				if n-before[table] != want[table] {
					t.Errorf("%s: %s went %d -> %d; only the message and its dead letter may be written", c.name, table, before[table], n)
				}
			}
			if now, _ := be.ActorGet(ctx, r); string(now.State) != string(stored.State) {
				t.Errorf("%s: the refused turn changed the stored state", c.name)
			}
		}
	})

	scenario("Authorization", authorizationScenario)
}

func one(r actor.Ref, message string, args any) []actor.Envelope {
	return []actor.Envelope{{Ref: r, Message: message, Args: args}}
}

// authorizationScenario checks the five policies against callers, and that
// every delivery the runtime makes on its own behalf reaches the message
// policy marked with the right System.Via.
func authorizationScenario(t *testing.T, be store.Backend) {
	type caller struct{ Role string }
	var mu sync.Mutex
	vias := map[string]actor.Request{}
	deny := func(op string) actor.Policy {
		return func(ctx context.Context, req actor.Request) error {
			if req.System != nil {
				mu.Lock()
				vias[req.System.Via] = req
				mu.Unlock()
				return nil
			}
			c, _ := req.Caller.(caller)
			if c.Role == "admin" || (op != "admin" && c.Role == "user") {
				return nil
			}
			return errors.New(op + " needs a user")
		}
	}
	pol := actor.Policies{Message: deny("message"), Query: deny("query"), Destroy: deny("admin"), Administration: deny("admin"), Subscription: deny("subscribe")}
	var client actor.Client
	relayRef := actor.Ref{Type: "scenario.relay", ID: "r"}
	relay := &actor.Type[ledger]{Name: "scenario.relay", Messages: map[string]actor.Handler[ledger]{
		"relay": actor.Message(func(c *actor.Context, s *ledger, to string) (any, error) {
			return nil, c.SendTo(lref(to), "add", addArgs{N: 1})
		}),
		"remind": actor.Message(func(c *actor.Context, s *ledger, _ struct{}) (any, error) {
			return nil, c.Schedule("later", actor.At(time.Now().Add(time.Hour)), "done", nil)
		}),
		"emit": actor.Message(func(c *actor.Context, s *ledger, _ struct{}) (any, error) {
			return nil, c.Emit("noop", nil, actor.OnSuccess("done"))
		}),
		// A Tell from actor code: the turn has no caller of its own.
		"tell": actor.Message(func(c *actor.Context, s *ledger, to string) (any, error) {
			_, err := client.Tell(c, lref(to), "add", addArgs{N: 1})
			return nil, err
		}),
		"done": actor.Message(func(c *actor.Context, s *ledger, _ json.RawMessage) (any, error) { return nil, nil }),
	}}
	h := newHost(t, be, ledgerRegistry(&hooks{}, relay), func(c *host.Config) {
		c.Policies = pol
		c.Effects = map[string]host.Effect{"noop": {Handler: func(context.Context, host.EffectContext, json.RawMessage) (any, error) { return nil, nil }}}
	})
	client = h
	ctx := testutil.Context(t)
	anon, user, admin := ctx, actor.WithCaller(ctx, caller{"user"}), actor.WithCaller(ctx, caller{"admin"})
	checks := []struct {
		name string
		err  error
	}{
		{"anonymous tell", func() error { _, err := h.Tell(anon, lref("z"), "add", addArgs{N: 1}); return err }()},
		{"anonymous query", func() error { _, err := h.Ask(anon, lref("z"), "get", nil); return err }()},
		{"user destroy", func() error { _, err := h.Destroy(user, lref("z")); return err }()},
		{"user dead letters", func() error { _, err := h.DeadLetters(user, host.DeadLetterQuery{Limit: 10}); return err }()},
		{"anonymous subscribe", func() error { _, err := h.Subscribe(anon, lref("z"), func(host.Broadcast) {}); return err }()},
	}
	for _, c := range checks {
		var fe *actor.ForbiddenError
		if !errors.Is(c.err, actor.ErrForbidden) || !errors.As(c.err, &fe) {
			t.Errorf("%s: err = %v, want ErrForbidden", c.name, c.err)
		}
	}
	if _, err := be.ActorGet(ctx, lref("z")); !errors.Is(err, actor.ErrNotFound) {
		t.Fatal("a forbidden tell wrote the actor")
	}
	for _, step := range []struct{ message, arg string }{{"relay", "target"}, {"remind", ""}, {"emit", ""}, {"tell", "told"}} {
		var arg any
		if step.arg != "" {
			arg = step.arg
		}
		if _, err := h.Ask(user, relayRef, step.message, arg); err != nil {
			t.Fatalf("user %s: %v", step.message, err)
		}
	}
	testutil.Eventually(t, 10e9, "the relayed send and the Tell from a turn", func() bool {
		return storedLedger(t, be, lref("target")).N == 1 && storedLedger(t, be, lref("told")).N == 1
	})
	// An operator retries a dead letter: the delivery is the operator's.
	if _, err := h.Ask(user, lref("p"), "poison", nil); !errors.Is(err, actor.ErrDeadLetter) {
		t.Fatalf("poison: %v", err)
	}
	dead, err := h.DeadLetters(admin, host.DeadLetterQuery{Type: ledgerType, Limit: 10})
	if err != nil || len(dead) != 1 {
		t.Fatalf("dead letters = %+v, %v", dead, err)
	}
	if _, err := h.RetryDeadLetter(admin, dead[0].Message); err != nil {
		t.Fatalf("admin retry: %v", err)
	}
	wants := []struct {
		via    string
		to     actor.Ref
		source actor.Ref
		caller any
	}{
		{actor.ViaSend, lref("target"), relayRef, nil},
		{actor.ViaReminder, relayRef, relayRef, nil},
		{actor.ViaEffectOutcome, relayRef, relayRef, nil},
		{actor.ViaTurn, lref("told"), relayRef, nil},
		{actor.ViaDeadLetterRetry, lref("p"), lref("p"), caller{"admin"}},
	}
	mu.Lock()
	defer mu.Unlock()
	for _, w := range wants {
		req, ok := vias[w.via]
		switch {
		case !ok:
			t.Errorf("no %q request reached the policies", w.via)
		case req.Ref != w.to || req.System.Source != w.source || req.Caller != w.caller:
			t.Errorf("%s: request for %s from %s by %v, want %s from %s by %v", w.via, req.Ref, req.System.Source, req.Caller, w.to, w.source, w.caller)
		}
	}
	if _, err := h.Destroy(admin, lref("target")); err != nil {
		t.Fatalf("admin destroy: %v", err)
	}
}
