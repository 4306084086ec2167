package postgres

import (
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/ductus/ductus/actor"
	"github.com/ductus/ductus/internal/testutil"
	"github.com/ductus/ductus/runtime/store"
)

// TestDestroyRacesChildWriters destroys actors while other transactions
// work on rows hanging off them (reminder fires, effect outcomes, outbox
// deliveries, lane claims, turns). Every transaction locks the actor before
// its rows, so none of them may fail with a deadlock: every call must
// succeed or be refused cleanly (a lost activation).
func TestDestroyRacesChildWriters(t *testing.T) {
	need(t)
	if testing.Short() {
		t.Skip("a stress test")
	}
	b := openSchema(t, newSchema(), nil)
	ctx := testutil.Context(t)
	const rounds = 30
	for round := 0; round < rounds; round++ {
		r := actor.Ref{Type: "d", ID: fmt.Sprintf("x%d", round)}
		// A turn that stages everything: a due reminder, ordered and
		// unordered effects with outcomes, and a send to itself.
		if _, err := b.MailboxEnqueue(ctx, nil, &store.MailboxEnqueueParams{Messages: []store.NewMessage{{Ref: r, Name: "m"}, {Ref: r, Name: "m"}}}); err != nil {
			t.Fatal(err)
		}
		ls, err := b.LeaseClaim(ctx, &store.LeaseClaimParams{Owner: "w", TTL: time.Minute, Limit: 1, Types: []string{"d"}})
		if err != nil || len(ls) != 1 {
			t.Fatal(ls, err)
		}
		l := ls[0].LeaseRef
		msgs, err := b.MessageTake(ctx, &store.MessageTakeParams{Owner: "w", Lease: l, Limit: 1})
		if err != nil || len(msgs) != 1 {
			t.Fatal(msgs, err)
		}
		fx := func(ordered bool, i int) store.NewEffect {
			return store.NewEffect{UUID: fmt.Sprintf("%d-%v-%d", round, ordered, i), Name: "fx", Args: []byte(`{}`), Ordered: ordered, MessageID: msgs[0].ID, OnSuccess: "done"}
		}
		if _, err := b.TurnCommit(ctx, &store.TurnCommitParams{Owner: "w", Lease: l, Completed: completions(msgs),
			Effects:   []store.NewEffect{fx(true, 1), fx(true, 2), fx(false, 1)},
			Sends:     []store.NewSend{{To: r, Message: "m", Args: []byte(`{}`)}, {To: actor.Ref{Type: "d", ID: "other"}, Message: "m", Args: []byte(`{}`)}},
			Reminders: []store.ReminderChange{{Name: "tick", Message: "tick", Args: []byte(`{}`), Schedule: []byte(`{}`)}}}); err != nil {
			t.Fatal(err)
		}
		var wg sync.WaitGroup
		errs := make(chan error, 16)
		run := func(what string, fn func() error) {
			wg.Add(1)
			go func() {
				defer wg.Done()
				if err := fn(); err != nil {
					errs <- fmt.Errorf("%s: %w", what, err)
				}
			}()
		}
		run("reminders", func() error {
			rs, err := b.ReminderClaim(ctx, &store.ReminderClaimParams{Owner: "s", TTL: time.Minute, Limit: 10, Types: []string{"d"}})
			if err != nil {
				return err
			}
			var fires []store.ReminderFire
			for _, x := range rs {
				fires = append(fires, store.ReminderFire{ID: x.ID, Occurrence: x.Occurrence + 1, Message: store.NewMessage{Ref: x.Ref, Name: x.Message, Args: x.Args}, Next: x.Now.Add(time.Hour)})
			}
			return b.ReminderFire(ctx, &store.ReminderFireParams{Owner: "s", Fires: fires})
		})
		run("effects", func() error {
			es, err := b.EffectClaim(ctx, &store.EffectClaimParams{Owner: "e", TTL: time.Minute, Limit: 10, Names: []string{"fx"}, OrderedRun: 2})
			if err != nil {
				return err
			}
			var outs []store.EffectOutcome
			for _, e := range es {
				outs = append(outs, store.EffectOutcome{ID: e.ID, Attempt: e.Attempt, Success: true,
					Outcome: &store.NewMessage{Ref: e.Ref, Name: "done", Args: []byte(`{}`), MustExist: true, System: true}})
			}
			return b.EffectFinish(ctx, &store.EffectFinishParams{Owner: "e", Outcomes: outs})
		})
		run("sends", func() error {
			rows, err := b.OutboxClaim(ctx, &store.OutboxClaimParams{Owner: "o", TTL: time.Minute, Limit: 10})
			if err != nil {
				return err
			}
			_, err = b.OutboxDeliver(ctx, &store.OutboxDeliverParams{Owner: "o", Rows: rows})
			return err
		})
		run("turn", func() error {
			rest, err := b.MessageTake(ctx, &store.MessageTakeParams{Owner: "w", Lease: l, Limit: 10})
			if err != nil {
				return nil // the destroy came first
			}
			_, err = b.TurnCommit(ctx, &store.TurnCommitParams{Owner: "w", Lease: l, Completed: completions(rest)})
			if err != nil && !isLost(err) {
				return err
			}
			return nil
		})
		run("destroy", func() error {
			time.Sleep(time.Duration(round%5) * time.Millisecond)
			_, err := b.ActorDestroy(ctx, r)
			return err
		})
		wg.Wait()
		close(errs)
		for err := range errs {
			t.Errorf("round %d: %v", round, err)
		}
		if _, err := b.ActorGet(ctx, r); err == nil {
			// A send to itself or an outcome delivered after the destroy
			// may not recreate it (MustExist); a send may (it is a new
			// message from another actor's point of view), so only check
			// that a recreated actor is a fresh incarnation.
			if a, _ := b.ActorGet(ctx, r); a.Generation != 0 {
				t.Errorf("round %d: the destroyed incarnation survived: %+v", round, a)
			}
		}
	}
}

func isLost(err error) bool { return errors.Is(err, actor.ErrLostActivation) }
