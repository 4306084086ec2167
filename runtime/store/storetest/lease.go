package storetest

import (
	"errors"
	"testing"
	"time"

	"github.com/ductus/ductus/internal/testutil"

	"github.com/ductus/ductus/actor"
	"github.com/ductus/ductus/runtime/store"
)

var leaseTests = map[string]func(*testing.T, store.Backend){
	"ClaimBumpsGeneration": func(t *testing.T, b store.Backend) {
		enqueueN(t, b, ref("x"), 1)
		owner := newOwner()
		l := claimOne(t, b, owner, ref("x"))
		if l.Generation != 1 || l.State != nil || l.ExpiresAt.IsZero() {
			t.Fatalf("lease = %+v", l)
		}
		if again := claim(t, b, newOwner(), time.Minute, 10); len(again) != 0 {
			t.Fatalf("a leased actor was claimed again: %v", again)
		}
		a := actorInfo(t, b, ref("x"))
		if a.LeaseOwner != owner || a.Generation != 1 {
			t.Fatalf("actor row = %+v", a)
		}
	},
	"ClaimFiltersTypesAndLimit": func(t *testing.T, b store.Backend) {
		enqueue(t, b, msg(actor.Ref{Type: "storetest.unregistered", ID: "u"}, "m", 1))
		for _, id := range []string{"a", "b", "c"} {
			enqueueN(t, b, ref(id), 1)
		}
		ls := claim(t, b, newOwner(), time.Minute, 2)
		if len(ls) != 2 {
			t.Fatalf("claimed %d, want the limit 2", len(ls))
		}
		ls = append(ls, claim(t, b, newOwner(), time.Minute, 10)...)
		for _, l := range ls {
			if l.Ref.Type != typeA {
				t.Fatalf("claimed an actor of a type not asked for: %v", l.Ref)
			}
		}
		if len(ls) != 3 {
			t.Fatalf("claimed %d actors in all, want 3", len(ls))
		}
	},
	"LongestWaitingFirst": func(t *testing.T, b store.Backend) {
		for _, id := range []string{"first", "second", "third"} {
			enqueueN(t, b, ref(id), 1)
			time.Sleep(5 * time.Millisecond)
		}
		var got []string
		for i := 0; i < 3; i++ {
			ls := claim(t, b, newOwner(), time.Minute, 1)
			if len(ls) != 1 {
				t.Fatalf("claim %d got %d", i, len(ls))
			}
			got = append(got, ls[0].Ref.ID)
		}
		if got[0] != "first" || got[1] != "second" || got[2] != "third" {
			t.Fatalf("claim order %v, want longest waiting first", got)
		}
	},
	"ClaimMinWait": func(t *testing.T, b store.Backend) {
		enqueueN(t, b, ref("x"), 1)
		claimWaited := func(wait time.Duration, pks []int64) []store.Lease {
			t.Helper()
			ls, err := b.LeaseClaim(testutil.Context(t), &store.LeaseClaimParams{Owner: newOwner(), TTL: time.Minute, Limit: 10, Types: allTypes, PKs: pks, MinWait: wait})
			if err != nil {
				t.Fatal(err)
			}
			return ls
		}
		if ls := claimWaited(time.Hour, nil); len(ls) != 0 {
			t.Fatalf("claimed work that had not waited an hour: %v", ls)
		}
		pk := actorInfo(t, b, ref("x")).PK
		if ls := claimWaited(time.Hour, []int64{pk}); len(ls) != 0 {
			t.Fatalf("claimed by key work that had not waited an hour: %v", ls)
		}
		time.Sleep(300 * time.Millisecond)
		if ls := claimWaited(200*time.Millisecond, nil); len(ls) != 1 || ls[0].Ref != ref("x") {
			t.Fatalf("work that waited 300ms, claimed with MinWait 200ms: %v", ls)
		}
	},
	"ClaimByPK": func(t *testing.T, b store.Backend) {
		enqueueN(t, b, ref("a"), 1)
		res := enqueueN(t, b, ref("b"), 1)
		ls, err := b.LeaseClaim(testutil.Context(t), &store.LeaseClaimParams{Owner: newOwner(), TTL: time.Minute, Limit: 10, Types: allTypes, PKs: []int64{res[0].ActorPK}})
		if err != nil || len(ls) != 1 || ls[0].Ref != ref("b") {
			t.Fatalf("targeted claim = %v, %v", ls, err)
		}
	},
	"ExpiredLeaseIsClaimable": func(t *testing.T, b store.Backend) {
		enqueueN(t, b, ref("x"), 1)
		first := claim(t, b, newOwner(), 200*time.Millisecond, 1)
		if len(first) != 1 {
			t.Fatal("no claim")
		}
		owner := newOwner()
		var second []store.Lease
		testutil.Eventually(t, 5*time.Second, "the lease to expire", func() bool {
			second = claim(t, b, owner, time.Minute, 1)
			return len(second) == 1
		})
		if second[0].Generation != first[0].Generation+1 {
			t.Fatalf("generation %d after %d", second[0].Generation, first[0].Generation)
		}
	},
	"RenewAndRelease": func(t *testing.T, b store.Backend) {
		enqueueN(t, b, ref("x"), 1)
		owner := newOwner()
		l := claimOne(t, b, owner, ref("x"))
		ctx := testutil.Context(t)
		renewed, err := b.LeaseRenew(ctx, &store.LeaseRenewParams{Owner: owner, TTL: time.Hour, Leases: []store.LeaseRef{l.LeaseRef}})
		if err != nil || len(renewed) != 1 {
			t.Fatalf("renew = %v, %v", renewed, err)
		}
		if a := actorInfo(t, b, ref("x")); a.LeaseExpires.Before(l.ExpiresAt.Add(30 * time.Minute)) {
			t.Fatalf("expiry %v not extended past %v", a.LeaseExpires, l.ExpiresAt)
		}
		// Another owner or another generation renews nothing.
		stale := l.LeaseRef
		stale.Generation++
		for _, p := range []*store.LeaseRenewParams{
			{Owner: "someone-else", TTL: time.Hour, Leases: []store.LeaseRef{l.LeaseRef}},
			{Owner: owner, TTL: time.Hour, Leases: []store.LeaseRef{stale}},
		} {
			if r, err := b.LeaseRenew(ctx, p); err != nil || len(r) != 0 {
				t.Fatalf("renew by a non-holder = %v, %v", r, err)
			}
		}
		if err := b.LeaseRelease(ctx, &store.LeaseReleaseParams{Owner: "someone-else", Leases: []store.LeaseRef{l.LeaseRef}}); err != nil {
			t.Fatal(err)
		}
		if a := actorInfo(t, b, ref("x")); a.LeaseOwner != owner {
			t.Fatal("a non-holder released the lease")
		}
		if err := b.LeaseRelease(ctx, &store.LeaseReleaseParams{Owner: owner, Leases: []store.LeaseRef{l.LeaseRef}}); err != nil {
			t.Fatal(err)
		}
		if a := actorInfo(t, b, ref("x")); a.LeaseOwner != "" {
			t.Fatal("release left the owner")
		}
		// An expired lease cannot be renewed.
		l2 := claim(t, b, owner, 100*time.Millisecond, 1)[0]
		time.Sleep(300 * time.Millisecond)
		if r, err := b.LeaseRenew(ctx, &store.LeaseRenewParams{Owner: owner, TTL: time.Hour, Leases: []store.LeaseRef{l2.LeaseRef}}); err != nil || len(r) != 0 {
			t.Fatalf("renewed an expired lease: %v, %v", r, err)
		}
	},
	"YieldMovesBehindWaiting": func(t *testing.T, b store.Backend) {
		enqueueN(t, b, ref("hot"), 3)
		time.Sleep(5 * time.Millisecond)
		enqueueN(t, b, ref("waiting"), 1)
		owner := newOwner()
		l := claim(t, b, owner, time.Minute, 1)[0]
		if l.Ref != ref("hot") {
			t.Fatalf("claimed %v first, want the older hot actor", l.Ref)
		}
		msgs := take(t, b, owner, l, 1)
		commit(t, b, &store.TurnCommitParams{Owner: owner, Lease: l.LeaseRef, Completed: completeAll(msgs)})
		time.Sleep(5 * time.Millisecond)
		if err := b.LeaseRelease(testutil.Context(t), &store.LeaseReleaseParams{Owner: owner, Leases: []store.LeaseRef{l.LeaseRef}, Yield: true}); err != nil {
			t.Fatal(err)
		}
		if next := claim(t, b, owner, time.Minute, 1); len(next) != 1 || next[0].Ref != ref("waiting") {
			t.Fatalf("after a yield claimed %v, want the waiting actor first", next)
		}
	},
	"OwnedDue": func(t *testing.T, b store.Backend) {
		enqueueN(t, b, ref("x"), 1)
		owner := newOwner()
		l := claimOne(t, b, owner, ref("x"))
		runAll(t, b, owner, l)
		ctx := testutil.Context(t)
		if due, err := b.LeaseOwnedDue(ctx, owner); err != nil || len(due) != 0 {
			t.Fatalf("owned due with nothing waiting = %v, %v", due, err)
		}
		enqueueN(t, b, ref("x"), 1)
		due, err := b.LeaseOwnedDue(ctx, owner)
		if err != nil || len(due) != 1 || due[0] != l.LeaseRef {
			t.Fatalf("owned due = %v, %v; want %v", due, err, l.LeaseRef)
		}
	},
	"PausedIsNotClaimed": func(t *testing.T, b store.Backend) {
		enqueueN(t, b, ref("x"), 1)
		ctx := testutil.Context(t)
		if ok, err := b.ActorPause(ctx, ref("x"), true); !ok || err != nil {
			t.Fatalf("pause = %v, %v", ok, err)
		}
		if ls := claim(t, b, newOwner(), time.Minute, 10); len(ls) != 0 {
			t.Fatal("a paused actor was claimed")
		}
		if _, err := b.ActorPause(ctx, ref("x"), false); err != nil {
			t.Fatal(err)
		}
		owner := newOwner()
		ls := claim(t, b, owner, time.Minute, 10)
		if len(ls) != 1 {
			t.Fatal("a resumed actor was not claimed")
		}
		// Pausing an actor whose activation is held stops its takes too.
		l := ls[0]
		if _, err := b.ActorPause(ctx, ref("x"), true); err != nil {
			t.Fatal(err)
		}
		if got := take(t, b, owner, l, 10); len(got) != 0 {
			t.Fatalf("took %+v from a paused actor", got)
		}
		if ok, err := b.ActorPause(ctx, ref("nobody"), true); ok || err != nil {
			t.Fatalf("pausing a missing actor = %v, %v", ok, err)
		}
	},
	"TakeWithLostLease": func(t *testing.T, b store.Backend) {
		enqueueN(t, b, ref("x"), 1)
		owner := newOwner()
		l := claimOne(t, b, owner, ref("x"))
		stale := l.LeaseRef
		stale.Generation--
		_, err := b.MessageTake(testutil.Context(t), &store.MessageTakeParams{Owner: owner, Lease: stale, Limit: 10})
		if !errors.Is(err, actor.ErrLostActivation) {
			t.Fatalf("take with a stale generation: %v, want ErrLostActivation", err)
		}
	},
}
