package storetest

import (
	"errors"
	"testing"
	"time"

	"github.com/ductus/ductus/internal/testutil"

	"github.com/ductus/ductus/actor"
	"github.com/ductus/ductus/runtime/store"
)

var turnTests = map[string]func(*testing.T, store.Backend){
	"TakeInOrderAndCommit": func(t *testing.T, b store.Backend) {
		res := enqueueN(t, b, ref("x"), 5)
		owner := newOwner()
		l := claimOne(t, b, owner, ref("x"))
		msgs := take(t, b, owner, l, 3)
		if len(msgs) != 3 || msgs[0].Seq != 1 || msgs[2].Seq != 3 || msgs[0].Attempt != 1 || msgs[0].Name != "inc" {
			t.Fatalf("took %+v", msgs)
		}
		if now, _ := b.Now(testutil.Context(t)); msgs[0].EnqueuedAt.IsZero() || msgs[0].AvailableAt.Before(msgs[0].EnqueuedAt.Add(-time.Millisecond)) ||
			msgs[0].AvailableAt.After(now.Add(time.Second)) {
			t.Fatalf("times of a taken message: enqueued %v, available %v (now %v)", msgs[0].EnqueuedAt, msgs[0].AvailableAt, now)
		}
		commit(t, b, &store.TurnCommitParams{Owner: owner, Lease: l.LeaseRef, State: []byte(`{"n":3}`), StateVersion: 2, Completed: completeAll(msgs)})
		st := status(t, b, res[0].MessageID)
		if st.State != store.MessageCompleted || string(st.Result) != `{"seq":1}` {
			t.Fatalf("status = %+v", st)
		}
		if st := status(t, b, res[3].MessageID); st.State != store.MessagePending {
			t.Fatalf("untaken message state %s", st.State)
		}
		a := actorInfo(t, b, ref("x"))
		if string(a.State) != `{"n":3}` || a.StateVersion != 2 || a.Unfinished != 2 {
			t.Fatalf("actor = %+v", a)
		}
		rest := take(t, b, owner, l, 10)
		if len(rest) != 2 || rest[0].Seq != 4 {
			t.Fatalf("second take %+v", rest)
		}
		// A commit with no state leaves the state as it was.
		commit(t, b, &store.TurnCommitParams{Owner: owner, Lease: l.LeaseRef, StateVersion: 2, Completed: completeAll(rest)})
		if a := actorInfo(t, b, ref("x")); string(a.State) != `{"n":3}` || a.Unfinished != 0 || !a.HeadDue.IsZero() {
			t.Fatalf("actor after draining = %+v", a)
		}
	},
	"StaleGenerationCommitChangesNothing": func(t *testing.T, b store.Backend) {
		res := enqueueN(t, b, ref("x"), 1)
		owner := newOwner()
		l := claim(t, b, owner, 200*time.Millisecond, 1)[0]
		msgs := take(t, b, owner, l, 10)
		// The lease expires and a new owner takes over.
		time.Sleep(400 * time.Millisecond)
		owner2 := newOwner()
		l2 := claimOne(t, b, owner2, ref("x"))
		_, err := b.TurnCommit(testutil.Context(t), &store.TurnCommitParams{Owner: owner, Lease: l.LeaseRef, State: []byte(`{"stale":true}`),
			StateVersion: 1, Completed: completeAll(msgs), Effects: []store.NewEffect{{UUID: "e-stale", Name: "fx", Args: []byte("{}"), MessageID: msgs[0].ID}}})
		if !errors.Is(err, actor.ErrLostActivation) {
			t.Fatalf("stale commit err = %v, want ErrLostActivation", err)
		}
		if st := status(t, b, res[0].MessageID); st.State != store.MessagePending {
			t.Fatalf("a stale commit completed the message: %s", st.State)
		}
		if a := actorInfo(t, b, ref("x")); a.State != nil {
			t.Fatalf("a stale commit wrote state %s", a.State)
		}
		if fx, _ := b.EffectList(testutil.Context(t), &store.EffectListParams{State: store.EffectPending}); len(fx) != 0 {
			t.Fatalf("a stale commit staged effects: %v", fx)
		}
		// The new generation re-runs the stale claim with the next attempt.
		again := take(t, b, owner2, l2, 10)
		if len(again) != 1 || again[0].ID != res[0].MessageID || again[0].Attempt != 2 {
			t.Fatalf("new generation took %+v, want the message again at attempt 2", again)
		}
		commit(t, b, &store.TurnCommitParams{Owner: owner2, Lease: l2.LeaseRef, Completed: completeAll(again)})
		if st := status(t, b, res[0].MessageID); st.State != store.MessageCompleted {
			t.Fatalf("state %s", st.State)
		}
	},
	"SameOwnerNewGenerationFencesOld": func(t *testing.T, b store.Backend) {
		// One process whose lease expired and which claimed the actor again
		// holds two generations; only the newer may commit.
		res := enqueueN(t, b, ref("x"), 1)
		owner := newOwner()
		old, msgs := takeThenExpire(t, b, owner, 10)
		cur := claimOne(t, b, owner, ref("x"))
		if _, err := b.TurnCommit(testutil.Context(t), &store.TurnCommitParams{Owner: owner, Lease: old.LeaseRef, State: []byte(`"old"`), Completed: completeAll(msgs)}); !errors.Is(err, actor.ErrLostActivation) {
			t.Fatalf("old generation's commit: %v, want ErrLostActivation", err)
		}
		if _, err := b.MessageTake(testutil.Context(t), &store.MessageTakeParams{Owner: owner, Lease: old.LeaseRef, Limit: 1}); !errors.Is(err, actor.ErrLostActivation) {
			t.Fatalf("old generation's take: %v, want ErrLostActivation", err)
		}
		if r, _ := b.LeaseRenew(testutil.Context(t), &store.LeaseRenewParams{Owner: owner, TTL: time.Minute, Leases: []store.LeaseRef{old.LeaseRef}}); len(r) != 0 {
			t.Fatal("the old generation renewed")
		}
		got := take(t, b, owner, cur, 10)
		if len(got) != 1 || got[0].ID != res[0].MessageID || got[0].Attempt != 2 {
			t.Fatalf("current generation took %+v", got)
		}
	},
	"ExpiredLeaseCommitRefused": func(t *testing.T, b store.Backend) {
		enqueueN(t, b, ref("x"), 1)
		owner := newOwner()
		l, msgs := takeThenExpire(t, b, owner, 10)
		_, err := b.TurnCommit(testutil.Context(t), &store.TurnCommitParams{Owner: owner, Lease: l.LeaseRef, Completed: completeAll(msgs)})
		if !errors.Is(err, actor.ErrLostActivation) {
			t.Fatalf("commit after expiry: %v, want ErrLostActivation", err)
		}
	},
	"FailureBlocksLaterThenDeadUnblocks": func(t *testing.T, b store.Backend) {
		res := enqueueN(t, b, ref("x"), 3)
		owner := newOwner()
		l := claimOne(t, b, owner, ref("x"))
		msgs := take(t, b, owner, l, 10)
		// Message 1 succeeds, 2 fails, 3 did not run: commit 1, fail 2, return 3.
		commit(t, b, &store.TurnCommitParams{Owner: owner, Lease: l.LeaseRef, State: []byte(`1`),
			Completed: completeAll(msgs[:1]),
			Failed:    &store.Failure{MessageID: msgs[1].ID, Attempt: msgs[1].Attempt, Error: "boom", RetryAfter: 400 * time.Millisecond},
			Returned:  []int64{msgs[2].ID}})
		if st := status(t, b, res[0].MessageID); st.State != store.MessageCompleted {
			t.Fatal("the message before the failure was not committed")
		}
		if got := take(t, b, owner, l, 10); len(got) != 0 {
			t.Fatalf("took %+v while the head backs off (strict order)", got)
		}
		var retry []store.Message
		testutil.Eventually(t, 5*time.Second, "the retry to come due", func() bool {
			retry = take(t, b, owner, l, 10)
			return len(retry) > 0
		})
		if retry[0].ID != msgs[1].ID || retry[0].Attempt != 2 || len(retry) != 2 {
			t.Fatalf("retry took %+v, want message 2 (attempt 2) then 3", retry)
		}
		commit(t, b, &store.TurnCommitParams{Owner: owner, Lease: l.LeaseRef,
			Failed:   &store.Failure{MessageID: retry[0].ID, Attempt: retry[0].Attempt, Error: "boom again", Dead: true},
			Returned: []int64{retry[1].ID}})
		st := status(t, b, res[1].MessageID)
		if st.State != store.MessageDead || st.Error != "boom again" {
			t.Fatalf("dead status = %+v", st)
		}
		next := take(t, b, owner, l, 10)
		if len(next) != 1 || next[0].ID != res[2].MessageID || next[0].Attempt != 1 {
			t.Fatalf("after the dead letter took %+v, want message 3 at attempt 1", next)
		}
		dl, err := b.DeadLetterList(testutil.Context(t), &store.DeadLetterListParams{Type: typeA})
		if err != nil || len(dl) != 1 || dl[0].MessageID != res[1].MessageID || dl[0].Attempts != 2 {
			t.Fatalf("dead letters = %+v, %v", dl, err)
		}
	},
	"TakeNextInCommit": func(t *testing.T, b store.Backend) {
		enqueueN(t, b, ref("x"), 5)
		owner := newOwner()
		l := claimOne(t, b, owner, ref("x"))
		msgs := take(t, b, owner, l, 2)
		res := commit(t, b, &store.TurnCommitParams{Owner: owner, Lease: l.LeaseRef, Completed: completeAll(msgs), TakeNext: 2})
		if len(res.Next) != 2 || res.Next[0].Seq != 3 || res.Next[1].Seq != 4 {
			t.Fatalf("next = %+v", res.Next)
		}
		res = commit(t, b, &store.TurnCommitParams{Owner: owner, Lease: l.LeaseRef, Completed: completeAll(res.Next), TakeNext: 10})
		if len(res.Next) != 1 || res.Next[0].Seq != 5 {
			t.Fatalf("next = %+v", res.Next)
		}
	},
	"ReleaseWithUnfinishedClaimRecovers": func(t *testing.T, b store.Backend) {
		// A worker that dies between take and commit leaves claimed rows;
		// the next generation must get them back first.
		res := enqueueN(t, b, ref("x"), 2)
		owner2, l2 := handOver(t, b, ref("x"), 1)
		got := take(t, b, owner2, l2, 10)
		if len(got) != 2 || got[0].ID != res[0].MessageID || got[0].Attempt != 2 || got[1].Attempt != 1 {
			t.Fatalf("recovery took %+v", got)
		}
	},
	"ReadoptedClaimsCountAgainstTheLimit": func(t *testing.T, b store.Backend) {
		// Three messages left claimed by a released generation, two more
		// ready: a take of four re-adopts the three (next attempt) and
		// moves one, in sequence order.
		res := enqueueN(t, b, ref("x"), 5)
		owner2, l2 := handOver(t, b, ref("x"), 3)
		got := take(t, b, owner2, l2, 4)
		if len(got) != 4 {
			t.Fatalf("took %d messages, want 4: %+v", len(got), got)
		}
		for i, m := range got {
			want := 2
			if i == 3 {
				want = 1
			}
			if m.ID != res[i].MessageID || m.Attempt != want {
				t.Fatalf("message %d: %+v, want id %d at attempt %d", i, m, res[i].MessageID, want)
			}
		}
		rest := commit(t, b, &store.TurnCommitParams{Owner: owner2, Lease: l2.LeaseRef, Completed: completeAll(got), TakeNext: 10})
		if len(rest.Next) != 1 || rest.Next[0].ID != res[4].MessageID || rest.Next[0].Attempt != 1 {
			t.Fatalf("TakeNext = %+v, want the fifth message", rest.Next)
		}
	},
	"StaleCommitTakesNothingNext": func(t *testing.T, b store.Backend) {
		// A stale generation's commit is refused, and its TakeNext must not
		// move the ready messages either: the new generation takes them all.
		res := enqueueN(t, b, ref("x"), 3)
		owner := newOwner()
		old, msgs := takeThenExpire(t, b, owner, 1)
		owner2 := newOwner()
		cur := claimOne(t, b, owner2, ref("x"))
		_, err := b.TurnCommit(testutil.Context(t), &store.TurnCommitParams{Owner: owner, Lease: old.LeaseRef, Completed: completeAll(msgs), TakeNext: 10})
		if !errors.Is(err, actor.ErrLostActivation) {
			t.Fatalf("the stale commit: %v, want ErrLostActivation", err)
		}
		got := take(t, b, owner2, cur, 10)
		if len(got) != 3 || got[0].ID != res[0].MessageID || got[0].Attempt != 2 || got[1].Attempt != 1 || got[2].ID != res[2].MessageID {
			t.Fatalf("the new generation took %+v, want all three (the first at attempt 2)", got)
		}
	},
}

