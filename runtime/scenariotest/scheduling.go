package scenariotest

import (
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/ductus/ductus/actor"
	"github.com/ductus/ductus/internal/testutil"
	"github.com/ductus/ductus/runtime/host"
	"github.com/ductus/ductus/runtime/store"
	"github.com/ductus/ductus/runtime/store/storetest"
)

type alarm struct {
	Fired   int      `json:"fired"`
	Got     []string `json:"got,omitempty"`
	Forward string   `json:"forward,omitempty"`
	// Dues are the ticks' TurnInfo.Due (Unix microseconds): the nominal
	// time of each reminder occurrence.
	Dues  []int64 `json:"dues,omitempty"`
	Pings int     `json:"pings,omitempty"`
}

// scheduleArgs sets a reminder with every option the schedule has.
type scheduleArgs struct {
	Name     string        `json:"name"`
	Every    time.Duration `json:"every,omitempty"`
	Start    time.Time     `json:"start,omitzero"`
	Jitter   time.Duration `json:"jitter,omitempty"`
	CatchUp  string        `json:"catch_up,omitempty"`
	Cron     string        `json:"cron,omitempty"`
	TimeZone string        `json:"tz,omitempty"`
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
		"schedule": actor.Message(func(c *actor.Context, s *alarm, a scheduleArgs) (any, error) {
			sc := actor.Schedule{Every: a.Every, Start: a.Start, Jitter: a.Jitter, CatchUp: actor.CatchUp(a.CatchUp), Cron: a.Cron, TimeZone: a.TimeZone}
			return nil, c.Schedule(a.Name, sc, "tick", map[string]string{"from": a.Name})
		}),
		"cancel": actor.Message(func(c *actor.Context, s *alarm, name string) (any, error) { return nil, c.CancelReminder(name) }),
		"tick": actor.Message(func(c *actor.Context, s *alarm, a map[string]string) (int, error) {
			s.Fired++
			s.Got = append(s.Got, a["from"])
			s.Dues = append(s.Dues, c.Info().Due.UnixMicro())
			return s.Fired, nil
		}),
		// pingself keeps a send to itself in the outbox at all times.
		"pingself": actor.Message(func(c *actor.Context, s *alarm, _ struct{}) (any, error) {
			s.Pings++
			return nil, c.SendTo(c.Ref(), "pingself", nil)
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
		ctx := testutil.Context(t)
		if _, err := h.Ask(ctx, aref("r"), "every", 100); err != nil {
			t.Fatal(err)
		}
		if _, err := h.Ask(ctx, aref("r"), "at", 50); err != nil {
			t.Fatal(err)
		}
		testutil.Eventually(t, 10*time.Second, "several occurrences", func() bool {
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
		rs, err := h.Reminders(ctx, host.ReminderQuery{Ref: aref("r")})
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
		ctx := testutil.Context(t)
		for i := 0; i < 10; i++ {
			if _, err := h1.Ask(ctx, aref(fmt.Sprintf("s%d", i)), "every", 50); err != nil {
				t.Fatal(err)
			}
		}
		time.Sleep(time.Second)
		// Stop both schedulers, then compare: every occurrence the reminder
		// counted is exactly one mailbox row (a tick run, or one still
		// waiting), and no nominal time was delivered twice.
		for _, h := range []*host.Host{h1, h2} {
			if err := h.Shutdown(ctx); err != nil {
				t.Fatal(err)
			}
		}
		for i := 0; i < 10; i++ {
			r := aref(fmt.Sprintf("s%d", i))
			rs, info, err := storetest.SettledReminders(ctx, be, r)
			if err != nil || len(rs) != 1 {
				t.Fatalf("%s: reminders %+v, %v", r.ID, rs, err)
			}
			var a alarm
			if err := json.Unmarshal(info.State, &a); err != nil {
				t.Fatal(err)
			}
			if rs[0].Occurrence == 0 || int64(a.Fired+info.Unfinished) != rs[0].Occurrence {
				t.Fatalf("%s: %d occurrences fired, but %d ticks ran and %d wait: want one mailbox row per occurrence",
					r.ID, rs[0].Occurrence, a.Fired, info.Unfinished)
			}
			seen := map[int64]bool{}
			for _, d := range a.Dues {
				if seen[d] {
					t.Fatalf("%s: the occurrence due at %s ran twice: %v", r.ID, time.UnixMicro(d).UTC(), a.Dues)
				}
				seen[d] = true
			}
		}
	})
	concurrent["TwoSchedulersOneRowPerOccurrence"] = true

	scenario("DestroyedActorNotRecreatedByReminderOrSend", func(t *testing.T, be store.Backend) {
		h := newHost(t, be, alarmRegistry())
		ctx := testutil.Context(t)
		// Each doomed actor has a reminder due every 5ms and a send to
		// itself always in its outbox; the destroys race both.
		var doomed []actor.Ref
		for i := 0; i < 8; i++ {
			r := aref(fmt.Sprintf("doomed%d", i))
			doomed = append(doomed, r)
			if _, err := h.Ask(ctx, r, "every", 5); err != nil {
				t.Fatal(err)
			}
			if _, err := h.Tell(ctx, r, "pingself", nil); err != nil {
				t.Fatal(err)
			}
		}
		testutil.Eventually(t, 10*time.Second, "ticks and pings on every doomed actor", func() bool {
			for _, r := range doomed {
				a, err := actor.AskAs[alarm](ctx, h, r, "get", nil)
				if err != nil || a.Fired == 0 || a.Pings < 2 {
					return false
				}
			}
			return true
		})
		var wg sync.WaitGroup
		for _, r := range doomed {
			wg.Add(1)
			go func() {
				defer wg.Done()
				if _, err := h.Destroy(ctx, r); err != nil {
					t.Error(err)
				}
			}()
		}
		wg.Wait()
		time.Sleep(300 * time.Millisecond) // the reminder, outbox and effect workers run several passes
		for _, r := range doomed {
			if a, err := be.ActorGet(ctx, r); !errors.Is(err, actor.ErrNotFound) {
				t.Fatalf("%s came back after its destroy: %+v, %v", r.ID, a, err)
			}
		}
		// A send to a destroyed actor addresses its identity: it reaches a
		// fresh incarnation, never the destroyed one's state.
		if _, err := h.Ask(ctx, aref("gone"), "every", 3_600_000); err != nil {
			t.Fatal(err)
		}
		if _, err := h.Ask(ctx, aref("gone"), "tick", map[string]string{"from": "before"}); err != nil {
			t.Fatal(err)
		}
		if _, err := h.Destroy(ctx, aref("gone")); err != nil {
			t.Fatal(err)
		}
		if _, err := h.Ask(ctx, aref("src"), "relay", map[string]any{"to": []string{"gone"}, "n": 1}); err != nil {
			t.Fatal(err)
		}
		testutil.Eventually(t, 10*time.Second, "the send to the destroyed actor", func() bool {
			a, err := actor.AskAs[alarm](ctx, h, aref("gone"), "get", nil)
			return err == nil && a.Fired > 0
		})
		a, _ := actor.AskAs[alarm](ctx, h, aref("gone"), "get", nil)
		if a.Fired != 1 || a.Got[0] != "src#1" {
			t.Fatalf("the send reached %+v, want a fresh incarnation with only that send", a)
		}
		if rs, _ := be.ReminderList(ctx, aref("gone")); len(rs) != 0 {
			t.Fatalf("the fresh incarnation inherited reminders: %+v", rs)
		}
	})

	scenario("SendToExactlyOnceInOrder", func(t *testing.T, be store.Backend) {
		h1 := newHost(t, be, alarmRegistry())
		h2 := newHost(t, be, alarmRegistry())
		ctx := testutil.Context(t)
		var wg sync.WaitGroup
		for i := 1; i <= 20; i++ {
			if _, err := h1.Tell(ctx, aref("src"), "relay", map[string]any{"to": []string{"dst1", "dst2"}, "n": i}); err != nil {
				t.Fatal(err)
			}
		}
		wg.Wait()
		for _, dst := range []string{"dst1", "dst2"} {
			testutil.Eventually(t, 20*time.Second, "twenty sends to "+dst, func() bool {
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
		ctx := testutil.Context(t)
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
		testutil.Eventually(t, 10*time.Second, "two broadcasts", func() bool {
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
		ctx := testutil.Context(t)
		for i, st := range []string{"submitted", "draft", "submitted"} {
			if _, err := h.Ask(ctx, lref(fmt.Sprintf("dir%d", i)), "set_status", st); err != nil {
				t.Fatal(err)
			}
		}
		list, err := h.Actors(ctx, host.ActorQuery{Type: ledgerType, Where: &host.StateMatch{Path: "status", Value: "submitted"}})
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
