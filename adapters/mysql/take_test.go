package mysql

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/ductus/ductus/actor"
	"github.com/ductus/ductus/runtime/store"
)

// TestTakeProcedure covers what ductus_take_1 decides that the shared
// suites reach only by timing: a commit refused while the lease still
// holds (its messages are no longer claimed: a retry after the first
// attempt landed) moves nothing with its TakeNext; a paused actor's
// activation takes nothing; a message not yet due holds back the later
// ones; and an empty TakeNext writes no claimed row.
func TestTakeProcedure(t *testing.T) {
	ctx := context.Background()
	b := openBackend(t, Config{})
	r := actor.Ref{Type: "t", ID: "x"}
	tell := func(delay time.Duration) int64 {
		t.Helper()
		res, err := b.MailboxEnqueue(ctx, nil, &store.MailboxEnqueueParams{Messages: []store.NewMessage{{Ref: r, Name: "m", Args: []byte(`{}`), Delay: delay}}})
		if err != nil {
			t.Fatal(err)
		}
		return res[0].MessageID
	}
	claimed := func() int {
		t.Helper()
		var n int
		if err := b.db.QueryRowContext(ctx, `SELECT COUNT(*) FROM ductus_claimed`).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	done := func(ms []store.Message) []store.Completion {
		out := make([]store.Completion, len(ms))
		for i, m := range ms {
			out[i] = store.Completion{MessageID: m.ID, Attempt: m.Attempt}
		}
		return out
	}
	first := tell(0)
	second, third := tell(0), tell(0)
	ls, err := b.LeaseClaim(ctx, &store.LeaseClaimParams{Owner: "o", TTL: time.Minute, Limit: 1, Types: []string{"t"}})
	if err != nil || len(ls) != 1 {
		t.Fatal(ls, err)
	}
	l := ls[0].LeaseRef
	msgs, err := b.MessageTake(ctx, &store.MessageTakeParams{Owner: "o", Lease: l, Limit: 1})
	if err != nil || len(msgs) != 1 || msgs[0].ID != first {
		t.Fatalf("take: %+v, %v", msgs, err)
	}
	p := &store.TurnCommitParams{Owner: "o", Lease: l, Completed: done(msgs)}
	if _, err := b.TurnCommit(ctx, p); err != nil {
		t.Fatal(err)
	}
	p.TakeNext = 10
	if _, err := b.TurnCommit(ctx, p); !errors.Is(err, actor.ErrLostActivation) {
		t.Fatalf("the repeated commit: %v, want ErrLostActivation", err)
	}
	if n := claimed(); n != 0 {
		t.Fatalf("the refused commit's TakeNext claimed %d rows", n)
	}

	// Paused: the lease holds, the take succeeds and moves nothing.
	if _, err := b.ActorPause(ctx, r, true); err != nil {
		t.Fatal(err)
	}
	if msgs, err := b.MessageTake(ctx, &store.MessageTakeParams{Owner: "o", Lease: l, Limit: 10}); err != nil || len(msgs) != 0 {
		t.Fatalf("a paused actor's take: %+v, %v", msgs, err)
	}
	if _, err := b.ActorPause(ctx, r, false); err != nil {
		t.Fatal(err)
	}

	// A delayed fourth message: the take stops in front of it, and a
	// TakeNext behind it finds nothing due and writes nothing.
	tell(time.Hour)
	fifth := tell(0)
	msgs, err = b.MessageTake(ctx, &store.MessageTakeParams{Owner: "o", Lease: l, Limit: 10})
	if err != nil || len(msgs) != 2 || msgs[0].ID != second || msgs[1].ID != third {
		t.Fatalf("take before the delayed message: %+v, %v", msgs, err)
	}
	res, err := b.TurnCommit(ctx, &store.TurnCommitParams{Owner: "o", Lease: l, Completed: done(msgs), TakeNext: 10})
	if err != nil || len(res.Next) != 0 {
		t.Fatalf("TakeNext in front of the delayed message: %+v, %v", res.Next, err)
	}
	if n := claimed(); n != 0 {
		t.Fatalf("an empty TakeNext left %d claimed rows", n)
	}
	var due int
	if err := b.db.QueryRowContext(ctx, `SELECT COUNT(*) FROM ductus_ready WHERE message_id = ?`, fifth).Scan(&due); err != nil || due != 1 {
		t.Fatalf("the message behind the delayed one left ready: %d, %v", due, err)
	}
}
