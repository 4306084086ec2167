// Package sqltx holds the database/sql plumbing the SQLite and MySQL
// adapters share: a store.Tx over *sql.Tx, a transaction runner that maps
// driver errors through the adapter's classifier, and builders for the
// multi-row statements both dialects write the same way. (Postgres uses pgx
// directly and has its own.)
package sqltx

import (
	"context"
	"database/sql"
	"errors"
	"strings"

	"github.com/ductus/ductus/runtime/store"
)

// Classifier maps a driver error to a *store.Error with the statement's
// purpose; each adapter has one.
type Classifier func(op string, err error) error

// Tx adapts *sql.Tx to store.Tx. Callers outside the adapter only commit
// or roll it back; the adapter's methods that take a store.Tx run their
// statements on Tx through Run.
type Tx struct {
	Tx       *sql.Tx
	Name     string // the adapter that began it, which refuses another's
	Classify Classifier
}

var _ store.Tx = (*Tx)(nil)

// Commit commits.
func (t *Tx) Commit(context.Context) error {
	if err := t.Tx.Commit(); err != nil {
		return t.Classify("commit", err)
	}
	return nil
}

// Rollback rolls back; rolling back a finished transaction is not an error.
func (t *Tx) Rollback(context.Context) error {
	if err := t.Tx.Rollback(); err != nil && !errors.Is(err, sql.ErrTxDone) {
		return t.Classify("rollback", err)
	}
	return nil
}

// Run executes fn in a transaction on db, committing when fn returns nil.
// A transaction passed in by the caller (outer) is used as is and neither
// committed nor rolled back here.
func Run(ctx context.Context, db *sql.DB, opts *sql.TxOptions, outer store.Tx, classify Classifier, fn func(tx *sql.Tx) error) error {
	if outer != nil {
		t, ok := outer.(*Tx)
		if !ok {
			return errors.New("store: the transaction does not belong to this backend")
		}
		return fn(t.Tx)
	}
	tx, err := db.BeginTx(ctx, opts)
	if err != nil {
		return classify("begin", err)
	}
	if err := fn(tx); err != nil {
		_ = tx.Rollback()
		return err
	}
	if err := tx.Commit(); err != nil {
		return classify("commit", err)
	}
	return nil
}

// Placeholders returns "(?,?,...)" groups: rows groups of n each, comma
// separated, for multi-row VALUES.
func Placeholders(rows, n int) string {
	var b strings.Builder
	group := "(" + strings.TrimSuffix(strings.Repeat("?,", n), ",") + ")"
	for i := 0; i < rows; i++ {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(group)
	}
	return b.String()
}

// List returns "?,?,?" for n values (an IN list).
func List(n int) string {
	return strings.TrimSuffix(strings.Repeat("?,", n), ",")
}

// Int64s converts ids to []any for statement arguments.
func Int64s(ids []int64) []any {
	out := make([]any, len(ids))
	for i, v := range ids {
		out[i] = v
	}
	return out
}

// Strings converts values to []any for statement arguments.
func Strings(vs []string) []any {
	out := make([]any, len(vs))
	for i, v := range vs {
		out[i] = v
	}
	return out
}

// Chunks splits n items into [start, end) ranges of at most size.
func Chunks(n, size int) [][2]int {
	var out [][2]int
	for s := 0; s < n; s += size {
		out = append(out, [2]int{s, min(s+size, n)})
	}
	return out
}

// NullString maps "" to NULL.
func NullString(s string) sql.NullString {
	return sql.NullString{String: s, Valid: s != ""}
}

// NullBytes maps nil to NULL (and keeps JSON text as a string).
func NullBytes(b []byte) any {
	if b == nil {
		return nil
	}
	return string(b)
}
