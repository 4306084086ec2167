package hosttest_test

import (
	"context"
	"encoding/json"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ductus/ductus/actor"
	"github.com/ductus/ductus/runtime/host"
	"github.com/ductus/ductus/runtime/hosttest"
)

type order struct {
	Status string `json:"status"`
}

// registry holds an order that, when placed, emails the customer, tells
// the ledger and sets a reminder; the ledger counts what it was told.
func registry() *actor.Registry {
	reg := actor.NewRegistry()
	reg.MustRegister(&actor.Type[order]{
		Name: "order",
		Messages: map[string]actor.Handler[order]{
			"place": actor.Message(func(c *actor.Context, s *order, amount int) (string, error) {
				s.Status = "placed"
				if err := c.Emit("mail", map[string]string{"to": c.Ref().ID}); err != nil {
					return "", err
				}
				if err := c.SendTo(actor.Ref{Type: "ledger", ID: "books"}, "add", amount); err != nil {
					return "", err
				}
				return s.Status, c.Schedule("chase", actor.Every(time.Hour), "chase", nil)
			}),
			"chase": actor.Message(func(c *actor.Context, s *order, _ struct{}) (string, error) { return s.Status, nil }),
		},
	})
	reg.MustRegister(&actor.Type[int]{
		Name: "ledger",
		Messages: map[string]actor.Handler[int]{
			"add":   actor.Message(func(c *actor.Context, s *int, n int) (int, error) { *s += n; return *s, nil }),
			"total": actor.Query(func(c *actor.Context, s *int, _ struct{}) (int, error) { return *s, nil }),
		},
	})
	return reg
}

func TestStartWaitIdleAndTurn(t *testing.T) {
	var mailed atomic.Int64
	h := hosttest.Start(t, host.Config{Registry: registry(), Effects: map[string]host.Effect{
		"mail": {Handler: func(ctx context.Context, ec host.EffectContext, _ json.RawMessage) (any, error) {
			mailed.Add(1)
			return nil, nil
		}},
	}})
	ctx := context.Background()
	ann := actor.Ref{Type: "order", ID: "ann"}
	if _, err := h.Tell(ctx, ann, "place", 30); err != nil {
		t.Fatal(err)
	}
	hosttest.WaitIdle(t, h, host.BacklogQuery{})
	// Idle means the turn, its effect and its send all finished.
	if n := mailed.Load(); n != 1 {
		t.Fatalf("the mail effect ran %d times by idle, want 1", n)
	}
	if total, err := actor.AskAs[int](ctx, h, actor.Ref{Type: "ledger", ID: "books"}, "total", nil); err != nil || total != 30 {
		t.Fatalf("ledger total = %d, %v; want 30 (the send delivered)", total, err)
	}

	p := hosttest.Turn(t, h, actor.Ref{Type: "order", ID: "bob"}, "place", 12)
	if p.Err != nil || hosttest.Decode[string](t, p.Result) != "placed" || hosttest.Decode[order](t, p.State).Status != "placed" {
		t.Fatalf("preview = %+v", p)
	}
	fx := hosttest.RequireEffect(t, p, "mail")
	if hosttest.Decode[map[string]string](t, fx.Args)["to"] != "bob" {
		t.Fatalf("mail args %s", fx.Args)
	}
	if s := hosttest.RequireSend(t, p, actor.Ref{Type: "ledger", ID: "books"}, "add"); hosttest.Decode[int](t, s.Args) != 12 {
		t.Fatalf("send args %s", s.Args)
	}
	if r := hosttest.RequireReminder(t, p, "chase"); r.Schedule.Every != time.Hour {
		t.Fatalf("reminder %+v", r)
	}
	// A preview writes nothing: bob does not exist, nothing is pending.
	if n, err := h.Backlog(ctx, host.BacklogQuery{}); err != nil || !n.Idle() {
		t.Fatalf("after a preview the backlog is %+v, %v", n, err)
	}
	if _, err := h.Actor(ctx, actor.Ref{Type: "order", ID: "bob"}); err == nil {
		t.Fatal("a preview created the actor")
	}
	hosttest.RequireNothingStaged(t, hosttest.Turn(t, h, ann, "chase", nil))
}

// fakeT records a helper's failure; Fatalf ends the goroutine as
// testing.T's does.
type fakeT struct {
	testing.TB
	mu     sync.Mutex
	failed string
}

func (f *fakeT) Helper() {}
func (f *fakeT) Fatalf(format string, args ...any) {
	f.mu.Lock()
	f.failed = format
	f.mu.Unlock()
	runtime.Goexit()
}

// fails runs fn against a fakeT and returns what it failed with.
func fails(fn func(tb testing.TB)) string {
	f := &fakeT{}
	done := make(chan struct{})
	go func() { defer close(done); fn(f) }()
	<-done
	return f.failed
}

func TestRequireHelpersFail(t *testing.T) {
	h := hosttest.Start(t, host.Config{Registry: registry(), Effects: map[string]host.Effect{
		"mail": {Handler: func(context.Context, host.EffectContext, json.RawMessage) (any, error) { return nil, nil }},
	}})
	placed := hosttest.Turn(t, h, actor.Ref{Type: "order", ID: "x"}, "place", 1)
	chase := hosttest.Turn(t, h, actor.Ref{Type: "order", ID: "x"}, "chase", nil)
	cases := []struct {
		name string
		fn   func(tb testing.TB)
		want string // a fragment of the failure
	}{
		{"no such effect", func(tb testing.TB) { hosttest.RequireEffect(tb, placed, "sms") }, "effects named"},
		{"no such send", func(tb testing.TB) { hosttest.RequireSend(tb, placed, actor.Ref{Type: "ledger", ID: "other"}, "add") }, "sends of"},
		{"no such reminder", func(tb testing.TB) { hosttest.RequireReminder(tb, chase, "chase") }, "reminder changes"},
		{"something staged", func(tb testing.TB) { hosttest.RequireNothingStaged(tb, placed) }, "want nothing"},
		{"not idle", func(tb testing.TB) {
			// Due in an hour: pending, so not idle, for the whole wait.
			if _, err := h.Tell(context.Background(), actor.Ref{Type: "order", ID: "held"}, "chase", nil, actor.AvailableAt(time.Now().Add(time.Hour))); err != nil {
				t.Error(err)
			}
			hosttest.WaitIdleWithin(tb, h, host.BacklogQuery{Type: "order", ID: "held"}, 100*time.Millisecond)
		}, "not idle"},
		{"unknown message", func(tb testing.TB) { hosttest.Turn(tb, h, actor.Ref{Type: "order", ID: "x"}, "refund", nil) }, "hosttest: "},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := fails(c.fn); !strings.Contains(got, c.want) {
				t.Fatalf("failed with %q, want a failure containing %q", got, c.want)
			}
		})
	}
}
