package postgres

import (
	"context"
	"testing"

	"github.com/ductus/ductus/internal/testutil"
	"github.com/ductus/ductus/runtime/store"
)

// withTable opens a backend on a schema of its own holding table, an empty
// table of one int column n.
func withTable(t *testing.T, table string) (*Backend, context.Context) {
	t.Helper()
	need(t)
	b := openSchema(t, newSchema(), nil)
	ctx := testutil.Context(t)
	if _, err := b.pool.Exec(ctx, "CREATE TABLE "+table+" (n int)"); err != nil {
		t.Fatal(err)
	}
	return b, ctx
}

// TestCallerTxBeginsWithFirstStatement: whatever a caller's transaction
// runs first (an Exec, a QueryRow, a Query or a batch, each of which sends
// BEGIN differently), that statement is inside the transaction with its
// settings: its write is invisible to another connection until Commit,
// and gone after Rollback.
func TestCallerTxBeginsWithFirstStatement(t *testing.T) {
	b, ctx := withTable(t, "lazy_t")
	const insert = `INSERT INTO lazy_t VALUES (1) RETURNING n`
	firsts := []struct {
		name string
		run  func(tx *callerTx) error
	}{
		{"exec", func(tx *callerTx) error { _, err := tx.Exec(ctx, insert); return err }},
		{"query row", func(tx *callerTx) error { var n int; return tx.QueryRow(ctx, insert).Scan(&n) }},
		{"query", func(tx *callerTx) error {
			rows, err := tx.Query(ctx, insert)
			if err != nil {
				return err
			}
			rows.Close()
			return rows.Err()
		}},
		{"batch", func(tx *callerTx) error {
			var bt batch
			bt.exec("insert", insert)
			return bt.run(ctx, tx)
		}},
	}
	count := func(q querier) int {
		t.Helper()
		var n int
		if err := q.QueryRow(ctx, `SELECT count(*) FROM lazy_t`).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	for _, f := range firsts {
		for _, relaxed := range []bool{false, true} {
			for _, commit := range []bool{false, true} {
				if _, err := b.pool.Exec(ctx, `TRUNCATE lazy_t`); err != nil {
					t.Fatal(err)
				}
				tx, err := b.Begin(ctx, store.TxOptions{Relaxed: relaxed})
				if err != nil {
					t.Fatal(err)
				}
				ct := tx.(*callerTx)
				if err := f.run(ct); err != nil {
					t.Fatalf("%s: %v", f.name, err)
				}
				var sync, mode string
				if err := ct.QueryRow(ctx, `SELECT current_setting('synchronous_commit'), current_setting('plan_cache_mode')`).Scan(&sync, &mode); err != nil {
					t.Fatal(err)
				}
				if (sync == "off") != relaxed || mode != "auto" {
					t.Errorf("%s, relaxed=%v: synchronous_commit %s, plan_cache_mode %s", f.name, relaxed, sync, mode)
				}
				if in, out := count(ct), count(b.pool); in != 1 || out != 0 {
					t.Errorf("%s: %d rows inside the transaction and %d outside before it ended, want 1 and 0", f.name, in, out)
				}
				end, want := tx.Rollback, 0
				if commit {
					end, want = tx.Commit, 1
				}
				if err := end(ctx); err != nil {
					t.Fatal(err)
				}
				if got := count(b.pool); got != want {
					t.Errorf("%s, commit=%v: %d rows after the end, want %d", f.name, commit, got, want)
				}
			}
		}
	}
	if n := b.pool.Stat().AcquiredConns(); n != 0 {
		t.Errorf("%d connections still held after every transaction ended", n)
	}
}

// TestCallerTxEnds: a transaction that ran nothing commits without a word
// to the server; one a failed statement aborted refuses to commit and
// writes nothing; statements after the end are refused; every end gives
// the connection back.
func TestCallerTxEnds(t *testing.T) {
	b, ctx := withTable(t, "ends_t")
	begin := func() *callerTx {
		t.Helper()
		tx, err := b.Begin(ctx, store.TxOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return tx.(*callerTx)
	}
	held := func(want int32) {
		t.Helper()
		if n := b.pool.Stat().AcquiredConns(); n != want {
			t.Fatalf("%d connections held, want %d", n, want)
		}
	}

	empty := begin()
	held(1)
	if err := empty.Commit(ctx); err != nil {
		t.Fatalf("commit of an empty transaction: %v", err)
	}
	held(0)
	if err := empty.Commit(ctx); err == nil {
		t.Fatal("a second commit succeeded")
	}
	if _, err := empty.Exec(ctx, `INSERT INTO ends_t VALUES (1)`); err == nil {
		t.Fatal("a statement after the commit succeeded")
	}

	aborted := begin()
	if _, err := aborted.Exec(ctx, `INSERT INTO ends_t VALUES (1)`); err != nil {
		t.Fatal(err)
	}
	if _, err := aborted.Exec(ctx, `INSERT INTO ends_t VALUES ('not a number')`); err == nil {
		t.Fatal("a bad statement succeeded")
	}
	if err := aborted.Commit(ctx); err == nil {
		t.Fatal("an aborted transaction committed")
	}
	held(0)
	var n int
	if err := b.pool.QueryRow(ctx, `SELECT count(*) FROM ends_t`).Scan(&n); err != nil || n != 0 {
		t.Fatalf("an aborted transaction left %d rows (%v)", n, err)
	}

	// A first statement that fails (its BEGIN went with it) leaves the
	// transaction to roll back, and the connection fit for the next.
	failed := begin()
	if _, err := failed.Exec(ctx, `SELECT no_such_column FROM ends_t`); err == nil {
		t.Fatal("a bad first statement succeeded")
	}
	if err := failed.Rollback(context.WithoutCancel(ctx)); err != nil {
		t.Fatal(err)
	}
	if err := failed.Rollback(ctx); err != nil {
		t.Fatalf("a second rollback: %v", err)
	}
	held(0)
	next := begin()
	if _, err := next.Exec(ctx, `INSERT INTO ends_t VALUES (2)`); err != nil {
		t.Fatal(err)
	}
	if err := next.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	if err := b.pool.QueryRow(ctx, `SELECT count(*) FROM ends_t`).Scan(&n); err != nil || n != 1 {
		t.Fatalf("after the failed transaction: %d rows (%v), want 1", n, err)
	}
}
