package host_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/ductus/ductus/actor"
	"github.com/ductus/ductus/runtime/host"
)

// Define an actor type, then Tell it messages and Ask it a query. Tell
// returns once the message is committed; Ask waits for the answer. One
// actor's messages run one at a time, in the order they were told.
func Example() {
	reg := actor.NewRegistry()
	reg.MustRegister(counterType())
	h, stop := startHost(host.Config{Registry: reg})
	defer stop()

	ctx := context.Background()
	visits := actor.Ref{Type: "counter", ID: "visits"}
	for _, n := range []int{2, 3} {
		if _, err := h.Tell(ctx, visits, "add", n); err != nil {
			fmt.Println(err)
		}
	}
	total, err := actor.AskAs[int](ctx, h, visits, "total", nil)
	fmt.Println(total, err)
	// Output: 5 <nil>
}

// TellBatch enqueues messages for many actors in one transaction: all of
// them or none.
func ExampleHost_TellBatch() {
	reg := actor.NewRegistry()
	reg.MustRegister(counterType())
	h, stop := startHost(host.Config{Registry: reg})
	defer stop()

	ctx := context.Background()
	var batch []actor.Envelope
	for i, id := range []string{"a", "b", "c"} {
		batch = append(batch, actor.Envelope{Ref: actor.Ref{Type: "counter", ID: id}, Message: "add", Args: i + 1})
	}
	ids, err := h.TellBatch(ctx, batch)
	fmt.Println(len(ids), "messages,", err)

	// A bad message refuses the whole batch, before anything is written.
	batch = append(batch, actor.Envelope{Ref: actor.Ref{Type: "counter", ID: "d"}, Message: "subtract", Args: 1})
	_, err = h.TellBatch(ctx, batch)
	fmt.Println(errors.Is(err, actor.ErrUnknownMessage))

	for _, id := range []string{"a", "b", "c", "d"} {
		total, _ := actor.AskAs[int](ctx, h, actor.Ref{Type: "counter", ID: id}, "total", nil)
		fmt.Println(id, total)
	}
	// Output:
	// 3 messages, <nil>
	// true
	// a 1
	// b 2
	// c 3
	// d 0
}

// An ordered effect: the turn stages it with Emit, the runtime runs the
// handler registered under its name after the commit. Ordered (set at
// registration) makes one actor's effects run one at a time in staging
// order: parcel 2 waits while parcel 1 fails and is retried. The effect's
// ID is the same on every attempt (give it to the courier as an
// idempotency key), and Generation is a fencing token the courier can
// compare with the highest it has seen.
func ExampleEffect() {
	var mu sync.Mutex
	var log []string
	firstID := map[string]string{}
	book := func(ctx context.Context, ec host.EffectContext, parcel string) (string, error) {
		mu.Lock()
		defer mu.Unlock()
		if ec.Attempt == 1 {
			firstID[parcel] = ec.ID
		}
		if parcel == "p1" && ec.Attempt == 1 {
			log = append(log, fmt.Sprintf("%s attempt %d: courier busy", parcel, ec.Attempt))
			return "", errors.New("courier busy")
		}
		log = append(log, fmt.Sprintf("%s attempt %d: booked (ordered %v, same ID as attempt 1 %v, fencing token set %v)",
			parcel, ec.Attempt, ec.Ordered, ec.ID == firstID[parcel], ec.Generation > 0))
		return "booking-" + parcel, nil
	}

	reg := actor.NewRegistry()
	reg.MustRegister(&actor.Type[struct{}]{
		Name: "shipment",
		Messages: map[string]actor.Handler[struct{}]{
			"ship": actor.Message(func(c *actor.Context, _ *struct{}, parcels []string) (int, error) {
				for _, p := range parcels {
					if err := c.Emit("courier.book", p); err != nil {
						return 0, err
					}
				}
				return len(parcels), nil
			}),
		},
	})
	h, stop := startHost(host.Config{Registry: reg, Effects: map[string]host.Effect{
		"courier.book": {
			Handler: host.EffectFunc(book),
			Ordered: true,
			Retry:   host.RetryPolicy{MaxAttempts: 5, Base: 10 * time.Millisecond, Max: 10 * time.Millisecond},
		},
	}})
	defer stop()

	if _, err := h.Tell(context.Background(), actor.Ref{Type: "shipment", ID: "s1"}, "ship", []string{"p1", "p2"}); err != nil {
		fmt.Println(err)
	}
	waitIdle(h, host.BacklogQuery{Type: "shipment"})
	mu.Lock()
	defer mu.Unlock()
	for _, l := range log {
		fmt.Println(l)
	}
	// Output:
	// p1 attempt 1: courier busy
	// p1 attempt 2: booked (ordered true, same ID as attempt 1 true, fencing token set true)
	// p2 attempt 1: booked (ordered true, same ID as attempt 1 true, fencing token set true)
}

