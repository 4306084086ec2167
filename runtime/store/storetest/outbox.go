package storetest

import (
	"errors"
	"testing"
	"time"

	"github.com/ductus/ductus/internal/testutil"

	"github.com/ductus/ductus/actor"
	"github.com/ductus/ductus/runtime/store"
)

func stageSends(t *testing.T, b store.Backend, from actor.Ref, sends ...store.NewSend) {
	t.Helper()
	enqueueN(t, b, from, 1)
	owner := newOwner()
	l := claimOne(t, b, owner, from)
	msgs := take(t, b, owner, l, 1)
	commit(t, b, &store.TurnCommitParams{Owner: owner, Lease: l.LeaseRef, Completed: completeAll(msgs), Sends: sends})
	if err := b.LeaseRelease(testutil.Context(t), &store.LeaseReleaseParams{Owner: owner, Leases: []store.LeaseRef{l.LeaseRef}}); err != nil {
		t.Fatal(err)
	}
}

func claimSends(t *testing.T, b store.Backend, owner string) []store.OutboxRow {
	t.Helper()
	rows, err := b.OutboxClaim(testutil.Context(t), &store.OutboxClaimParams{Owner: owner, TTL: time.Minute, Limit: 100})
	if err != nil {
		t.Fatalf("claim sends: %v", err)
	}
	return rows
}

var outboxTests = map[string]func(*testing.T, store.Backend){
	"DeliverExactlyOnceInOrder": func(t *testing.T, b store.Backend) {
		target := actor.Ref{Type: typeB, ID: "t"}
		stageSends(t, b, ref("src"), store.NewSend{To: target, Message: "m", Args: []byte(`1`)},
			store.NewSend{To: target, Message: "m", Args: []byte(`2`)}, store.NewSend{To: ref("other"), Message: "m", Args: []byte(`3`)})
		owner := newOwner()
		rows := claimSends(t, b, owner)
		if len(rows) != 3 || rows[0].Source != ref("src") || string(rows[0].Args) != "1" || rows[0].Attempt != 1 {
			t.Fatalf("claimed %+v", rows)
		}
		if again := claimSends(t, b, newOwner()); len(again) != 0 {
			t.Fatal("a claimed source's sends were claimed again")
		}
		res, err := b.OutboxDeliver(testutil.Context(t), &store.OutboxDeliverParams{Owner: owner, Rows: rows})
		if err != nil || len(res) != 3 || res[0].MessageID == 0 {
			t.Fatalf("deliver = %+v, %v", res, err)
		}
		if info := actorInfo(t, b, target); res[0].TargetPK != info.PK {
			t.Fatalf("delivery names target pk %d, the target is %d", res[0].TargetPK, info.PK)
		}
		// Delivering the same rows again (a worker that did not see its
		// commit) enqueues nothing new.
		if res2, err := b.OutboxDeliver(testutil.Context(t), &store.OutboxDeliverParams{Owner: owner, Rows: rows}); err != nil || !res2[0].Gone {
			t.Fatalf("redeliver = %+v, %v", res2, err)
		}
		l := claimOne(t, b, owner, target)
		msgs := take(t, b, owner, l, 10)
		if len(msgs) != 2 || string(msgs[0].Args) != "1" || string(msgs[1].Args) != "2" {
			t.Fatalf("target received %+v, want 1 then 2 once each", msgs)
		}
		if more := claimSends(t, b, owner); len(more) != 0 {
			t.Fatalf("delivered rows claimed again: %+v", more)
		}
	},
	"FullTargetRetriesAndHoldsOrder": func(t *testing.T, b store.Backend) {
		target := ref("full")
		enqueueN(t, b, target, 1)
		stageSends(t, b, ref("src"), store.NewSend{To: target, Message: "m", Args: []byte(`1`)}, store.NewSend{To: ref("free"), Message: "m", Args: []byte(`2`)})
		owner := newOwner()
		rows := claimSends(t, b, owner)
		res, err := b.OutboxDeliver(testutil.Context(t), &store.OutboxDeliverParams{Owner: owner, Rows: rows, MailboxCap: 1, RetryAfter: 200 * time.Millisecond})
		if err != nil || !res[0].Retry || !res[1].Retry {
			t.Fatalf("deliver into a full mailbox = %+v, %v (the later row must wait too)", res, err)
		}
		if _, err := b.ActorGet(testutil.Context(t), ref("free")); !errors.Is(err, actor.ErrNotFound) {
			t.Fatal("a later send overtook a blocked one")
		}
		var again []store.OutboxRow
		testutil.Eventually(t, 5*time.Second, "the retry", func() bool { again = claimSends(t, b, owner); return len(again) == 2 })
		if res, err := b.OutboxDeliver(testutil.Context(t), &store.OutboxDeliverParams{Owner: owner, Rows: again}); err != nil || res[0].MessageID == 0 || res[1].MessageID == 0 {
			t.Fatalf("deliver after room = %+v, %v", res, err)
		}
	},
}

