package postgres

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/ductus/ductus/actor"
	"github.com/ductus/ductus/internal/testutil"
	"github.com/ductus/ductus/runtime/store"
	"github.com/ductus/ductus/runtime/wakeuptest"
)

// listenTo starts b.Listen and returns the channel of its signals.
func listenTo(t *testing.T, b *Backend) <-chan store.Signal {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	ch := make(chan store.Signal, 64)
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = b.Listen(ctx, func(s store.Signal) {
			select {
			case ch <- s:
			default:
			}
		})
	}()
	t.Cleanup(func() { cancel(); <-done })
	return ch
}

// waitSignal waits for a signal matching want.
func waitSignal(t *testing.T, ch <-chan store.Signal, what string, want func(store.Signal) bool) {
	t.Helper()
	deadline := time.After(10 * time.Second)
	for {
		select {
		case s := <-ch:
			if want(s) {
				return
			}
		case <-deadline:
			t.Fatalf("no %s signal arrived", what)
		}
	}
}

func quiet(t *testing.T, ch <-chan store.Signal, d time.Duration) {
	t.Helper()
	select {
	case s := <-ch:
		t.Fatalf("unexpected signal %+v", s)
	case <-time.After(d):
	}
}

func isWork(s store.Signal) bool { return s.Work }

// TestSignalsAcrossPools: a listener in one pool (one process) sees the
// work and done notifications of commits made through another pool, only
// when asked for, and keeps listening after its connection is killed.
func TestSignalsAcrossPools(t *testing.T) {
	need(t)
	schema := newSchema()
	listener := openSchema(t, schema, nil)
	writer := openSchema(t, schema, nil)
	ch := listenTo(t, listener)
	waitSignal(t, ch, "connected", isWork) // a (re)connect always says "poll once"
	ctx := testutil.Context(t)
	r := actor.Ref{Type: "s", ID: "x"}

	if _, err := writer.MailboxEnqueue(ctx, nil, &store.MailboxEnqueueParams{Messages: []store.NewMessage{{Ref: r, Name: "m"}}}); err != nil {
		t.Fatal(err)
	}
	quiet(t, ch, 300*time.Millisecond) // no Signal asked, no NOTIFY sent
	res, err := writer.MailboxEnqueue(ctx, nil, &store.MailboxEnqueueParams{Signal: true, Messages: []store.NewMessage{{Ref: r, Name: "m", Ask: true}}})
	if err != nil {
		t.Fatal(err)
	}
	waitSignal(t, ch, "work", isWork)

	ls, err := writer.LeaseClaim(ctx, &store.LeaseClaimParams{Owner: "w", TTL: time.Minute, Limit: 1, Types: []string{"s"}})
	if err != nil || len(ls) != 1 {
		t.Fatal(ls, err)
	}
	msgs, err := writer.MessageTake(ctx, &store.MessageTakeParams{Owner: "w", Lease: ls[0].LeaseRef, Limit: 10})
	if err != nil || len(msgs) != 2 {
		t.Fatal(msgs, err)
	}
	// A commit that is refused notifies nobody.
	stale := ls[0].LeaseRef
	stale.Generation++
	if _, err := writer.TurnCommit(ctx, &store.TurnCommitParams{Owner: "w", Lease: stale, SignalDone: []int64{res[0].MessageID}}); !errors.Is(err, actor.ErrLostActivation) {
		t.Fatalf("stale commit: %v", err)
	}
	quiet(t, ch, 300*time.Millisecond)
	comp := []store.Completion{{MessageID: msgs[0].ID, Attempt: 1}, {MessageID: msgs[1].ID, Attempt: 1, Result: []byte(`"ok"`)}}
	if _, err := writer.TurnCommit(ctx, &store.TurnCommitParams{Owner: "w", Lease: ls[0].LeaseRef, Completed: comp, SignalDone: []int64{res[0].MessageID}}); err != nil {
		t.Fatal(err)
	}
	waitSignal(t, ch, "done", func(s store.Signal) bool { return len(s.Done) == 1 && s.Done[0] == res[0].MessageID })

	// Kill the listening connection: the hub reconnects by itself, says
	// "poll once", and hears the next notification.
	var oldPID int32
	var killed int
	if err := writer.Pool().QueryRow(ctx, `SELECT pid FROM pg_stat_activity WHERE application_name = $1`, "ductus-listen:"+schema).Scan(&oldPID); err != nil {
		t.Fatal(err)
	}
	if err := writer.Pool().QueryRow(ctx, `SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity WHERE application_name = $1`, "ductus-listen:"+schema).Scan(&killed); err != nil || killed != 1 {
		t.Fatalf("terminated %d listeners: %v", killed, err)
	}
	waitSignal(t, ch, "reconnected", isWork)
	var newPID int32
	if err := writer.Pool().QueryRow(ctx, `SELECT pid FROM pg_stat_activity WHERE application_name = $1`, "ductus-listen:"+schema).Scan(&newPID); err != nil || newPID == oldPID {
		t.Fatalf("listener after the kill: pid %d (was %d), %v", newPID, oldPID, err)
	}
	if _, err := writer.MailboxEnqueue(ctx, nil, &store.MailboxEnqueueParams{Signal: true, Messages: []store.NewMessage{{Ref: r, Name: "m"}}}); err != nil {
		t.Fatal(err)
	}
	waitSignal(t, ch, "work after the reconnect", isWork)
}