var destroyTests = map[string]func(*testing.T, store.Backend){
	"DestroyIsIdempotentAndCascades": func(t *testing.T, b store.Backend) {
		res := enqueueN(t, b, ref("x"), 2)
		owner := newOwner()
		l := claimOne(t, b, owner, ref("x"))
		msgs := take(t, b, owner, l, 1)
		commit(t, b, &store.TurnCommitParams{Owner: owner, Lease: l.LeaseRef, State: []byte(`{"v":1}`), Completed: completeAll(msgs),
			Effects:   []store.NewEffect{{UUID: "e-destroy", Name: "fx", Args: []byte("{}"), MessageID: msgs[0].ID}},
			Reminders: []store.ReminderChange{{Name: "r", Message: "m", Args: []byte("{}"), Schedule: []byte(`{"every":1000000000}`), NextIn: time.Hour}},
			Sends:     []store.NewSend{{To: ref("y"), Message: "m", Args: []byte("{}")}}})
		ctx := testutil.Context(t)
		existed, err := b.ActorDestroy(ctx, ref("x"))
		if err != nil || !existed {
			t.Fatalf("destroy = %v, %v", existed, err)
		}
		existed, err = b.ActorDestroy(ctx, ref("x"))
		if err != nil || existed {
			t.Fatalf("second destroy = %v, %v (want false: idempotent)", existed, err)
		}
		for _, id := range []int64{res[0].MessageID, res[1].MessageID} {
			if st := status(t, b, id); st.State != store.MessageMissing {
				t.Fatalf("message %d survived destroy: %s", id, st.State)
			}
		}
		if fx, _ := b.EffectList(ctx, &store.EffectListParams{State: store.EffectPending}); len(fx) != 0 {
			t.Fatal("effects survived destroy")
		}
		if rows, _ := b.OutboxClaim(ctx, &store.OutboxClaimParams{Owner: owner, TTL: time.Minute, Limit: 10}); len(rows) != 0 {
			t.Fatal("outbox rows survived destroy")
		}
		if rs, _ := b.ReminderList(ctx, ref("x")); len(rs) != 0 {
			t.Fatal("reminders survived destroy")
		}
		// The old lease holder's commit finds no actor.
		rest := []store.Completion{{MessageID: res[1].MessageID, Attempt: 1}}
		if _, err := b.TurnCommit(ctx, &store.TurnCommitParams{Owner: owner, Lease: l.LeaseRef, Completed: rest}); !errors.Is(err, actor.ErrLostActivation) {
			t.Fatalf("commit after destroy: %v, want ErrLostActivation", err)
		}
		// A later message starts a fresh incarnation.
		again := enqueueN(t, b, ref("x"), 1)[0]
		if again.Seq != 1 || again.ActorPK == res[0].ActorPK {
			t.Fatalf("new incarnation = %+v (old pk %d)", again, res[0].ActorPK)
		}
		a := actorInfo(t, b, ref("x"))
		if a.State != nil || a.Generation != 0 {
			t.Fatalf("new incarnation kept old state: %+v", a)
		}
	},
	"DestroyRacingATurn": func(t *testing.T, b store.Backend) {
		enqueueN(t, b, ref("x"), 1)
		owner := newOwner()
		l := claimOne(t, b, owner, ref("x"))
		msgs := take(t, b, owner, l, 1)
		if _, err := b.ActorDestroy(testutil.Context(t), ref("x")); err != nil {
			t.Fatal(err)
		}
		enqueueN(t, b, ref("x"), 1) // the new incarnation
		_, err := b.TurnCommit(testutil.Context(t), &store.TurnCommitParams{Owner: owner, Lease: l.LeaseRef, State: []byte(`{"old":true}`), Completed: completeAll(msgs)})
		if !errors.Is(err, actor.ErrLostActivation) {
			t.Fatalf("commit into a destroyed incarnation: %v", err)
		}
		if a := actorInfo(t, b, ref("x")); a.State != nil || a.Unfinished != 1 {
			t.Fatalf("the old turn changed the new incarnation: %+v", a)
		}
	},
}

// handOver claims r, takes taken messages and releases the lease without
// finishing them (a worker that died between take and commit), then claims
// r again as a new owner.
func handOver(t *testing.T, b store.Backend, r actor.Ref, taken int) (string, store.Lease) {
	t.Helper()
	owner := newOwner()
	l := claimOne(t, b, owner, r)
	take(t, b, owner, l, taken)
	if err := b.LeaseRelease(testutil.Context(t), &store.LeaseReleaseParams{Owner: owner, Leases: []store.LeaseRef{l.LeaseRef}}); err != nil {
		t.Fatal(err)
	}
	owner2 := newOwner()
	return owner2, claimOne(t, b, owner2, r)
}

// takeThenExpire claims the one actor with work on a 150 ms lease, takes up
// to limit of its messages and waits until the lease has expired.
func takeThenExpire(t *testing.T, b store.Backend, owner string, limit int) (store.Lease, []store.Message) {
	t.Helper()
	l := claim(t, b, owner, 150*time.Millisecond, 1)[0]
	msgs := take(t, b, owner, l, limit)
	time.Sleep(300 * time.Millisecond)
	return l, msgs
}
