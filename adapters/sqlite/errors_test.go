package sqlite_test

import (
	"context"
	"database/sql"
	"errors"
	"path/filepath"
	"testing"
	"time"

	"github.com/ductus/ductus/actor"
	"github.com/ductus/ductus/adapters/sqlite"
	"github.com/ductus/ductus/runtime/store"
)

// TestBusyIsRolledBack: a writer that waits past the busy timeout for
// another process's write transaction fails transient and rolled back
// (nothing of it persisted, so even an enqueue without an idempotency key
// may run again), and the retry enqueues the message once.
func TestBusyIsRolledBack(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "busy.db")
	b, err := sqlite.Open(ctx, sqlite.Config{Path: path, BusyTimeout: 50 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	other, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	conn, err := other.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if _, err := conn.ExecContext(ctx, "BEGIN IMMEDIATE"); err != nil {
		t.Fatal(err)
	}
	r := actor.Ref{Type: "t", ID: "x"}
	p := &store.MailboxEnqueueParams{Messages: []store.NewMessage{{Ref: r, Name: "m", Args: []byte(`1`)}}}
	_, err = b.MailboxEnqueue(ctx, nil, p)
	var se *store.Error
	if !errors.As(err, &se) || !store.IsTransient(err) || !store.IsRolledBack(err) {
		t.Fatalf("an enqueue behind another writer = %v, want transient and rolled back", err)
	}
	if _, err := conn.ExecContext(ctx, "ROLLBACK"); err != nil {
		t.Fatal(err)
	}
	if err := store.RetryWhen(ctx, 5, store.IsRolledBack, func() error { _, err := b.MailboxEnqueue(ctx, nil, p); return err }); err != nil {
		t.Fatal(err)
	}
	if a, err := b.ActorGet(ctx, r); err != nil || a.Unfinished != 1 {
		t.Fatalf("after the retry: %+v, %v (want one message)", a, err)
	}
}
