package postgres

import (
	"errors"
	"fmt"
	"sync"
	"testing"

	"github.com/ductus/ductus/actor"
	"github.com/ductus/ductus/internal/testutil"
	"github.com/ductus/ductus/runtime/store"
)

// TestConcurrentSameKey races enqueues of one idempotency key at one actor:
// the one-statement path can miss a key committed while it waited for the
// actor's lock, so the unique index refuses it and the batch is redone with
// locks first. Exactly one message is written; every caller gets its ID.
func TestConcurrentSameKey(t *testing.T) {
	need(t)
	b := openSchema(t, newSchema(), nil)
	ctx := testutil.Context(t)
	r := actor.Ref{Type: "k", ID: "x"}
	for round := 0; round < 5; round++ {
		key := fmt.Sprintf("key-%d", round)
		const n = 8
		var wg sync.WaitGroup
		results := make([]store.EnqueueResult, n)
		errs := make([]error, n)
		for i := 0; i < n; i++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				res, err := b.MailboxEnqueue(ctx, nil, &store.MailboxEnqueueParams{Messages: []store.NewMessage{{Ref: r, Name: "m", IdempotencyKey: key}}})
				if err == nil {
					results[i] = res[0]
				}
				errs[i] = err
			}()
		}
		wg.Wait()
		fresh := 0
		for i := 0; i < n; i++ {
			if errs[i] != nil {
				t.Fatalf("round %d caller %d: %v", round, i, errs[i])
			}
			if !results[i].Duplicate {
				fresh++
			}
			if results[i].MessageID != results[0].MessageID {
				t.Fatalf("round %d: callers got messages %d and %d for one key", round, results[0].MessageID, results[i].MessageID)
			}
		}
		if fresh != 1 {
			t.Fatalf("round %d: %d callers wrote the message", round, fresh)
		}
	}
	t.Logf("%d enqueues were redone with locks first", b.keyRetries.Load())
	if a, _ := b.ActorGet(ctx, r); a.Unfinished != 5 {
		t.Fatalf("unfinished = %d, want 5 (one per key)", a.Unfinished)
	}
}

// TestEnqueueShapes checks each statement shape against the same
// expectations: one message, a run for one actor, many actors, with and
// without keys, creating or must-exist, and a mixed batch (the general
// path).
func TestEnqueueShapes(t *testing.T) {
	need(t)
	b := openSchema(t, newSchema(), nil)
	ctx := testutil.Context(t)
	ref := func(id string) actor.Ref { return actor.Ref{Type: "s", ID: id} }
	m := func(id string, key string, must bool) store.NewMessage {
		return store.NewMessage{Ref: ref(id), Name: "m", Args: []byte(`{}`), IdempotencyKey: key, MustExist: must}
	}
	enq := func(p *store.MailboxEnqueueParams) []store.EnqueueResult {
		t.Helper()
		res, err := b.MailboxEnqueue(ctx, nil, p)
		if err != nil {
			t.Fatal(err)
		}
		return res
	}
	// One message; a run of three; a run with a repeated and a stored key.
	if r := enq(&store.MailboxEnqueueParams{Messages: []store.NewMessage{m("a", "", false)}}); r[0].Seq != 1 {
		t.Fatalf("one: %+v", r)
	}
	r := enq(&store.MailboxEnqueueParams{Messages: []store.NewMessage{m("a", "", false), m("a", "", false), m("a", "", false)}})
	if r[0].Seq != 2 || r[2].Seq != 4 || r[0].MessageID >= r[1].MessageID {
		t.Fatalf("run: %+v", r)
	}
	enq(&store.MailboxEnqueueParams{Messages: []store.NewMessage{m("a", "k1", false)}})
	r = enq(&store.MailboxEnqueueParams{Messages: []store.NewMessage{m("a", "k2", false), m("a", "k1", false), m("a", "k2", false), m("a", "", false)}})
	if r[0].Seq != 6 || !r[1].Duplicate || !r[2].Duplicate || r[2].MessageID != r[0].MessageID || r[3].Seq != 7 {
		t.Fatalf("run with keys: %+v", r)
	}
	// Many actors, more than 32 messages (a custom plan), with a key.
	var many []store.NewMessage
	for i := 0; i < 40; i++ {
		many = append(many, m(fmt.Sprintf("m%d", i%4), "", false))
	}
	many = append(many, m("a", "k1", false))
	r = enq(&store.MailboxEnqueueParams{Messages: many})
	for i := 0; i < 40; i++ {
		if r[i].Seq != int64(i/4+1) {
			t.Fatalf("many: message %d has seq %d", i, r[i].Seq)
		}
	}
	if !r[40].Duplicate {
		t.Fatalf("many: the stored key was not a duplicate: %+v", r[40])
	}
	// Must-exist: one actor, many actors, and a mixed batch.
	if r = enq(&store.MailboxEnqueueParams{Messages: []store.NewMessage{m("a", "", true)}}); r[0].Seq != 8 {
		t.Fatalf("must-exist one: %+v", r)
	}
	if r = enq(&store.MailboxEnqueueParams{Messages: []store.NewMessage{m("ghost", "", true)}}); !r[0].Dropped {
		t.Fatalf("must-exist missing: %+v", r)
	}
	r = enq(&store.MailboxEnqueueParams{Messages: []store.NewMessage{m("a", "", true), m("ghost", "", true), m("m0", "", true)}})
	if r[0].Seq != 9 || !r[1].Dropped || r[2].Seq != 11 {
		t.Fatalf("must-exist many: %+v", r)
	}
	r = enq(&store.MailboxEnqueueParams{Messages: []store.NewMessage{m("new", "", false), m("ghost", "", true), m("a", "", true)}})
	if r[0].Seq != 1 || !r[1].Dropped || r[2].Seq != 10 {
		t.Fatalf("mixed: %+v", r)
	}
	if _, err := b.ActorGet(ctx, ref("ghost")); !errors.Is(err, actor.ErrNotFound) {
		t.Fatalf("a must-exist message created its actor: %v", err)
	}
	// A full mailbox in each shape, failing the batch or reported.
	for _, msgs := range [][]store.NewMessage{
		{m("a", "", false)},
		{m("a", "", false), m("a", "", false)},
		{m("a", "k9", false)},
		{m("new", "", false), m("a", "", false)},
		{m("a", "", true)},
		{m("new", "", true), m("a", "", true)},
		{m("new", "", false), m("a", "", true)},
	} {
		_, err := b.MailboxEnqueue(ctx, nil, &store.MailboxEnqueueParams{Messages: msgs, MailboxCap: 5})
		var full *actor.MailboxFullError
		if !errors.As(err, &full) || full.Ref != ref("a") {
			t.Fatalf("%d messages into a full mailbox: %v", len(msgs), err)
		}
		res, err := b.MailboxEnqueue(ctx, nil, &store.MailboxEnqueueParams{Messages: msgs, MailboxCap: 5, SkipFull: true})
		if err != nil || !res[len(res)-1].Full {
			t.Fatalf("%d messages into a full mailbox with SkipFull: %+v, %v", len(msgs), res, err)
		}
	}
	if a, _ := b.ActorGet(ctx, ref("a")); a.Unfinished != 10 {
		t.Fatalf("refused batches wrote messages: unfinished %d", a.Unfinished)
	}
}

