package storetest

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/ductus/ductus/actor"
	"github.com/ductus/ductus/internal/testutil"
	"github.com/ductus/ductus/runtime/store"
)

// deadLetter makes the actor's first message dead and returns its ID.
func deadLetter(t *testing.T, b store.Backend, r actor.Ref) int64 {
	t.Helper()
	enqueueN(t, b, r, 1)
	owner := newOwner()
	l := claimOne(t, b, owner, r)
	msgs := take(t, b, owner, l, 1)
	commit(t, b, &store.TurnCommitParams{Owner: owner, Lease: l.LeaseRef,
		Failed: &store.Failure{MessageID: msgs[0].ID, Attempt: 1, Error: "poison", Dead: true}})
	if err := b.LeaseRelease(testutil.Context(t), &store.LeaseReleaseParams{Owner: owner, Leases: []store.LeaseRef{l.LeaseRef}}); err != nil {
		t.Fatal(err)
	}
	return msgs[0].ID
}

var adminTests = map[string]func(*testing.T, store.Backend){
	"DeadLetterRetryToTail": func(t *testing.T, b store.Backend) {
		id := deadLetter(t, b, ref("x"))
		enqueueN(t, b, ref("x"), 1) // seq 2 runs before the retried copy
		ctx := testutil.Context(t)
		d, err := b.DeadLetterGet(ctx, id)
		if err != nil || d.Error != "poison" || d.Ref != ref("x") || d.Name != "inc" {
			t.Fatalf("dead letter = %+v, %v", d, err)
		}
		res, err := b.DeadLetterRetry(ctx, id, 0)
		if err != nil || res.Seq != 3 || res.MessageID == id {
			t.Fatalf("retry = %+v, %v (want a new message at the tail, seq 3)", res, err)
		}
		if _, err := b.DeadLetterGet(ctx, id); !errors.Is(err, actor.ErrNotFound) {
			t.Fatal("the retried dead letter is still listed")
		}
		if st := status(t, b, id); st.State != store.MessageDead {
			t.Fatal("retry rewrote the dead message's history")
		}
		owner := newOwner()
		msgs := runAll(t, b, owner, claimOne(t, b, owner, ref("x")))
		if len(msgs) != 2 || msgs[0].Seq != 2 || msgs[1].ID != res.MessageID {
			t.Fatalf("ran %+v", msgs)
		}
		if _, err := b.DeadLetterRetry(ctx, id, 0); !errors.Is(err, actor.ErrNotFound) {
			t.Fatalf("retrying twice: %v", err)
		}
	},
	"DeadLetterDiscardAndPaging": func(t *testing.T, b store.Backend) {
		var ids []int64
		for i := 0; i < 5; i++ {
			ids = append(ids, deadLetter(t, b, ref(fmt.Sprintf("d%d", i))))
		}
		deadLetter(t, b, actor.Ref{Type: typeB, ID: "other-type"})
		ctx := testutil.Context(t)
		page, err := b.DeadLetterList(ctx, &store.DeadLetterListParams{Type: typeA, Limit: 3})
		if err != nil || len(page) != 3 || page[0].MessageID != ids[0] {
			t.Fatalf("first page = %+v, %v", page, err)
		}
		page2, _ := b.DeadLetterList(ctx, &store.DeadLetterListParams{Type: typeA, AfterID: page[2].MessageID, Limit: 3})
		if len(page2) != 2 {
			t.Fatalf("second page has %d", len(page2))
		}
		if all, _ := b.DeadLetterList(ctx, &store.DeadLetterListParams{Limit: 100}); len(all) != 6 {
			t.Fatalf("all types: %d", len(all))
		}
		if ok, err := b.DeadLetterDiscard(ctx, ids[0]); !ok || err != nil {
			t.Fatalf("discard = %v, %v", ok, err)
		}
		if ok, _ := b.DeadLetterDiscard(ctx, ids[0]); ok {
			t.Fatal("discarded twice")
		}
	},
	"SkipHead": func(t *testing.T, b store.Backend) {
		res := enqueueN(t, b, ref("x"), 2)
		ctx := testutil.Context(t)
		id, err := b.ActorSkipHead(ctx, ref("x"), "stuck")
		if err != nil || id != res[0].MessageID {
			t.Fatalf("skip = %d, %v", id, err)
		}
		if d, err := b.DeadLetterGet(ctx, id); err != nil || d.Error == "" {
			t.Fatalf("skipped message not dead-lettered: %+v, %v", d, err)
		}
		owner := newOwner()
		l := claimOne(t, b, owner, ref("x"))
		msgs := take(t, b, owner, l, 10)
		if len(msgs) != 1 || msgs[0].ID != res[1].MessageID {
			t.Fatalf("after skip took %+v", msgs)
		}
		if _, err := b.ActorSkipHead(ctx, ref("x"), "running"); err == nil {
			t.Fatal("skipped a message running under a live lease")
		}
		if _, err := b.ActorSkipHead(ctx, ref("nobody"), "x"); !errors.Is(err, actor.ErrNotFound) {
			t.Fatalf("skip on a missing actor: %v", err)
		}
	},
	"ActorDirectory": func(t *testing.T, b store.Backend) {
		for i, st := range []string{`{"status":"submitted","n":1,"ok":true}`, `{"status":"draft","n":2,"ok":false}`, `{"status":"submitted","n":3,"ok":null}`} {
			r := ref(fmt.Sprintf("o%d", i))
			enqueueN(t, b, r, 1)
			owner := newOwner()
			l := claimOne(t, b, owner, r)
			msgs := take(t, b, owner, l, 1)
			commit(t, b, &store.TurnCommitParams{Owner: owner, Lease: l.LeaseRef, State: []byte(st), StateVersion: 1, Completed: completeAll(msgs)})
		}
		enqueueN(t, b, ref("o3"), 1) // pending work, no state
		ctx := testutil.Context(t)
		cases := []struct {
			name   string
			filter *store.StateFilter
			want   []string
		}{
			{"all", nil, []string{"o0", "o1", "o2", "o3"}},
			{"string", &store.StateFilter{Path: "status", Value: "submitted"}, []string{"o0", "o2"}},
			{"number", &store.StateFilter{Path: "n", Value: 2}, []string{"o1"}},
			{"bool", &store.StateFilter{Path: "ok", Value: true}, []string{"o0"}},
			{"null", &store.StateFilter{Path: "ok", Value: nil}, []string{"o2"}},
		}
		for _, c := range cases {
			got, err := b.ActorList(ctx, &store.ActorListParams{Type: typeA, Filter: c.filter, Limit: 10})
			if err != nil {
				t.Fatalf("%s: %v", c.name, err)
			}
			var ids []string
			for _, a := range got {
				ids = append(ids, a.Ref.ID)
			}
			if fmt.Sprint(ids) != fmt.Sprint(c.want) {
				t.Fatalf("%s: got %v, want %v", c.name, ids, c.want)
			}
		}
		page, _ := b.ActorList(ctx, &store.ActorListParams{Type: typeA, AfterID: "o1", Limit: 1})
		if len(page) != 1 || page[0].Ref.ID != "o2" {
			t.Fatalf("paging after o1 = %+v", page)
		}
		if _, err := b.ActorList(ctx, &store.ActorListParams{Type: typeA, Filter: &store.StateFilter{Path: "a'; DROP TABLE x; --", Value: 1}}); !errors.Is(err, actor.ErrInvalidArguments) {
			t.Fatalf("a hostile path was not refused: %v", err)
		}
		time.Sleep(30 * time.Millisecond)
		quiet, err := b.ActorList(ctx, &store.ActorListParams{Type: typeA, Quiet: 10 * time.Millisecond, Limit: 10})
		if err != nil || len(quiet) != 3 {
			t.Fatalf("quiet actors = %d, %v (o3 has pending work)", len(quiet), err)
		}
	},
	"TableCount": func(t *testing.T, b store.Backend) {
		enqueueN(t, b, ref("x"), 3)
		ctx := testutil.Context(t)
		if n, err := b.TableCount(ctx, "ductus_messages"); err != nil || n != 3 {
			t.Fatalf("ductus_messages = %d, %v", n, err)
		}
		for _, bad := range []string{"", "actors", "ductus_actors; DROP TABLE ductus_actors", "DUCTUS_ACTORS", "ductus_actors a"} {
			if _, err := b.TableCount(ctx, bad); !errors.Is(err, actor.ErrInvalidArguments) {
				t.Errorf("TableCount(%q) = %v, want ErrInvalidArguments", bad, err)
			}
		}
	},
	"OrphanedAgainstOwnerTable": func(t *testing.T, b store.Backend) {
		ctx := testutil.Context(t)
		// The process registry is the owner table: its id column holds
		// "alive" and nothing else, as an application's own table would
		// hold its live owners.
		if err := b.ProcessRegister(ctx, &store.ProcessInfo{ID: "alive", Kind: "owner", Host: "h", PID: 1, Version: "test", Metadata: []byte(`{}`)}); err != nil {
			t.Fatal(err)
		}
		enqueueN(t, b, ref("alive"), 1)
		enqueueN(t, b, ref("orphan"), 1)
		got, err := b.ActorList(ctx, &store.ActorListParams{Type: typeA, OrphanedAgainst: &store.OwnerRelation{Table: "ductus_processes", Column: "id"}})
		if err != nil || len(got) != 1 || got[0].Ref.ID != "orphan" {
			t.Fatalf("orphaned = %+v, %v", got, err)
		}
		if _, err := b.ActorList(ctx, &store.ActorListParams{Type: typeA, OrphanedAgainst: &store.OwnerRelation{Table: "x; DROP", Column: "id"}}); !errors.Is(err, actor.ErrInvalidArguments) {
			t.Fatalf("a hostile table name was not refused: %v", err)
		}
	},
	"PruneFinishedHistory": func(t *testing.T, b store.Backend) {
		res := enqueueN(t, b, ref("x"), 3)
		owner := newOwner()
		l := claimOne(t, b, owner, ref("x"))
		msgs := take(t, b, owner, l, 2)
		commit(t, b, &store.TurnCommitParams{Owner: owner, Lease: l.LeaseRef, Completed: completeAll(msgs)})
		ctx := testutil.Context(t)
		if r, err := b.Prune(ctx, &store.PruneParams{Keep: time.Hour, Limit: 10}); err != nil || r.Total() != 0 {
			t.Fatalf("pruned recent history: %+v, %v", r, err)
		}
		time.Sleep(50 * time.Millisecond)
		r, err := b.Prune(ctx, &store.PruneParams{Keep: 10 * time.Millisecond, Limit: 1})
		if err != nil || r.Messages != 1 {
			t.Fatalf("prune with limit 1 = %+v, %v", r, err)
		}
		r, _ = b.Prune(ctx, &store.PruneParams{Keep: 10 * time.Millisecond, Limit: 10})
		if r.Messages != 1 {
			t.Fatalf("second prune = %+v", r)
		}
		if st := status(t, b, res[2].MessageID); st.State != store.MessagePending {
			t.Fatal("prune removed an unfinished message")
		}
	},
}