// A cron reminder: the turn schedules it, the runtime delivers its message
// at each occurrence (in database time), across restarts and processes,
// once per occurrence.
func Example_cronReminder() {
	reg := actor.NewRegistry()
	reg.MustRegister(&actor.Type[struct{}]{
		Name: "report",
		Messages: map[string]actor.Handler[struct{}]{
			"start": actor.Message(func(c *actor.Context, _ *struct{}, _ struct{}) (bool, error) {
				return true, c.Schedule("daily", actor.Cron("0 6 * * *", "UTC"), "run", nil)
			}),
			"run": actor.Message(func(c *actor.Context, _ *struct{}, _ struct{}) (bool, error) {
				// Info().Due is the occurrence's scheduled time.
				return true, nil
			}),
		},
	})
	h, stop := startHost(host.Config{Registry: reg})
	defer stop()

	ctx := context.Background()
	ref := actor.Ref{Type: "report", ID: "sales"}
	if _, err := h.Ask(ctx, ref, "start", nil); err != nil {
		fmt.Println(err)
	}
	rs, err := h.Reminders(ctx, host.ReminderQuery{Ref: ref})
	if err != nil || len(rs) != 1 {
		fmt.Println(rs, err)
		return
	}
	r := rs[0]
	fmt.Println(r.Name, r.Message, r.Schedule.Cron, r.NextAt.UTC().Format("15:04"))
	// Output: daily run 0 6 * * * 06:00
}

// SendTo stages a message to another actor; it is delivered after the
// turn commits, exactly once, in the order the sender staged its sends.
// Until then it shows as the sender's Sends and the target's Incoming.
func ExampleHost_Backlog_sendTo() {
	reg := actor.NewRegistry()
	reg.MustRegister(counterType())
	reg.MustRegister(&actor.Type[struct{}]{
		Name: "order",
		Messages: map[string]actor.Handler[struct{}]{
			"place": actor.Message(func(c *actor.Context, _ *struct{}, amount int) (bool, error) {
				return true, c.SendTo(actor.Ref{Type: "counter", ID: "revenue"}, "add", amount)
			}),
		},
	})
	h, stop := startHost(host.Config{Registry: reg})
	defer stop()

	ctx := context.Background()
	for i, amount := range []int{30, 12} {
		if _, err := h.Tell(ctx, actor.Ref{Type: "order", ID: fmt.Sprint("o", i)}, "place", amount); err != nil {
			fmt.Println(err)
		}
	}
	waitIdle(h, host.BacklogQuery{})
	revenue, err := actor.AskAs[int](ctx, h, actor.Ref{Type: "counter", ID: "revenue"}, "total", nil)
	fmt.Println(revenue, err)
	// Output: 42 <nil>
}

// An observable is a named projection of state; a commit that changes its
// value broadcasts it to subscribers (in this process and every other one
// on the database).
func ExampleHost_Subscribe() {
	type room struct{ People []string }
	reg := actor.NewRegistry()
	reg.MustRegister(&actor.Type[room]{
		Name: "room",
		Messages: map[string]actor.Handler[room]{
			"join": actor.Message(func(c *actor.Context, s *room, who string) (int, error) {
				s.People = append(s.People, who)
				return len(s.People), nil
			}),
		},
		Observables: map[string]func(*room) any{"count": func(s *room) any { return len(s.People) }},
	})
	h, stop := startHost(host.Config{Registry: reg})
	defer stop()

	ctx := context.Background()
	lobby := actor.Ref{Type: "room", ID: "lobby"}
	got := make(chan host.Broadcast, 8)
	unsubscribe, err := h.Subscribe(ctx, lobby, func(b host.Broadcast) { got <- b })
	if err != nil {
		fmt.Println(err)
		return
	}
	defer unsubscribe()
	// Ask waits for each commit: two Tells could run in one turn, whose
	// commit broadcasts only the final value.
	for _, who := range []string{"ann", "bob"} {
		if _, err := h.Ask(ctx, lobby, "join", who); err != nil {
			fmt.Println(err)
		}
	}
	for range 2 {
		select {
		case b := <-got:
			fmt.Println(b.Ref.ID, b.Name, string(b.Value))
		case <-time.After(30 * time.Second):
			fmt.Println("no broadcast")
		}
	}
	// Output:
	// lobby count 1
	// lobby count 2
}

