package sqlite

import (
	"container/list"
	"context"
	"database/sql"
	"errors"
	"sync"

	"github.com/ductus/ductus/runtime/store"
)

// The write path owns the writer pool's one connection for the backend's
// whole life and runs transactions on it by hand (BEGIN IMMEDIATE ...
// COMMIT), serialised by a mutex. Owning the connection lets every
// statement be prepared once and kept: SQLite's parser was a fifth of a
// turn's CPU when statements were prepared per transaction.

// writer is the connection, its lock and its statement cache.
type writer struct {
	mu    sync.Mutex
	conn  *sql.Conn
	cache stmtCache
}

// wtx is the write transaction in progress; its methods mirror *sql.Tx.
type wtx struct{ w *writer }

func (t *wtx) ExecContext(ctx context.Context, q string, args ...any) (sql.Result, error) {
	s, err := t.w.cache.get(ctx, t.w.conn, q)
	if err != nil {
		return nil, err
	}
	return s.ExecContext(ctx, args...)
}

func (t *wtx) QueryContext(ctx context.Context, q string, args ...any) (*sql.Rows, error) {
	s, err := t.w.cache.get(ctx, t.w.conn, q)
	if err != nil {
		return nil, err
	}
	return s.QueryContext(ctx, args...)
}

func (t *wtx) QueryRowContext(ctx context.Context, q string, args ...any) *sql.Row {
	s, err := t.w.cache.get(ctx, t.w.conn, q)
	if err != nil {
		return t.w.conn.QueryRowContext(ctx, q, args...) // carries the same error
	}
	return s.QueryRowContext(ctx, args...)
}

// begin takes the lock and opens a transaction.
//
// A failed BEGIN is always followed by a ROLLBACK: the driver reports a
// statement whose context ended just as it finished as cancelled, even when
// it took effect, so "BEGIN failed" does not mean "no transaction". Left
// open, that transaction made every later BEGIN on the connection fail
// (storetest's Mailbox/CancelledWritesLeaveBackendUsable).
func (w *writer) begin(ctx context.Context) (*wtx, error) {
	w.mu.Lock()
	if _, err := w.conn.ExecContext(ctx, "BEGIN IMMEDIATE"); err != nil {
		_, _ = w.conn.ExecContext(context.Background(), "ROLLBACK") // "no transaction is active" when BEGIN failed outright
		w.mu.Unlock()
		return nil, classify("begin", err)
	}
	return &wtx{w: w}, nil
}

// end commits (or rolls back) and releases the lock.
func (w *writer) end(commit bool) error {
	defer w.mu.Unlock()
	if commit {
		if _, err := w.conn.ExecContext(context.Background(), "COMMIT"); err != nil {
			_, _ = w.conn.ExecContext(context.Background(), "ROLLBACK")
			return classify("commit", err)
		}
		return nil
	}
	_, err := w.conn.ExecContext(context.Background(), "ROLLBACK")
	if err != nil && !isNoTransaction(err) {
		return classify("rollback", err)
	}
	return nil
}

func isNoTransaction(err error) bool {
	return err != nil && (errors.Is(err, sql.ErrTxDone) || containsFold(err.Error(), "no transaction is active"))
}

func containsFold(s, sub string) bool {
	for i := 0; i+len(sub) <= len(s); i++ {
		if s[i:i+len(sub)] == sub {
			return true
		}
	}
	return false
}

// write runs fn in a write transaction, or inside the caller's.
func (b *Backend) write(ctx context.Context, outer store.Tx, fn func(tx *wtx) error) error {
	if outer != nil {
		t, ok := outer.(*callerTx)
		if !ok || t.done {
			return errors.New("sqlite: the transaction does not belong to this backend or has ended")
		}
		return fn(t.tx)
	}
	tx, err := b.wr.begin(ctx)
	if err != nil {
		return err
	}
	if err := fn(tx); err != nil {
		_ = b.wr.end(false)
		return err
	}
	return b.wr.end(true)
}

// callerTx is a store.Tx the caller drives (Backend.Begin); the adapter's
// methods that take a store.Tx run on its wtx (see write).
type callerTx struct {
	tx   *wtx
	done bool
}

func (t *callerTx) Commit(context.Context) error {
	if t.done {
		return sql.ErrTxDone
	}
	t.done = true
	return t.tx.w.end(true)
}

func (t *callerTx) Rollback(context.Context) error {
	if t.done {
		return nil
	}
	t.done = true
	return t.tx.w.end(false)
}

// stmtCache keeps the most recently used prepared statements of the
// writer connection (statements with a variable number of rows make many
// texts, so it is bounded).
type stmtCache struct {
	byText map[string]*list.Element
	order  *list.List // front = most recent
}

type cached struct {
	text string
	stmt *sql.Stmt
}

const stmtCacheSize = 512

func (c *stmtCache) get(ctx context.Context, conn *sql.Conn, q string) (*sql.Stmt, error) {
	if c.byText == nil {
		c.byText, c.order = map[string]*list.Element{}, list.New()
	}
	if e, ok := c.byText[q]; ok {
		c.order.MoveToFront(e)
		return e.Value.(*cached).stmt, nil
	}
	s, err := conn.PrepareContext(ctx, q)
	if err != nil {
		return nil, err
	}
	c.byText[q] = c.order.PushFront(&cached{text: q, stmt: s})
	if c.order.Len() > stmtCacheSize {
		old := c.order.Back()
		c.order.Remove(old)
		delete(c.byText, old.Value.(*cached).text)
		old.Value.(*cached).stmt.Close()
	}
	return s, nil
}

func (c *stmtCache) close() {
	if c.order == nil {
		return
	}
	for e := c.order.Front(); e != nil; e = e.Next() {
		e.Value.(*cached).stmt.Close()
	}
	c.byText, c.order = nil, nil
}

// Exec runs one statement of the caller's own on the writer, in a
// transaction of its own, and returns the rows it affected: for tools and
// tests that change the database on purpose (a test that takes a table
// away). The runtime and the engine never call it.
func (b *Backend) Exec(ctx context.Context, query string, args ...any) (int64, error) {
	var n int64
	err := b.write(ctx, nil, func(tx *wtx) error {
		var err error
		n, err = b.exec(ctx, tx, "caller statement", query, args...)
		return err
	})
	return n, err
}