// TestCallerTransaction: ? placeholders work in a caller's transaction
// (Rebind), and the adapter's reads run outside any transaction with the
// server's plan choice. (tx_test.go covers how the transaction begins.)
func TestCallerTransaction(t *testing.T) {
	need(t)
	b := openSchema(t, newSchema(), nil)
	ctx := testutil.Context(t)
	tx, err := b.Begin(ctx, store.TxOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var n int
	if err := tx.(*callerTx).QueryRow(ctx, Rebind(`SELECT ? + ?::int, '?'`), 2, 3).Scan(&n, new(string)); err != nil || n != 5 {
		t.Fatalf("placeholders: %d, %v", n, err)
	}
	if err := tx.Rollback(ctx); err != nil {
		t.Fatal(err)
	}
	rows, err := b.read(ctx, `SELECT current_setting('plan_cache_mode'), ?::int`, 7)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var mode string
	if !rows.Next() || rows.Scan(&mode, &n) != nil || mode != "auto" || n != 7 {
		t.Fatalf("read: %s %d %v", mode, n, rows.Err())
	}
	if err := rows.Close(); err != nil {
		t.Fatal(err)
	}
}

// TestTellByCachedKey covers the plain-UPDATE Tell to an actor this
// backend enqueued to before: it must use the cached key (the statement
// advances the row by key), and a stale key (the actor destroyed by
// another process, so a new incarnation has a new key) or a full mailbox
// must fall back to the full form, which creates the actor or reports the
// mailbox.
func TestTellByCachedKey(t *testing.T) {
	need(t)
	schema := newSchema()
	b1 := openSchema(t, schema, nil)
	b2 := openSchema(t, schema, nil)
	ctx := testutil.Context(t)
	r := actor.Ref{Type: "hot", ID: "x"}
	tell := func(b *Backend, limit int) (store.EnqueueResult, error) {
		res, err := b.MailboxEnqueue(ctx, nil, &store.MailboxEnqueueParams{Messages: []store.NewMessage{{Ref: r, Name: "m"}}, MailboxCap: limit})
		if err != nil {
			return store.EnqueueResult{}, err
		}
		return res[0], nil
	}
	first, err := tell(b1, 0)
	if err != nil {
		t.Fatal(err)
	}
	if pk, ok := b1.pks.Get(r); !ok || pk != first.ActorPK {
		t.Fatalf("the key was not cached after the first Tell: %d %v", pk, ok)
	}
	second, err := tell(b1, 0)
	if err != nil || second.ActorPK != first.ActorPK || second.Seq != 2 {
		t.Fatalf("second Tell = %+v, %v", second, err)
	}
	if _, err := b2.ActorDestroy(ctx, r); err != nil {
		t.Fatal(err)
	}
	third, err := tell(b1, 0)
	if err != nil || third.ActorPK == first.ActorPK || third.Seq != 1 {
		t.Fatalf("a Tell after another process destroyed the actor = %+v, %v (want a new incarnation at seq 1)", third, err)
	}
	if pk, _ := b1.pks.Get(r); pk != third.ActorPK {
		t.Fatalf("the cache kept the destroyed incarnation's key %d", pk)
	}
	var full *actor.MailboxFullError
	if _, err := tell(b1, 1); !errors.As(err, &full) {
		t.Fatalf("a Tell to a full mailbox by the cached key: %v, want MailboxFullError", err)
	}
	a, err := b1.ActorGet(ctx, r)
	if err != nil || a.Unfinished != 1 {
		t.Fatalf("after the refused Tell: %+v, %v", a, err)
	}
}
