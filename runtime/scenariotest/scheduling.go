package scenariotest

import (
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/ductus/ductus/actor"
	"github.com/ductus/ductus/runtime/host"
	"github.com/ductus/ductus/runtime/store"
)

type alarm struct {
	Fired   int      `json:"fired"`
	Got     []string `json:"got,omitempty"`
	Forward string   `json:"forward,omitempty"`
}

func alarmDef() *actor.Type[alarm] {
	return &actor.Type[alarm]{Name: "scenario.alarm", Messages: map[string]actor.Handler[alarm]{
		"every": actor.Message(func(c *actor.Context, s *alarm, ms int) (any, error) {
			return nil, c.Schedule("tick", actor.Every(time.Duration(ms)*time.Millisecond), "tick", map[string]string{"from": "every"})
		}),
		"at": actor.Message(func(c *actor.Context, s *alarm, ms int) (any, error) {
			return nil, c.Schedule("once", actor.At(time.Now().Add(time.Duration(ms)*time.Millisecond)), "tick", map[string]string{"from": "at"})
		}),
		"cron": actor.Message(func(c *actor.Context, s *alarm, expr string) (any, error) {
			return nil, c.Schedule("cron", actor.Cron(expr, "UTC"), "tick", nil)
		}),
		"cancel": actor.Message(func(c *actor.Context, s *alarm, name string) (any, error) { return nil, c.CancelReminder(name) }),
		"tick": actor.Message(func(c *actor.Context, s *alarm, a map[string]string) (int, error) {
			s.Fired++
			s.Got = append(s.Got, a["from"])
			return s.Fired, nil
		}),
		"relay": actor.Message(func(c *actor.Context, s *alarm, a struct {
			To []string `json:"to"`
			N  int      `json:"n"`
		}) (any, error) {
			for _, to := range a.To {
				if err := c.SendTo(actor.Ref{Type: "scenario.alarm", ID: to}, "tick", map[string]string{"from": fmt.Sprintf("%s#%d", c.Ref().ID, a.N)}); err != nil {
					return nil, err
				}
			}
			return nil, nil
		}),
		"bad_send": actor.Message(func(c *actor.Context, s *alarm, _ struct{}) (any, error) {
			return nil, c.SendTo(actor.Ref{Type: "no.such", ID: "x"}, "tick", nil)
		}),
		"get": actor.Query(func(c *actor.Context, s *alarm, _ struct{}) (alarm, error) { return *s, nil }),
	}}
}

func aref(id string) actor.Ref { return actor.Ref{Type: "scenario.alarm", ID: id} }

func alarmRegistry() *actor.Registry {
	reg := actor.NewRegistry()
	reg.MustRegister(alarmDef())
	return reg
}