// TestSchemaIsolation: two applications in two schemas of one database
// see neither each other's actors nor each other's wake-ups.
func TestSchemaIsolation(t *testing.T) {
	need(t)
	a := openSchema(t, newSchema(), nil)
	b := openSchema(t, newSchema(), nil)
	chB := listenTo(t, b)
	waitSignal(t, chB, "connected", isWork)
	ctx := testutil.Context(t)
	r := actor.Ref{Type: "iso", ID: "x"}
	ra, err := a.MailboxEnqueue(ctx, nil, &store.MailboxEnqueueParams{Signal: true, Messages: []store.NewMessage{{Ref: r, Name: "m"}, {Ref: r, Name: "m"}}})
	if err != nil {
		t.Fatal(err)
	}
	quiet(t, chB, 300*time.Millisecond)
	if _, err := b.ActorGet(ctx, r); !errors.Is(err, actor.ErrNotFound) {
		t.Fatalf("schema b sees a's actor: %v", err)
	}
	if ls, err := b.LeaseClaim(ctx, &store.LeaseClaimParams{Owner: "w", TTL: time.Minute, Limit: 10, Types: []string{"iso"}}); err != nil || len(ls) != 0 {
		t.Fatalf("schema b claimed %v, %v", ls, err)
	}
	if st, _ := b.MessageStatus(ctx, []int64{ra[0].MessageID}); st[0].State != store.MessageMissing {
		t.Fatalf("schema b sees a's message: %+v", st[0])
	}
	rb, err := b.MailboxEnqueue(ctx, nil, &store.MailboxEnqueueParams{Messages: []store.NewMessage{{Ref: r, Name: "m"}}})
	if err != nil || rb[0].Seq != 1 {
		t.Fatalf("b's own actor: %+v, %v", rb, err)
	}
	if ls, err := a.LeaseClaim(ctx, &store.LeaseClaimParams{Owner: "w", TTL: time.Minute, Limit: 10, Types: []string{"iso"}}); err != nil || len(ls) != 1 {
		t.Fatalf("schema a claimed %v, %v", ls, err)
	}
	if info, _ := a.ActorGet(ctx, r); info.Unfinished != 2 {
		t.Fatalf("a's actor has %d unfinished", info.Unfinished)
	}
}

// TestWakeups runs the cross-process wake-up suite: processes with their
// own pools on one schema, polling only every ten minutes.
func TestWakeups(t *testing.T) {
	need(t)
	wakeuptest.Run(t, func(t *testing.T) func(t *testing.T) store.Backend {
		schema := newSchema()
		return func(t *testing.T) store.Backend { return openSchema(t, schema, nil) }
	})
}
