package storetest

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/ductus/ductus/internal/testutil"

	"github.com/ductus/ductus/actor"
	"github.com/ductus/ductus/runtime/store"
)

// stageEffects commits one turn of r that stages the given effects.
func stageEffects(t *testing.T, b store.Backend, r actor.Ref, effects ...store.NewEffect) store.Lease {
	t.Helper()
	enqueueN(t, b, r, 1)
	owner := newOwner()
	l := claimOne(t, b, owner, r)
	msgs := take(t, b, owner, l, 1)
	for i := range effects {
		effects[i].MessageID = msgs[0].ID
		if effects[i].Args == nil {
			effects[i].Args = []byte("{}")
		}
	}
	commit(t, b, &store.TurnCommitParams{Owner: owner, Lease: l.LeaseRef, Completed: completeAll(msgs), Effects: effects})
	if err := b.LeaseRelease(testutil.Context(t), &store.LeaseReleaseParams{Owner: owner, Leases: []store.LeaseRef{l.LeaseRef}}); err != nil {
		t.Fatal(err)
	}
	return l
}

var effectSeq int

func uuid() string { effectSeq++; return fmt.Sprintf("uuid-%d-%d", time.Now().UnixNano(), effectSeq) }

func claimEffects(t *testing.T, b store.Backend, owner string, run int) []store.Effect {
	t.Helper()
	fx, err := b.EffectClaim(testutil.Context(t), &store.EffectClaimParams{Owner: owner, TTL: time.Minute, Limit: 50, Names: []string{"fx", "other"}, OrderedRun: run})
	if err != nil {
		t.Fatalf("claim effects: %v", err)
	}
	return fx
}

func finish(t *testing.T, b store.Backend, owner string, outcomes ...store.EffectOutcome) {
	t.Helper()
	if err := b.EffectFinish(testutil.Context(t), &store.EffectFinishParams{Owner: owner, Outcomes: outcomes}); err != nil {
		t.Fatalf("finish effects: %v", err)
	}
}

