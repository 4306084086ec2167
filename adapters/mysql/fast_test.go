package mysql

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/ductus/ductus/actor"
	"github.com/ductus/ductus/runtime/store"
)

// TestTellProcedure: a Tell to a known actor goes through ductus_tell_1
// in one round trip and writes what the general path writes; when the
// cached key is stale (the actor was destroyed and recreated by another
// process) or the mailbox is full, the procedure changes nothing and the
// general path answers.
func TestTellProcedure(t *testing.T) {
	ctx := context.Background()
	dsn := newDatabase(t)
	b := openBackend(t, Config{DSN: dsn})
	other := openBackend(t, Config{DSN: dsn})
	r := actor.Ref{Type: "t", ID: "x"}
	tell := func(be *Backend, cap int, m store.NewMessage) ([]store.EnqueueResult, error) {
		m.Ref, m.Name = r, "m"
		if m.Args == nil {
			m.Args = []byte(`{"n":1}`)
		}
		return be.MailboxEnqueue(ctx, nil, &store.MailboxEnqueueParams{MailboxCap: cap, Messages: []store.NewMessage{m}})
	}
	roundTrips := func(fn func()) int64 {
		before := b.Stats().RoundTrips
		fn()
		return b.Stats().RoundTrips - before
	}
	row := func(id int64) (seq int64, ask bool, delay time.Duration, readyDue time.Time) {
		t.Helper()
		var enq, avail time.Time
		if err := b.db.QueryRowContext(ctx, `SELECT m.seq, m.ask, m.enqueued_at, m.available_at, r.due_at
			FROM ductus_messages m JOIN ductus_ready r ON r.message_id = m.id WHERE m.id = ?`, id).Scan(&seq, &ask, &enq, &avail, &readyDue); err != nil {
			t.Fatal(err)
		}
		if !readyDue.Equal(avail) {
			t.Errorf("message %d: ready due %v, available %v", id, readyDue, avail)
		}
		return seq, ask, avail.Sub(enq), readyDue
	}

	if _, err := tell(b, 0, store.NewMessage{}); err != nil { // the general path; the key is cached now
		t.Fatal(err)
	}
	var res []store.EnqueueResult
	if n := roundTrips(func() {
		var err error
		if res, err = tell(b, 0, store.NewMessage{Ask: true, Delay: 3 * time.Second}); err != nil {
			t.Fatal(err)
		}
	}); n != 1 {
		t.Fatalf("a Tell to a known actor took %d round trips, want 1 (the procedure)", n)
	}
	seq, ask, delay, _ := row(res[0].MessageID)
	if res[0].Seq != 2 || seq != 2 || !ask || delay != 3*time.Second {
		t.Fatalf("procedure Tell: result %+v, row seq %d ask %v delay %v; want seq 2, ask, 3s", res[0], seq, ask, delay)
	}
	at := time.Now().Add(time.Hour).UTC().Truncate(time.Microsecond)
	res, err := tell(b, 0, store.NewMessage{AvailableAt: at})
	if err != nil {
		t.Fatal(err)
	}
	if _, _, _, due := row(res[0].MessageID); !due.Equal(at) {
		t.Fatalf("available-at %v stored as %v", at, due)
	}

	// The mailbox holds 3 unfinished messages: a cap of 3 refuses the
	// fourth and writes nothing.
	if _, err := tell(b, 3, store.NewMessage{}); !errors.Is(err, actor.ErrMailboxFull) {
		t.Fatalf("a Tell over the cap: %v, want ErrMailboxFull", err)
	}
	var messages, unfinished int
	if err := b.db.QueryRowContext(ctx, `SELECT (SELECT COUNT(*) FROM ductus_messages), unfinished FROM ductus_actors WHERE id = 'x'`).Scan(&messages, &unfinished); err != nil {
		t.Fatal(err)
	}
	if messages != 3 || unfinished != 3 {
		t.Fatalf("after the refused Tell: %d messages, %d unfinished; want 3 and 3", messages, unfinished)
	}

	// Another process destroys the actor and recreates it under a new key:
	// b's cached key no longer matches, and the Tell lands on the new row.
	if ok, err := other.ActorDestroy(ctx, r); err != nil || !ok {
		t.Fatal(ok, err)
	}
	if _, err := tell(other, 0, store.NewMessage{}); err != nil {
		t.Fatal(err)
	}
	res, err = tell(b, 0, store.NewMessage{})
	if err != nil {
		t.Fatal(err)
	}
	var pk int64
	if err := b.db.QueryRowContext(ctx, `SELECT pk FROM ductus_actors WHERE id = 'x'`).Scan(&pk); err != nil {
		t.Fatal(err)
	}
	if res[0].ActorPK != pk || res[0].Seq != 2 {
		t.Fatalf("after the recreation: %+v, want actor %d seq 2", res[0], pk)
	}
}
