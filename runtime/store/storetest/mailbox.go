package storetest

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"sync"
	"testing"
	"time"

	"github.com/ductus/ductus/actor"
	"github.com/ductus/ductus/internal/testutil"
	"github.com/ductus/ductus/runtime/store"
)

var mailboxTests = map[string]func(*testing.T, store.Backend){
	"SequencesPerActor": func(t *testing.T, b store.Backend) {
		res := enqueue(t, b, msg(ref("x"), "m", 1), msg(ref("y"), "m", 1), msg(ref("x"), "m", 2), msg(ref("x"), "m", 3))
		want := []int64{1, 1, 2, 3}
		for i, r := range res {
			if r.Seq != want[i] || r.MessageID == 0 || r.Duplicate {
				t.Fatalf("result %d = %+v, want seq %d", i, r, want[i])
			}
		}
		more := enqueueN(t, b, ref("x"), 2)
		if more[0].Seq != 4 || more[1].Seq != 5 {
			t.Fatalf("sequences continue at 4,5; got %d,%d", more[0].Seq, more[1].Seq)
		}
		if a := actorInfo(t, b, ref("x")); a.Unfinished != 5 {
			t.Fatalf("unfinished = %d, want 5", a.Unfinished)
		}
	},
	"ConcurrentEnqueueGapFree": func(t *testing.T, b store.Backend) {
		const goroutines, each = 8, 25
		var mu sync.Mutex
		var seqs []int64
		var wg sync.WaitGroup
		errs := make(chan error, goroutines)
		for g := 0; g < goroutines; g++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := 0; i < each; i++ {
					var res []store.EnqueueResult
					err := store.Retry(testutil.Context(t), 0, func() error {
						var err error
						res, err = b.MailboxEnqueue(testutil.Context(t), nil, &store.MailboxEnqueueParams{Messages: []store.NewMessage{msg(ref("hot"), "m", i)}})
						return err
					})
					if err != nil {
						errs <- err
						return
					}
					mu.Lock()
					seqs = append(seqs, res[0].Seq)
					mu.Unlock()
				}
			}()
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			t.Fatalf("concurrent enqueue: %v", err)
		}
		sort.Slice(seqs, func(i, j int) bool { return seqs[i] < seqs[j] })
		for i, s := range seqs {
			if s != int64(i+1) {
				t.Fatalf("sequences are not unique and gap-free: position %d holds %d", i, s)
			}
		}
	},
	"IdempotencyKey": func(t *testing.T, b store.Backend) {
		m := msg(ref("x"), "m", 1)
		m.IdempotencyKey = "k1"
		first := enqueue(t, b, m)[0]
		again := enqueue(t, b, m)[0]
		if !again.Duplicate || again.MessageID != first.MessageID {
			t.Fatalf("repeat = %+v, want duplicate of %d", again, first.MessageID)
		}
		// Inside one batch: the second use of a key is the first's duplicate.
		m2 := msg(ref("x"), "m", 2)
		m2.IdempotencyKey = "k2"
		res := enqueue(t, b, m2, m2, msg(ref("x"), "m", 3))
		if res[0].Duplicate || !res[1].Duplicate || res[1].MessageID != res[0].MessageID || res[2].Seq != 3 {
			t.Fatalf("batch results = %+v", res)
		}
		if a := actorInfo(t, b, ref("x")); a.Unfinished != 3 {
			t.Fatalf("duplicates wrote rows: unfinished = %d, want 3", a.Unfinished)
		}
		// Keys are per actor.
		other := m
		other.Ref = ref("y")
		if r := enqueue(t, b, other)[0]; r.Duplicate {
			t.Fatal("a key used by another actor made a duplicate")
		}
	},
	"MailboxCap": func(t *testing.T, b store.Backend) {
		ctx := testutil.Context(t)
		p := &store.MailboxEnqueueParams{MailboxCap: 3, Messages: []store.NewMessage{msg(ref("x"), "m", 1), msg(ref("x"), "m", 2)}}
		if _, err := b.MailboxEnqueue(ctx, nil, p); err != nil {
			t.Fatal(err)
		}
		// Two more would make four: the whole batch, including the message
		// for another actor, is refused.
		p.Messages = []store.NewMessage{msg(ref("other"), "m", 1), msg(ref("x"), "m", 3), msg(ref("x"), "m", 4)}
		_, err := b.MailboxEnqueue(ctx, nil, p)
		var full *actor.MailboxFullError
		if !errors.As(err, &full) || !errors.Is(err, actor.ErrMailboxFull) || full.Ref != ref("x") {
			t.Fatalf("err = %v, want a MailboxFullError for %s", err, ref("x"))
		}
		if _, err := b.ActorGet(ctx, ref("other")); !errors.Is(err, actor.ErrNotFound) {
			t.Fatalf("a refused batch created another actor: %v", err)
		}
		if a := actorInfo(t, b, ref("x")); a.Unfinished != 2 {
			t.Fatalf("unfinished = %d after a refused batch, want 2", a.Unfinished)
		}
		// System messages may use the reserved allowance.
		sys := msg(ref("x"), "outcome", 1)
		sys.System = true
		p = &store.MailboxEnqueueParams{MailboxCap: 2, SystemAllowance: 1, Messages: []store.NewMessage{sys}}
		if _, err := b.MailboxEnqueue(ctx, nil, p); err != nil {
			t.Fatalf("a system message within the allowance was refused: %v", err)
		}
		// SkipFull reports instead of failing.
		p = &store.MailboxEnqueueParams{MailboxCap: 2, SkipFull: true, Messages: []store.NewMessage{msg(ref("x"), "m", 9), msg(ref("z"), "m", 1)}}
		res, err := b.MailboxEnqueue(ctx, nil, p)
		if err != nil || !res[0].Full || res[1].Full || res[1].MessageID == 0 {
			t.Fatalf("SkipFull results %+v, %v", res, err)
		}
	},
	"MustExist": func(t *testing.T, b store.Backend) {
		m := msg(ref("ghost"), "m", 1)
		m.MustExist = true
		res := enqueue(t, b, m)
		if !res[0].Dropped || res[0].MessageID != 0 {
			t.Fatalf("result = %+v, want dropped", res[0])
		}
		if _, err := b.ActorGet(testutil.Context(t), ref("ghost")); !errors.Is(err, actor.ErrNotFound) {
			t.Fatalf("MustExist created the actor: %v", err)
		}
	},
	"AvailableAtDelaysClaim": func(t *testing.T, b store.Backend) {
		now, err := b.Now(testutil.Context(t))
		if err != nil {
			t.Fatal(err)
		}
		later := msg(ref("later"), "m", 1)
		later.AvailableAt = now.Add(time.Hour)
		delayed := msg(ref("delayed"), "m", 1)
		delayed.Delay = 300 * time.Millisecond
		enqueue(t, b, later, delayed)
		if ls := claim(t, b, newOwner(), time.Minute, 10); len(ls) != 0 {
			t.Fatalf("claimed %v before their messages were due", ls)
		}
		owner := newOwner()
		testutil.Eventually(t, 5*time.Second, "the delayed message to come due", func() bool {
			ls := claim(t, b, owner, time.Minute, 10)
			return len(ls) == 1 && ls[0].Ref == ref("delayed")
		})
	},
	// A write cancelled at any moment (a host's Shutdown cancels its loops;
	// a caller's request ends) leaves the backend usable: the next write
	// succeeds. SQLite's writer once kept a transaction its driver had
	// reported as a cancelled BEGIN, and every later write failed.
	"CancelledWritesLeaveBackendUsable": func(t *testing.T, b store.Backend) {
		r := ref("cancelled")
		write := func(ctx context.Context, i int) error {
			if i%2 == 1 {
				tx, err := b.Begin(ctx, store.TxOptions{})
				if err != nil {
					return err
				}
				_, err = b.MailboxEnqueue(ctx, tx, &store.MailboxEnqueueParams{Messages: []store.NewMessage{msg(r, "m", i)}})
				return errors.Join(err, tx.Rollback(context.Background()))
			}
			_, err := b.MailboxEnqueue(ctx, nil, &store.MailboxEnqueueParams{Messages: []store.NewMessage{msg(r, "m", i)}})
			return err
		}
		// SQLite's failure came within 50 cancelled writes; a server
		// backend reconnects after each one, so the loop stops at 150.
		const n = 1000
		ctx := testutil.Context(t)
		cancelled, i := 0, 0
		for ; i < n && cancelled < 150; i++ {
			cctx, cancel := context.WithCancel(ctx)
			delay := time.Duration(i%100) * time.Microsecond
			go func() { time.Sleep(delay); cancel() }()
			if write(cctx, i) != nil {
				cancelled++
			}
			cancel()
			if err := write(ctx, i); err != nil {
				t.Fatalf("a write after a cancelled one (%d of %d cancelled so far): %v", cancelled, i+1, err)
			}
		}
		if cancelled == 0 {
			t.Fatal("no write was cancelled: the test proved nothing")
		}
		t.Logf("%d of %d writes cancelled, each followed by one that succeeded", cancelled, i)
	},
	"CallerTransaction": func(t *testing.T, b store.Backend) {
		ctx := testutil.Context(t)
		tx, err := b.Begin(ctx, store.TxOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := b.MailboxEnqueue(ctx, tx, &store.MailboxEnqueueParams{Messages: []store.NewMessage{msg(ref("tx"), "m", 1)}}); err != nil {
			t.Fatal(err)
		}
		if err := tx.Rollback(ctx); err != nil {
			t.Fatal(err)
		}
		if _, err := b.ActorGet(ctx, ref("tx")); !errors.Is(err, actor.ErrNotFound) {
			t.Fatalf("a rolled-back enqueue left the actor: %v", err)
		}
		tx, err = b.Begin(ctx, store.TxOptions{Relaxed: true})
		if err != nil {
			t.Fatal(err)
		}
		res, err := b.MailboxEnqueue(ctx, tx, &store.MailboxEnqueueParams{Messages: []store.NewMessage{msg(ref("tx"), "m", 1)}})
		if err != nil {
			t.Fatal(err)
		}
		if err := tx.Commit(ctx); err != nil {
			t.Fatal(err)
		}
		if st := status(t, b, res[0].MessageID); st.State != store.MessagePending {
			t.Fatalf("committed message state %s", st.State)
		}
	},
	"StatusOfUnknownMessage": func(t *testing.T, b store.Backend) {
		if st := status(t, b, 987654321); st.State != store.MessageMissing {
			t.Fatalf("state %s, want missing", st.State)
		}
		if _, err := b.MessageGet(testutil.Context(t), 987654321); !errors.Is(err, actor.ErrNotFound) {
			t.Fatalf("MessageGet err = %v, want ErrNotFound", err)
		}
	},
	"LargeBatchAcrossActors": func(t *testing.T, b store.Backend) {
		var msgs []store.NewMessage
		for i := 0; i < 1200; i++ {
			msgs = append(msgs, msg(actor.Ref{Type: typeA, ID: fmt.Sprintf("a%03d", i%150)}, "m", i))
		}
		res := enqueue(t, b, msgs...)
		perActor := map[string]int64{}
		for i, r := range res {
			id := msgs[i].Ref.ID
			perActor[id]++
			if r.Seq != perActor[id] {
				t.Fatalf("message %d of %s has seq %d, want %d (batch order is sequence order)", i, id, r.Seq, perActor[id])
			}
		}
		m, err := b.MessageGet(testutil.Context(t), res[151].MessageID)
		if err != nil || m.Ref.ID != "a001" || m.Seq != 2 || string(m.Args) != "151" {
			t.Fatalf("MessageGet = %+v, %v", m, err)
		}
	},
}