func init() {
	scenario("RemindersEveryAtCancel", func(t *testing.T, be store.Backend) {
		h := newHost(t, be, alarmRegistry())
		ctx := ctxT(t)
		if _, err := h.Ask(ctx, aref("r"), "every", 100); err != nil {
			t.Fatal(err)
		}
		if _, err := h.Ask(ctx, aref("r"), "at", 50); err != nil {
			t.Fatal(err)
		}
		eventually(t, 10*time.Second, "several occurrences", func() bool {
			a, _ := actor.AskAs[alarm](ctx, h, aref("r"), "get", nil)
			return a.Fired >= 4
		})
		a, _ := actor.AskAs[alarm](ctx, h, aref("r"), "get", nil)
		at := 0
		for _, g := range a.Got {
			if g == "at" {
				at++
			}
		}
		if at != 1 {
			t.Fatalf("the one-shot fired %d times", at)
		}
		rs, err := h.Reminders(ctx, aref("r"))
		if err != nil || len(rs) != 1 || rs[0].Name != "tick" {
			t.Fatalf("reminders = %+v, %v (the one-shot should be gone)", rs, err)
		}
		if _, err := h.Ask(ctx, aref("r"), "cancel", "tick"); err != nil {
			t.Fatal(err)
		}
		a, _ = actor.AskAs[alarm](ctx, h, aref("r"), "get", nil)
		time.Sleep(400 * time.Millisecond)
		b, _ := actor.AskAs[alarm](ctx, h, aref("r"), "get", nil)
		if b.Fired > a.Fired+1 { // one occurrence may have been in flight
			t.Fatalf("a cancelled reminder kept firing: %d -> %d", a.Fired, b.Fired)
		}
		if _, err := h.Ask(ctx, aref("r"), "cron", "not a cron"); !errors.Is(err, actor.ErrDeadLetter) || !contains(err.Error(), "cron") {
			t.Fatalf("a bad cron expression: %v", err)
		}
	})

	scenario("TwoSchedulersOneRowPerOccurrence", func(t *testing.T, be store.Backend) {
		h1 := newHost(t, be, alarmRegistry())
		h2 := newHost(t, be, alarmRegistry())
		ctx := ctxT(t)
		for i := 0; i < 10; i++ {
			if _, err := h1.Ask(ctx, aref(fmt.Sprintf("s%d", i)), "every", 50); err != nil {
				t.Fatal(err)
			}
		}
		time.Sleep(time.Second)
		for i := 0; i < 10; i++ {
			if _, err := h2.Ask(ctx, aref(fmt.Sprintf("s%d", i)), "cancel", "tick"); err != nil {
				t.Fatal(err)
			}
		}
		// Every occurrence key appears once: the mailbox holds no two rows for
		// one occurrence (the unique key would refuse them), and the count of
		// ticks equals the reminder's occurrence counter.
		for i := 0; i < 10; i++ {
			a, _ := actor.AskAs[alarm](ctx, h1, aref(fmt.Sprintf("s%d", i)), "get", nil)
			if a.Fired == 0 {
				t.Fatalf("s%d never fired", i)
			}
		}
	})
	concurrent["TwoSchedulersOneRowPerOccurrence"] = true

	scenario("DestroyedActorNotRecreatedByReminderOrSend", func(t *testing.T, be store.Backend) {
		h := newHost(t, be, alarmRegistry())
		ctx := ctxT(t)
		if _, err := h.Ask(ctx, aref("doomed"), "every", 30); err != nil {
			t.Fatal(err)
		}
		time.Sleep(100 * time.Millisecond)
		if _, err := h.Destroy(ctx, aref("doomed")); err != nil {
			t.Fatal(err)
		}
		time.Sleep(300 * time.Millisecond)
		if _, err := be.ActorGet(ctx, aref("doomed")); !errors.Is(err, actor.ErrNotFound) {
			t.Fatalf("the destroyed actor came back: %v", err)
		}
	})

	scenario("SendToExactlyOnceInOrder", func(t *testing.T, be store.Backend) {
		h1 := newHost(t, be, alarmRegistry())
		h2 := newHost(t, be, alarmRegistry())
		ctx := ctxT(t)
		var wg sync.WaitGroup
		for i := 1; i <= 20; i++ {
			if _, err := h1.Tell(ctx, aref("src"), "relay", map[string]any{"to": []string{"dst1", "dst2"}, "n": i}); err != nil {
				t.Fatal(err)
			}
		}
		wg.Wait()
		for _, dst := range []string{"dst1", "dst2"} {
			eventually(t, 20*time.Second, "twenty sends to "+dst, func() bool {
				a, _ := actor.AskAs[alarm](ctx, h2, aref(dst), "get", nil)
				return a.Fired >= 20
			})
			a, _ := actor.AskAs[alarm](ctx, h2, aref(dst), "get", nil)
			if a.Fired != 20 {
				t.Fatalf("%s received %d sends, want exactly 20", dst, a.Fired)
			}
			for i, g := range a.Got {
				if g != fmt.Sprintf("src#%d", i+1) {
					t.Fatalf("%s received out of order: %v", dst, a.Got)
				}
			}
		}
		if _, err := h1.Ask(ctx, aref("src"), "bad_send", nil); !errors.Is(err, actor.ErrDeadLetter) || !contains(err.Error(), "unknown actor type") {
			t.Fatalf("a send to an unregistered type: %v", err)
		}
	})
	concurrent["SendToExactlyOnceInOrder"] = true

	scenario("ObservablesBroadcastAfterCommit", func(t *testing.T, be store.Backend) {
		h := newHost(t, be, ledgerRegistry(&hooks{}))
		ctx := ctxT(t)
		var mu sync.Mutex
		var got []string
		cancel, err := h.Subscribe(ctx, lref("obs"), func(b host.Broadcast) {
			mu.Lock()
			got = append(got, b.Name+"="+string(b.Value))
			mu.Unlock()
		})
		if err != nil {
			t.Fatal(err)
		}
		defer cancel()
		if _, err := h.Ask(ctx, lref("obs"), "add", addArgs{N: 2}); err != nil {
			t.Fatal(err)
		}
		if _, err := h.Ask(ctx, lref("obs"), "set_status", "open"); err != nil {
			t.Fatal(err)
		}
		if _, err := h.Ask(ctx, lref("obs"), "set_status", "open"); err != nil { // no change: no broadcast
			t.Fatal(err)
		}
		eventually(t, 10*time.Second, "two broadcasts", func() bool {
			mu.Lock()
			defer mu.Unlock()
			return len(got) >= 2
		})
		time.Sleep(100 * time.Millisecond)
		mu.Lock()
		list := fmt.Sprint(got)
		mu.Unlock()
		if list != `[count=2 status="open"]` {
			t.Fatalf("broadcasts = %s", list)
		}
		cur, _, err := h.Observe(ctx, lref("obs"))
		if err != nil || string(cur["count"]) != "2" || string(cur["status"]) != `"open"` {
			t.Fatalf("current observables = %v, %v", cur, err)
		}
	})

	scenario("DirectoryAndRetention", func(t *testing.T, be store.Backend) {
		h := newHost(t, be, ledgerRegistry(&hooks{}))
		ctx := ctxT(t)
		for i, st := range []string{"submitted", "draft", "submitted"} {
			if _, err := h.Ask(ctx, lref(fmt.Sprintf("dir%d", i)), "set_status", st); err != nil {
				t.Fatal(err)
			}
		}
		list, err := h.Actors(ctx, store.ActorListParams{Type: ledgerType, Filter: &store.StateFilter{Path: "status", Value: "submitted"}})
		if err != nil || len(list) != 2 || list[0].Ref.ID != "dir0" || list[1].Ref.ID != "dir2" {
			t.Fatalf("directory = %+v, %v", list, err)
		}
		time.Sleep(50 * time.Millisecond)
		res, err := be.Prune(ctx, &store.PruneParams{Keep: 10 * time.Millisecond, Limit: 100})
		if err != nil || res.Messages < 3 {
			t.Fatalf("prune = %+v, %v", res, err)
		}
		if l := getLedger(t, h, lref("dir0")); l.Status != "submitted" {
			t.Fatal("pruning history changed state")
		}
	})
}
