package scenariotest

import (
	"context"
	"encoding/json"
	"errors"
	"math"
	"strings"
	"testing"

	"github.com/ductus/ductus/actor"
	"github.com/ductus/ductus/runtime/host"
	"github.com/ductus/ductus/runtime/store"
)

func init() {
	scenario("BadInputWritesNothing", func(t *testing.T, be store.Backend) {
		h := newHost(t, be, ledgerRegistry(&hooks{}), func(c *host.Config) {
			c.Limits = actor.Limits{ArgumentsBytes: 1024, Depth: 8, MailboxMessages: 3}
		})
		ctx := ctxT(t)
		deep := json.RawMessage(strings.Repeat("[", 20) + strings.Repeat("]", 20))
		cases := []struct {
			name    string
			ref     actor.Ref
			message string
			args    any
			want    error
		}{
			{"unknown type", actor.Ref{Type: "no.such.type", ID: "x"}, "add", nil, actor.ErrUnknownType},
			{"unknown message", lref("bad1"), "nope", nil, actor.ErrUnknownMessage},
			{"arguments of the wrong type", lref("bad2"), "add", map[string]any{"n": "one"}, actor.ErrInvalidArguments},
			{"arguments too large", lref("bad3"), "add", map[string]any{"n": 1, "pad": strings.Repeat("x", 2000)}, actor.ErrTooLarge},
			{"non-finite number", lref("bad4"), "add", map[string]any{"n": math.Inf(1)}, actor.ErrInvalidArguments},
			{"NaN", lref("bad4"), "add", math.NaN(), actor.ErrInvalidArguments},
			{"duplicate keys", lref("bad5"), "add", json.RawMessage(`{"n":1,"n":2}`), actor.ErrInvalidArguments},
			{"nested too deep", lref("bad6"), "set_status", deep, actor.ErrInvalidArguments},
			{"malformed JSON", lref("bad7"), "add", json.RawMessage(`{"n":`), actor.ErrInvalidArguments},
			{"invalid UTF-8 in JSON", lref("bad8"), "set_status", json.RawMessage("\"\xff\""), actor.ErrInvalidArguments},
			{"empty ID", actor.Ref{Type: ledgerType, ID: ""}, "add", nil, actor.ErrInvalidID},
			{"ID too long", lref(strings.Repeat("i", 256)), "add", nil, actor.ErrTooLarge},
			{"ID not UTF-8", lref("bad\xffid"), "add", nil, actor.ErrInvalidID},
		}
		for _, c := range cases {
			_, err := h.Tell(ctx, c.ref, c.message, c.args)
			if !errors.Is(err, c.want) {
				t.Errorf("%s: err = %v, want %v", c.name, err, c.want)
				continue
			}
			if c.ref.ID != "" && c.ref.Type == ledgerType {
				if _, gerr := be.ActorGet(ctx, c.ref); !errors.Is(gerr, actor.ErrNotFound) {
					t.Errorf("%s: refused input created the actor (%v)", c.name, gerr)
				}
			}
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
		before, _ := be.ActorGet(ctx, lref("full"))
		_, err := client.Tell(ctx, lref("full"), "add", addArgs{N: 1})
		var full *actor.MailboxFullError
		if !errors.As(err, &full) {
			t.Fatalf("a full mailbox: %v", err)
		}
		after, _ := be.ActorGet(ctx, lref("full"))
		if after.Unfinished != before.Unfinished {
			t.Fatalf("a refused message was written: unfinished %d -> %d", before.Unfinished, after.Unfinished)
		}
	})

	scenario("Authorization", func(t *testing.T, be store.Backend) {
		type caller struct{ Role string }
		var sawSystem bool
		deny := func(op string) actor.Policy {
			return func(ctx context.Context, req actor.Request) error {
				if req.System != nil {
					sawSystem = true
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
		relay := &actor.Type[ledger]{Name: "scenario.relay", Messages: map[string]actor.Handler[ledger]{
			"relay": actor.Message(func(c *actor.Context, s *ledger, to string) (any, error) {
				return nil, c.SendTo(lref(to), "add", addArgs{N: 1})
			}),
		}}
		h := newHost(t, be, ledgerRegistry(&hooks{}, relay), func(c *host.Config) { c.Policies = pol })
		ctx := ctxT(t)
		anon, user, admin := ctx, actor.WithCaller(ctx, caller{"user"}), actor.WithCaller(ctx, caller{"admin"})
		checks := []struct {
			name string
			err  error
		}{
			{"anonymous tell", func() error { _, err := h.Tell(anon, lref("z"), "add", addArgs{N: 1}); return err }()},
			{"anonymous query", func() error { _, err := h.Ask(anon, lref("z"), "get", nil); return err }()},
			{"user destroy", func() error { _, err := h.Destroy(user, lref("z")); return err }()},
			{"user dead letters", func() error { _, err := h.DeadLetters(user, "", 0, 10); return err }()},
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
		if _, err := h.Ask(user, actor.Ref{Type: "scenario.relay", ID: "r"}, "relay", "target"); err != nil {
			t.Fatalf("user relay: %v", err)
		}
		eventually(t, 10e9, "the relayed send", func() bool { return storedLedger(t, be, lref("target")).N == 1 })
		if !sawSystem {
			t.Fatal("the send was not authorized as a system delivery")
		}
		if _, err := h.Destroy(admin, lref("target")); err != nil {
			t.Fatalf("admin destroy: %v", err)
		}
	})
}