var broadcastTests = map[string]func(*testing.T, store.Backend){
	"TailAfterCursor": func(t *testing.T, b store.Backend) {
		ctx := testutil.Context(t)
		start, err := b.BroadcastLatestID(ctx)
		if err != nil {
			t.Fatal(err)
		}
		enqueueN(t, b, ref("x"), 1)
		owner := newOwner()
		l := claimOne(t, b, owner, ref("x"))
		msgs := take(t, b, owner, l, 1)
		commit(t, b, &store.TurnCommitParams{Owner: owner, Lease: l.LeaseRef, Completed: completeAll(msgs),
			Broadcasts: []store.NewBroadcast{{Name: "status", Value: []byte(`"open"`), StateVersion: 1}, {Name: "count", Value: []byte(`2`), StateVersion: 1}}})
		bs, err := b.BroadcastRead(ctx, &store.BroadcastReadParams{AfterID: start, Limit: 10})
		if err != nil || len(bs) != 2 || bs[0].Ref != ref("x") || bs[0].Name != "status" || string(bs[0].Value) != `"open"` {
			t.Fatalf("broadcasts = %+v, %v", bs, err)
		}
		if more, _ := b.BroadcastRead(ctx, &store.BroadcastReadParams{AfterID: bs[1].ID, Limit: 10}); len(more) != 0 {
			t.Fatalf("read past the cursor: %+v", more)
		}
		if err := b.BroadcastMarkDelivered(ctx, []int64{bs[0].ID, bs[1].ID}); err != nil {
			t.Fatal(err)
		}
		if latest, _ := b.BroadcastLatestID(ctx); latest != bs[1].ID {
			t.Fatalf("latest = %d, want %d", latest, bs[1].ID)
		}
	},
}

var processTests = map[string]func(*testing.T, store.Backend){
	"RegisterHeartbeatStopPrune": func(t *testing.T, b store.Backend) {
		ctx := testutil.Context(t)
		p := &store.ProcessInfo{ID: newOwner(), Kind: "worker", Host: "h", PID: 42, Version: "test", Metadata: []byte(`{"k":"v"}`)}
		if err := b.ProcessRegister(ctx, p); err != nil {
			t.Fatal(err)
		}
		if err := b.ProcessHeartbeat(ctx, p.ID); err != nil {
			t.Fatal(err)
		}
		list, err := b.ProcessList(ctx)
		if err != nil || len(list) != 1 || list[0].PID != 42 || !list[0].StoppedAt.IsZero() || list[0].Kind != "worker" {
			t.Fatalf("processes = %+v, %v", list, err)
		}
		if err := b.ProcessStop(ctx, p.ID); err != nil {
			t.Fatal(err)
		}
		if n, err := b.ProcessPrune(ctx, time.Hour); err != nil || n != 0 {
			t.Fatalf("pruned a fresh row: %d, %v", n, err)
		}
		time.Sleep(50 * time.Millisecond)
		if n, err := b.ProcessPrune(ctx, 10*time.Millisecond); err != nil || n != 1 {
			t.Fatalf("prune = %d, %v", n, err)
		}
	},
}