// A state migration: version 2 of a type splits a field. Actors stored at
// version 1 are migrated in memory when they next activate, and written
// back at version 2 with their next commit. Run DryRunMigration before a
// deploy to find stored states that do not migrate.
func Example_stateMigration() {
	type personV1 struct {
		Name string `json:"name"`
	}
	type personV2 struct {
		First string `json:"first"`
		Last  string `json:"last"`
	}
	v1 := &actor.Type[personV1]{
		Name: "person",
		Messages: map[string]actor.Handler[personV1]{
			"rename": actor.Message(func(c *actor.Context, s *personV1, name string) (bool, error) { s.Name = name; return true, nil }),
		},
	}
	v2 := &actor.Type[personV2]{
		Name:         "person",
		StateVersion: 2,
		Migrations: []actor.Migration{{From: 1, To: 2, Fn: actor.MigrateObject(func(m map[string]any) error {
			first, last, _ := cutSpace(fmt.Sprint(m["name"]))
			m["first"], m["last"] = first, last
			delete(m, "name")
			return nil
		})}},
		Messages: map[string]actor.Handler[personV2]{
			"get": actor.Query(func(c *actor.Context, s *personV2, _ struct{}) (personV2, error) { return *s, nil }),
		},
	}
	ctx := context.Background()
	ada := actor.Ref{Type: "person", ID: "ada"}

	// The old release stores a version 1 state ...
	reg1 := actor.NewRegistry()
	reg1.MustRegister(v1)
	old, stop := startHost(host.Config{Registry: reg1})
	if _, err := old.Ask(ctx, ada, "rename", "Ada Lovelace"); err != nil {
		fmt.Println(err)
	}
	// ... the new release, on the same database, checks and reads it.
	reg2 := actor.NewRegistry()
	reg2.MustRegister(v2)
	if err := old.Shutdown(ctx); err != nil {
		fmt.Println(err)
	}
	h, err := host.New(host.Config{Backend: old.Backend(), Registry: reg2})
	if err != nil {
		fmt.Println(err)
		return
	}
	if err := h.Start(ctx); err != nil {
		fmt.Println(err)
	}
	defer stop()
	defer h.Shutdown(ctx)
	report, err := h.DryRunMigration(ctx, "person", nil)
	if err != nil {
		fmt.Println(err)
	}
	fmt.Println(report)
	p, err := actor.AskAs[personV2](ctx, h, ada, "get", nil)
	fmt.Printf("%+v %v\n", p, err)
	// Output:
	// person: 1 checked, 0 current, 1 would migrate, 0 fail
	// {First:Ada Last:Lovelace} <nil>
}

func cutSpace(s string) (string, string, bool) {
	for i, r := range s {
		if r == ' ' {
			return s[:i], s[i+1:], true
		}
	}
	return s, "", false
}

// The operator calls: a failing message is retried with back-off, then
// dead-lettered; pausing an actor holds its mailbox; SkipHead dead-letters
// a message that blocks the rest; a dead letter is retried at the tail of
// its actor's mailbox once the cause is fixed.
func ExampleHost_RetryDeadLetter() {
	var mu sync.Mutex
	fixed := false
	reg := actor.NewRegistry()
	reg.MustRegister(&actor.Type[Counter]{
		Name: "importer",
		Messages: map[string]actor.Handler[Counter]{
			"import": actor.Message(func(c *actor.Context, s *Counter, file string) (int, error) {
				mu.Lock()
				defer mu.Unlock()
				if file == "bad.csv" && !fixed {
					return 0, errors.New("bad.csv: column 3 is not a date")
				}
				s.Total++
				return s.Total, nil
			}),
			"imported": actor.Query(func(c *actor.Context, s *Counter, _ struct{}) (int, error) { return s.Total, nil }),
		},
	})
	h, stop := startHost(host.Config{Registry: reg,
		Retry: host.RetryPolicy{MaxAttempts: 2, Base: 10 * time.Millisecond, Max: 10 * time.Millisecond}})
	defer stop()
	ctx := context.Background()
	daily := actor.Ref{Type: "importer", ID: "daily"}

	// Two attempts, then a dead letter; Ask reports it.
	_, err := h.Ask(ctx, daily, "import", "bad.csv")
	var dl *actor.DeadLetterError
	fmt.Println("dead-lettered:", errors.As(err, &dl))
	dead, _ := h.DeadLetters(ctx, host.DeadLetterQuery{Type: "importer"})
	fmt.Println(len(dead), dead[0].Attempts, dead[0].Error)

	// Paused: messages are stored but nothing runs.
	if _, err := h.Pause(ctx, daily); err != nil {
		fmt.Println(err)
	}
	if _, err := h.Tell(ctx, daily, "import", "stale.csv"); err != nil {
		fmt.Println(err)
	}
	n, _ := h.Backlog(ctx, host.BacklogQuery{Type: "importer", ID: "daily"})
	fmt.Println("paused, pending:", n.Messages)
	// Skip the unwanted head message and resume.
	if _, err := h.SkipHead(ctx, daily, "superseded"); err != nil {
		fmt.Println(err)
	}
	if _, err := h.Resume(ctx, daily); err != nil {
		fmt.Println(err)
	}

	// The cause is fixed: retry the first dead letter.
	mu.Lock()
	fixed = true
	mu.Unlock()
	if _, err := h.RetryDeadLetter(ctx, dead[0].Message); err != nil {
		fmt.Println(err)
	}
	waitIdle(h, host.BacklogQuery{Type: "importer"})
	imported, _ := actor.AskAs[int](ctx, h, daily, "imported", nil)
	dead, _ = h.DeadLetters(ctx, host.DeadLetterQuery{Type: "importer"})
	fmt.Println("imported:", imported, "dead letters left:", len(dead), dead[0].Error)
	// Output:
	// dead-lettered: true
	// 1 2 actor: importer/"daily" message "import" failed: bad.csv: column 3 is not a date
	// paused, pending: 1
	// imported: 1 dead letters left: 1 skipped by an operator: superseded
}