var effectTests = map[string]func(*testing.T, store.Backend){
	"ListByMessages": func(t *testing.T, b store.Backend) {
		stageEffects(t, b, ref("x"), store.NewEffect{UUID: uuid(), Name: "fx"}, store.NewEffect{UUID: uuid(), Name: "other"})
		stageEffects(t, b, ref("y"), store.NewEffect{UUID: uuid(), Name: "fx"})
		enqueueN(t, b, ref("z"), 1) // a message that staged nothing
		ctx := testutil.Context(t)
		all, err := b.EffectList(ctx, &store.EffectListParams{State: store.EffectPending, Limit: 10})
		if err != nil || len(all) != 3 {
			t.Fatalf("effects = %+v, %v", all, err)
		}
		first := all[0].MessageID
		for _, e := range all {
			first = min(first, e.MessageID)
		}
		got, err := b.EffectListByMessages(ctx, []int64{first, 1 << 40})
		if err != nil || len(got) != 2 || got[0].MessageID != first || got[1].MessageID != first || got[0].ID >= got[1].ID {
			t.Fatalf("effects of message %d = %+v, %v", first, got, err)
		}
		if none, err := b.EffectListByMessages(ctx, nil); err != nil || len(none) != 0 {
			t.Fatalf("effects of no message = %+v, %v", none, err)
		}
	},
	"UnorderedLifecycle": func(t *testing.T, b store.Backend) {
		l := stageEffects(t, b, ref("x"), store.NewEffect{UUID: uuid(), Name: "fx", Args: []byte(`{"a":1}`)},
			store.NewEffect{UUID: uuid(), Name: "fx"}, store.NewEffect{UUID: uuid(), Name: "nohandler"})
		owner := newOwner()
		fx := claimEffects(t, b, owner, 1)
		if len(fx) != 2 {
			t.Fatalf("claimed %d effects, want the 2 with a handler", len(fx))
		}
		e := fx[0]
		if e.Ref != ref("x") || e.Attempt != 1 || e.Generation != l.Generation || string(e.Args) != `{"a":1}` || e.UUID == "" {
			t.Fatalf("effect = %+v", e)
		}
		if again := claimEffects(t, b, newOwner(), 1); len(again) != 0 {
			t.Fatal("a claimed effect was claimed again")
		}
		// A stale outcome (wrong attempt) changes nothing.
		finish(t, b, owner, store.EffectOutcome{ID: e.ID, Attempt: e.Attempt + 1, Success: true})
		finish(t, b, owner, store.EffectOutcome{ID: e.ID, Attempt: e.Attempt, Success: true, Result: []byte(`"ok"`)},
			store.EffectOutcome{ID: fx[1].ID, Attempt: 1, Error: "down", RetryAfter: 200 * time.Millisecond})
		got, err := b.EffectGet(testutil.Context(t), e.ID)
		if err != nil || got.State != store.EffectDone || string(got.Result) != `"ok"` {
			t.Fatalf("effect after success = %+v, %v", got, err)
		}
		// The failed one waits for its retry: pending, and blocking only
		// if ordered (it is not: an unordered effect holds nothing).
		blocking, err := b.EffectList(testutil.Context(t), &store.EffectListParams{State: store.EffectPending, Blocking: true})
		if err != nil || len(blocking) != 0 {
			t.Fatalf("blocking effects after an unordered failure = %+v, %v; want none", blocking, err)
		}
		var retried []store.Effect
		testutil.Eventually(t, 5*time.Second, "the retry", func() bool { retried = claimEffects(t, b, owner, 1); return len(retried) == 1 })
		if retried[0].ID != fx[1].ID || retried[0].Attempt != 2 {
			t.Fatalf("retry = %+v", retried[0])
		}
		finish(t, b, owner, store.EffectOutcome{ID: retried[0].ID, Attempt: 2, Error: "gave up", Dead: true})
		dead, err := b.EffectList(testutil.Context(t), &store.EffectListParams{State: store.EffectDead})
		if err != nil || len(dead) != 1 || dead[0].Error != "gave up" {
			t.Fatalf("dead effects = %+v, %v", dead, err)
		}
		if ok, err := b.EffectRetry(testutil.Context(t), dead[0].ID); !ok || err != nil {
			t.Fatalf("operator retry = %v, %v", ok, err)
		}
		if again := claimEffects(t, b, owner, 1); len(again) != 1 || again[0].Attempt != 1 {
			t.Fatalf("after an operator retry claimed %+v", again)
		}
	},
	"ExpiredClaimIsReclaimed": func(t *testing.T, b store.Backend) {
		stageEffects(t, b, ref("x"), store.NewEffect{UUID: uuid(), Name: "fx"})
		fx, err := b.EffectClaim(testutil.Context(t), &store.EffectClaimParams{Owner: "dead-worker", TTL: 150 * time.Millisecond, Limit: 10, Names: []string{"fx"}})
		if err != nil || len(fx) != 1 {
			t.Fatal(fx, err)
		}
		owner := newOwner()
		var again []store.Effect
		testutil.Eventually(t, 5*time.Second, "the claim to expire", func() bool { again = claimEffects(t, b, owner, 1); return len(again) == 1 })
		if again[0].Attempt != 2 {
			t.Fatalf("attempt %d", again[0].Attempt)
		}
		// The dead worker's late outcome is refused.
		finish(t, b, "dead-worker", store.EffectOutcome{ID: fx[0].ID, Attempt: 1, Success: true})
		if e, _ := b.EffectGet(testutil.Context(t), fx[0].ID); e.State != store.EffectPending {
			t.Fatalf("a stale claim recorded its outcome: %s", e.State)
		}
	},
	"OrderedHeadOnlyAndBlocking": func(t *testing.T, b store.Backend) {
		stageEffects(t, b, ref("x"), store.NewEffect{UUID: uuid(), Name: "fx", Ordered: true, Args: []byte(`1`)},
			store.NewEffect{UUID: uuid(), Name: "fx", Ordered: true, Args: []byte(`2`)},
			store.NewEffect{UUID: uuid(), Name: "fx", Ordered: true, Args: []byte(`3`)})
		stageEffects(t, b, ref("y"), store.NewEffect{UUID: uuid(), Name: "fx", Ordered: true, Args: []byte(`"y1"`)})
		owner := newOwner()
		fx := claimEffects(t, b, owner, 1)
		if len(fx) != 2 {
			t.Fatalf("claimed %d, want one head per actor", len(fx))
		}
		var head store.Effect
		for _, e := range fx {
			if e.Ref == ref("x") {
				head = e
			}
		}
		if string(head.Args) != `1` || !head.Ordered {
			t.Fatalf("x's head = %+v", head)
		}
		if more := claimEffects(t, b, newOwner(), 1); len(more) != 0 {
			t.Fatalf("claimed %v while heads are in flight", more)
		}
		// The head fails: the later ones wait for its back-off.
		finish(t, b, owner, store.EffectOutcome{ID: head.ID, Attempt: 1, Error: "receiver down", RetryAfter: 300 * time.Millisecond})
		if more := claimEffects(t, b, owner, 1); len(more) != 0 {
			t.Fatalf("claimed %v while the ordered head backs off", more)
		}
		// It is the one blocking effect: listed with its error, for its
		// actor and its type, and for no other actor.
		for _, p := range []store.EffectListParams{{}, {Type: typeA}, {Type: typeA, ID: "x"}} {
			p.State, p.Blocking = store.EffectPending, true
			got, err := b.EffectList(testutil.Context(t), &p)
			if err != nil || len(got) != 1 || got[0].ID != head.ID || got[0].Error != "receiver down" || got[0].Attempts != 1 {
				t.Fatalf("blocking effects (%+v) = %+v, %v; want x's head with its error", p, got, err)
			}
		}
		if got, err := b.EffectList(testutil.Context(t), &store.EffectListParams{State: store.EffectPending, Blocking: true, Type: typeA, ID: "y"}); err != nil || len(got) != 0 {
			t.Fatalf("y blocks nothing, yet lists %+v, %v", got, err)
		}
		var retry []store.Effect
		testutil.Eventually(t, 5*time.Second, "the head's retry", func() bool { retry = claimEffects(t, b, owner, 3); return len(retry) > 0 })
		if string(retry[0].Args) != `1` || retry[0].Attempt != 2 || len(retry) != 3 {
			t.Fatalf("retry run = %+v, want the head again then the rest", retry)
		}
		// A run: head succeeds, second dies (unblocking), third released.
		finish(t, b, owner, store.EffectOutcome{ID: retry[0].ID, Attempt: 2, Success: true},
			store.EffectOutcome{ID: retry[1].ID, Attempt: 1, Error: "bad", Dead: true},
			store.EffectOutcome{ID: retry[2].ID, Attempt: 1, Release: true})
		last := claimEffects(t, b, owner, 3)
		if len(last) != 1 || string(last[0].Args) != `3` || last[0].Attempt != 1 {
			t.Fatalf("after the dead one claimed %+v, want effect 3 at attempt 1", last)
		}
		if got, err := b.EffectList(testutil.Context(t), &store.EffectListParams{State: store.EffectPending, Blocking: true}); err != nil || len(got) != 0 {
			t.Fatalf("nothing fails now, yet blocking effects = %+v, %v", got, err)
		}
	},
	"OutcomeMessages": func(t *testing.T, b store.Backend) {
		stageEffects(t, b, ref("x"), store.NewEffect{UUID: uuid(), Name: "fx", OnSuccess: "done"})
		owner := newOwner()
		fx := claimEffects(t, b, owner, 1)
		out := store.NewMessage{Ref: ref("x"), Name: "done", Args: []byte(`{"effect_id":"e"}`), MustExist: true, System: true}
		finish(t, b, owner, store.EffectOutcome{ID: fx[0].ID, Attempt: 1, Success: true, Outcome: &out})
		l := claimOne(t, b, owner, ref("x"))
		msgs := take(t, b, owner, l, 10)
		if len(msgs) != 1 || msgs[0].Name != "done" {
			t.Fatalf("outcome message = %+v", msgs)
		}
		// After destroy an outcome never recreates the actor.
		stageEffects(t, b, ref("z"), store.NewEffect{UUID: uuid(), Name: "fx"})
		fz := claimEffects(t, b, owner, 1)
		if _, err := b.ActorDestroy(testutil.Context(t), ref("z")); err != nil {
			t.Fatal(err)
		}
		outZ := store.NewMessage{Ref: ref("z"), Name: "done", Args: []byte(`{}`), MustExist: true}
		finish(t, b, owner, store.EffectOutcome{ID: fz[0].ID, Attempt: 1, Success: true, Outcome: &outZ})
		if a, err := b.ActorGet(testutil.Context(t), ref("z")); err == nil {
			t.Fatalf("an outcome recreated a destroyed actor: %+v", a)
		}
	},
	"LaneClaimSkipsHeadsWithoutHandler": func(t *testing.T, b store.Backend) {
		// x's lane is due first, but its head has no handler in this
		// process: the claim must not take (or count) that lane.
		stageEffects(t, b, ref("x"), store.NewEffect{UUID: uuid(), Name: "elsewhere", Ordered: true})
		stageEffects(t, b, ref("y"), store.NewEffect{UUID: uuid(), Name: "fx", Ordered: true})
		owner := newOwner()
		fx, err := b.EffectClaim(testutil.Context(t), &store.EffectClaimParams{Owner: owner, TTL: time.Minute, Limit: 1, Names: []string{"fx"}, OrderedRun: 4})
		if err != nil || len(fx) != 1 || fx[0].Ref != ref("y") {
			t.Fatalf("claim with limit 1 = %+v, %v; want y's effect (x's head has no handler here)", fx, err)
		}
		// A process with the handler takes x's lane at once.
		other, err := b.EffectClaim(testutil.Context(t), &store.EffectClaimParams{Owner: newOwner(), TTL: time.Minute, Limit: 10, Names: []string{"elsewhere"}, OrderedRun: 4})
		if err != nil || len(other) != 1 || other[0].Ref != ref("x") {
			t.Fatalf("claim by the process with the handler = %+v, %v", other, err)
		}
	},
	"OutcomeIntoFullMailbox": func(t *testing.T, b store.Backend) {
		// The effect finishes in the same transaction as its outcome
		// message is written: a full mailbox must not drop the message.
		stageEffects(t, b, ref("x"), store.NewEffect{UUID: uuid(), Name: "fx", OnFailure: "failed"})
		enqueueN(t, b, ref("x"), 2)
		owner := newOwner()
		fx := claimEffects(t, b, owner, 1)
		if len(fx) != 1 {
			t.Fatalf("claimed %+v", fx)
		}
		out := store.NewMessage{Ref: ref("x"), Name: "failed", Args: []byte(`{}`), MustExist: true, System: true}
		err := b.EffectFinish(testutil.Context(t), &store.EffectFinishParams{Owner: owner, MailboxCap: 2, SystemAllowance: 0,
			Outcomes: []store.EffectOutcome{{ID: fx[0].ID, Attempt: 1, Error: "gave up", Dead: true, Outcome: &out}}})
		if err != nil {
			t.Fatal(err)
		}
		if e, _ := b.EffectGet(testutil.Context(t), fx[0].ID); e.State != store.EffectDead {
			t.Fatalf("effect state %s, want dead", e.State)
		}
		if a := actorInfo(t, b, ref("x")); a.Unfinished != 3 {
			t.Fatalf("%d unfinished messages, want 3 (two told, one outcome beyond the cap)", a.Unfinished)
		}
	},
	"DiscardOnlyDead": func(t *testing.T, b store.Backend) {
		stageEffects(t, b, ref("x"), store.NewEffect{UUID: uuid(), Name: "fx"}, store.NewEffect{UUID: uuid(), Name: "fx"})
		owner := newOwner()
		fx := claimEffects(t, b, owner, 1)
		if len(fx) != 2 {
			t.Fatalf("claimed %+v", fx)
		}
		finish(t, b, owner, store.EffectOutcome{ID: fx[0].ID, Attempt: 1, Error: "no", Dead: true})
		if ok, err := b.EffectDiscard(testutil.Context(t), fx[1].ID); ok || err != nil {
			t.Fatalf("discarding a pending effect = %v, %v", ok, err)
		}
		if ok, err := b.EffectDiscard(testutil.Context(t), fx[0].ID); !ok || err != nil {
			t.Fatalf("discarding the dead effect = %v, %v", ok, err)
		}
		if _, err := b.EffectGet(testutil.Context(t), fx[0].ID); !errors.Is(err, actor.ErrNotFound) {
			t.Fatalf("the discarded effect: %v", err)
		}
		if ok, _ := b.EffectDiscard(testutil.Context(t), fx[0].ID); ok {
			t.Fatal("discarded twice")
		}
	},
}
