package storetest

import (
	"errors"
	"reflect"
	"testing"
	"time"

	"github.com/ductus/ductus/actor"
	"github.com/ductus/ductus/internal/testutil"
	"github.com/ductus/ductus/runtime/store"
)

// backlog counts the scope (typ, id) and fails the test on an error.
func backlog(t *testing.T, b store.Backend, typ, id string) store.Backlog {
	t.Helper()
	n, err := b.BacklogCount(testutil.Context(t), &store.BacklogCountParams{Type: typ, ID: id})
	if err != nil {
		t.Fatalf("backlog of %q/%q: %v", typ, id, err)
	}
	return n
}

// wantBacklog compares the scopes' counts with the table's.
func wantBacklog(t *testing.T, b store.Backend, step string, want map[[2]string]store.Backlog) {
	t.Helper()
	for scope, w := range want {
		if got := backlog(t, b, scope[0], scope[1]); got != w {
			t.Errorf("%s: backlog of %q/%q = %+v, want %+v", step, scope[0], scope[1], got, w)
		}
	}
}

var countTests = map[string]func(*testing.T, store.Backend){
	"EmptyIsIdle": func(t *testing.T, b store.Backend) {
		for _, scope := range [][2]string{{"", ""}, {typeA, ""}, {typeA, "nobody"}} {
			if n := backlog(t, b, scope[0], scope[1]); n != (store.Backlog{}) || !n.Idle() {
				t.Errorf("backlog of %q/%q on an empty backend = %+v (idle %v)", scope[0], scope[1], n, n.Idle())
			}
		}
	},
	"IDWithoutType": func(t *testing.T, b store.Backend) {
		_, err := b.BacklogCount(testutil.Context(t), &store.BacklogCountParams{ID: "x"})
		if !errors.Is(err, actor.ErrInvalidArguments) {
			t.Fatalf("an ID without a type: %v, want ErrInvalidArguments", err)
		}
	},
	// ByActor lists a type's actors with their unfinished and dead work in
	// one call: ready and running messages, ordered and unordered pending
	// effects, dead letters and dead effects count; completed messages and
	// done effects do not, an actor with only history is left out, and an
	// actor of another type (even of the same ID) never mixes in.
	"ByActor": func(t *testing.T, b store.Backend) {
		ctx := testutil.Context(t)
		a1, b1 := ref("a1"), actor.Ref{Type: typeB, ID: "a1"}
		// a1: one ordered and one unordered effect stay pending, one is
		// done and one dead; the staging message is completed.
		stageEffects(t, b, a1, store.NewEffect{UUID: uuid(), Name: "fx", Ordered: true},
			store.NewEffect{UUID: uuid(), Name: "fx"},
			store.NewEffect{UUID: uuid(), Name: "finish"}, store.NewEffect{UUID: uuid(), Name: "finish"})
		owner := newOwner()
		fx, err := b.EffectClaim(ctx, &store.EffectClaimParams{Owner: owner, TTL: time.Minute, Limit: 10, Names: []string{"finish"}, OrderedRun: 1})
		if err != nil || len(fx) != 2 {
			t.Fatalf("claimed %d effects to finish, %v; want 2", len(fx), err)
		}
		finish(t, b, owner, store.EffectOutcome{ID: fx[0].ID, Attempt: fx[0].Attempt, Success: true},
			store.EffectOutcome{ID: fx[1].ID, Attempt: fx[1].Attempt, Error: "refused", Dead: true})
		deadLetter(t, b, ref("a2"))
		// a4 has only completed messages.
		enqueueN(t, b, ref("a4"), 2)
		l := claimOne(t, b, owner, ref("a4"))
		runAll(t, b, owner, l)
		if err := b.LeaseRelease(ctx, &store.LeaseReleaseParams{Owner: owner, Leases: []store.LeaseRef{l.LeaseRef}}); err != nil {
			t.Fatal(err)
		}
		// The other type: a pending effect and a dead letter.
		stageEffects(t, b, b1, store.NewEffect{UUID: uuid(), Name: "fx"})
		deadLetter(t, b, actor.Ref{Type: typeB, ID: "b2"})
		// a3: one message running (claimed), two ready.
		enqueueN(t, b, ref("a3"), 3)
		l = claimOne(t, b, owner, ref("a3"))
		if n := len(take(t, b, owner, l, 1)); n != 1 {
			t.Fatalf("took %d messages, want 1", n)
		}
		// Everything above was queued before mark; a5's one message after.
		time.Sleep(2 * time.Millisecond)
		mark := time.Now()
		time.Sleep(2 * time.Millisecond)
		enqueueN(t, b, a1, 2)
		enqueueN(t, b, b1, 1)
		enqueueN(t, b, ref("a5"), 1)

		for typ, want := range map[string][]store.ActorBacklog{
			typeA: {
				{ID: "a1", Messages: 2, Effects: 2, DeadEffects: 1},
				{ID: "a2", DeadLetters: 1},
				{ID: "a3", Messages: 3},
				{ID: "a5", Messages: 1},
			},
			typeB: {
				{ID: "a1", Messages: 1, Effects: 1},
				{ID: "b2", DeadLetters: 1},
			},
			"storetest.none": nil,
		} {
			got, err := b.BacklogByActor(ctx, &store.BacklogByActorParams{Type: typ})
			if err != nil {
				t.Fatalf("backlog by actor of %q: %v", typ, err)
			}
			// Oldest: the earliest pending message or effect, zero for an
			// actor with only dead work; a5's came after mark, the others'
			// first pending work before it.
			for i := range got {
				g := &got[i]
				switch {
				case g.Messages+g.Effects == 0:
					if !g.Oldest.IsZero() {
						t.Errorf("%s %s has nothing pending, yet its oldest pending is %v", typ, g.ID, g.Oldest)
					}
				case g.ID == "a5":
					if g.Oldest.Before(mark) || g.Oldest.After(time.Now()) {
						t.Errorf("%s a5's oldest pending is %v, want between %v and now", typ, g.Oldest, mark)
					}
				case !g.Oldest.Before(mark) || g.Oldest.Before(mark.Add(-time.Minute)):
					t.Errorf("%s %s's oldest pending is %v, want shortly before %v", typ, g.ID, g.Oldest, mark)
				}
				g.Oldest = time.Time{}
			}
			if len(got) != len(want) || len(want) > 0 && !reflect.DeepEqual(got, want) {
				t.Errorf("backlog by actor of %q = %+v, want %+v", typ, got, want)
			}
		}
		if _, err := b.BacklogByActor(ctx, &store.BacklogByActorParams{}); !errors.Is(err, actor.ErrInvalidArguments) {
			t.Fatalf("backlog by actor without a type: %v, want ErrInvalidArguments", err)
		}
	},
	// WorkThroughItsLife follows one actor's work from enqueue to done and
	// checks every scope at each step: messages ready and running, an
	// effect, a send on its way (counted at its source and at its target),
	// a broadcast, a dead letter and a dead effect.
	"WorkThroughItsLife": func(t *testing.T, b store.Backend) {
		a, other, target := ref("a"), ref("o"), actor.Ref{Type: typeB, ID: "t"}
		enqueueN(t, b, a, 3)
		enqueueN(t, b, other, 1)
		all, typA, one := [2]string{"", ""}, [2]string{typeA, ""}, [2]string{typeA, "a"}
		typB, tgt := [2]string{typeB, ""}, [2]string{typeB, "t"}
		wantBacklog(t, b, "enqueued", map[[2]string]store.Backlog{
			all: {Messages: 4}, typA: {Messages: 4}, one: {Messages: 3}, typB: {}, tgt: {},
		})
		if u := actorInfo(t, b, a).Unfinished; u != 3 {
			t.Fatalf("the actor row counts %d unfinished, the backlog 3", u)
		}

		owner := newOwner()
		l := claimOne(t, b, owner, a)
		msgs := take(t, b, owner, l, 2) // running: still unfinished
		if len(msgs) != 2 {
			t.Fatalf("took %d messages, want 2", len(msgs))
		}
		wantBacklog(t, b, "two running", map[[2]string]store.Backlog{all: {Messages: 4}, one: {Messages: 3}})

		commit(t, b, &store.TurnCommitParams{Owner: owner, Lease: l.LeaseRef,
			Completed: completeAll(msgs[:1]),
			Failed:    &store.Failure{MessageID: msgs[1].ID, Attempt: msgs[1].Attempt, Error: "poison", Dead: true},
			Effects: []store.NewEffect{
				{UUID: "fx-1-" + owner, Name: "mail", Args: args(1), MessageID: msgs[0].ID},
				{UUID: "fx-2-" + owner, Name: "mail", Args: args(2), MessageID: msgs[0].ID},
			},
			Sends:      []store.NewSend{{To: target, Message: "hello", Args: args(nil)}},
			Broadcasts: []store.NewBroadcast{{Name: "count", Value: args(1)}},
		})
		wantBacklog(t, b, "committed", map[[2]string]store.Backlog{
			all:  {Messages: 2, Effects: 2, Sends: 1, Incoming: 1, Broadcasts: 1, DeadLetters: 1},
			typA: {Messages: 2, Effects: 2, Sends: 1, Broadcasts: 1, DeadLetters: 1},
			one:  {Messages: 1, Effects: 2, Sends: 1, Broadcasts: 1, DeadLetters: 1},
			typB: {Incoming: 1},
			tgt:  {Incoming: 1},
		})
		if n := backlog(t, b, typeB, "t"); n.Idle() {
			t.Fatal("an actor with a send on its way counts as idle")
		}

		// The effect list narrows to the actor and to the staging message.
		for _, p := range []store.EffectListParams{
			{State: store.EffectPending, Type: typeA, ID: "a"},
			{State: store.EffectPending, MessageID: msgs[0].ID},
		} {
			if fx, err := b.EffectList(testutil.Context(t), &p); err != nil || len(fx) != 2 {
				t.Fatalf("effects of %+v = %d, %v; want 2", p, len(fx), err)
			}
		}
		for _, p := range []store.EffectListParams{
			{State: store.EffectPending, Type: typeA, ID: "o"},
			{State: store.EffectPending, MessageID: msgs[1].ID},
		} {
			if fx, err := b.EffectList(testutil.Context(t), &p); err != nil || len(fx) != 0 {
				t.Fatalf("effects of %+v = %d, %v; want none", p, len(fx), err)
			}
		}

		// The send reaches its target: it leaves Sends and Incoming and
		// becomes one of the target's messages.
		rows, err := b.OutboxClaim(testutil.Context(t), &store.OutboxClaimParams{Owner: owner, TTL: time.Minute, Limit: 10})
		if err != nil || len(rows) != 1 {
			t.Fatalf("outbox claim = %d rows, %v", len(rows), err)
		}
		if _, err := b.OutboxDeliver(testutil.Context(t), &store.OutboxDeliverParams{Owner: owner, Rows: rows}); err != nil {
			t.Fatal(err)
		}
		// One effect dies, the other succeeds.
		fx, err := b.EffectClaim(testutil.Context(t), &store.EffectClaimParams{Owner: owner, TTL: time.Minute, Limit: 10, Names: []string{"mail"}, OrderedRun: 1})
		if err != nil || len(fx) != 2 {
			t.Fatalf("effect claim = %d, %v", len(fx), err)
		}
		if err := b.EffectFinish(testutil.Context(t), &store.EffectFinishParams{Owner: owner, Outcomes: []store.EffectOutcome{
			{ID: fx[0].ID, Attempt: fx[0].Attempt, Success: true},
			{ID: fx[1].ID, Attempt: fx[1].Attempt, Error: "refused", Dead: true},
		}}); err != nil {
			t.Fatal(err)
		}
		wantBacklog(t, b, "delivered", map[[2]string]store.Backlog{
			all:  {Messages: 3, Broadcasts: 1, DeadLetters: 1, DeadEffects: 1},
			one:  {Messages: 1, Broadcasts: 1, DeadLetters: 1, DeadEffects: 1},
			typB: {Messages: 1},
			tgt:  {Messages: 1},
		})

		if err := b.BroadcastMarkDelivered(testutil.Context(t), []int64{latestBroadcast(t, b)}); err != nil {
			t.Fatal(err)
		}
		runAll(t, b, owner, l)
		wantBacklog(t, b, "ran the rest", map[[2]string]store.Backlog{
			one:  {DeadLetters: 1, DeadEffects: 1},
			typB: {Messages: 1},
		})
		if n := backlog(t, b, typeA, "a"); !n.Idle() {
			t.Fatalf("an actor with only dead work is not idle: %+v", n)
		}
	},
}

func latestBroadcast(t *testing.T, b store.Backend) int64 {
	t.Helper()
	id, err := b.BroadcastLatestID(testutil.Context(t))
	if err != nil {
		t.Fatal(err)
	}
	return id
}
