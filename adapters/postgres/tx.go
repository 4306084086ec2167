package postgres

import (
	"context"
	"errors"
	"strconv"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/ductus/ductus/runtime/store"
)

// callerTx is a store.Tx the caller drives (Backend.Begin); the adapter's
// methods that take a store.Tx run their statements on it (see outerTx).
//
// BEGIN is sent lazily, in front of the transaction's first statement: a
// batch carries it in the same round trip (the engine's intake starts with
// one), an Exec or QueryRow pipelines it with the statement, and only a
// Query pays a round trip of its own for it. A transaction that runs
// nothing sends nothing. So the intake's transaction costs three round
// trips (its enqueue, its rows, COMMIT), not four.
type callerTx struct {
	conn  *pgxpool.Conn
	begin []string // openCaller or openCallerRelaxed
	begun bool
	done  bool
}

var (
	_ store.Tx = (*callerTx)(nil)
	_ querier  = (*callerTx)(nil)
)

// querier is what the engine store's statements run on (engineTx hands
// them a callerTx); a pool or a pgx.Tx has the same methods.
type querier interface {
	sender
	Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error)
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
}

// errEnded is the error of a statement run on a finished transaction.
var errEnded = errors.New("postgres: the transaction has ended")

// The statements that open a transaction: the adapter's own (txn), and a
// caller's, whose statements keep the server's plan choice and, relaxed,
// commit without waiting for the WAL flush. Never modified.
var (
	openTxn           = []string{"BEGIN"}
	openCaller        = []string{"BEGIN", "SET LOCAL plan_cache_mode = auto"}
	openCallerRelaxed = []string{"BEGIN", "SET LOCAL plan_cache_mode = auto", "SET LOCAL synchronous_commit = off"}
)

// sendOpening sends b on conn in one round trip with the opening
// statements in front, and reads their results out, so the caller reads
// b's own. b itself is left as it was (a caller may send it again). A
// failed BEGIN fails the statements after it too, so its error surfaces
// in b's first result.
func sendOpening(ctx context.Context, conn *pgxpool.Conn, opening []string, b *pgx.Batch) pgx.BatchResults {
	qs := make([]*pgx.QueuedQuery, 0, len(opening)+len(b.QueuedQueries))
	for _, q := range opening {
		qs = append(qs, &pgx.QueuedQuery{SQL: q})
	}
	br := conn.SendBatch(ctx, &pgx.Batch{QueuedQueries: append(qs, b.QueuedQueries...)})
	for range opening {
		_, _ = br.Exec()
	}
	return br
}

// inTransaction reports whether conn is open and inside a transaction,
// one a ROLLBACK would end.
func inTransaction(conn *pgxpool.Conn) bool {
	return !conn.Conn().IsClosed() && conn.Conn().PgConn().TxStatus() != 'I'
}

// SendBatch implements sender, opening the transaction with the first
// batch.
func (t *callerTx) SendBatch(ctx context.Context, b *pgx.Batch) pgx.BatchResults {
	if t.done {
		return errResults{errEnded}
	}
	if t.begun {
		return t.conn.SendBatch(ctx, b)
	}
	t.begun = true
	return sendOpening(ctx, t.conn, t.begin, b)
}

// Exec runs one statement, with BEGIN in front of it when it is the first.
func (t *callerTx) Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error) {
	if t.done {
		return pgconn.CommandTag{}, errEnded
	}
	if t.begun {
		return t.conn.Exec(ctx, sql, args...)
	}
	var b pgx.Batch
	b.Queue(sql, args...)
	br := t.SendBatch(ctx, &b)
	tag, err := br.Exec()
	if cerr := br.Close(); err == nil {
		err = cerr
	}
	return tag, err
}

// QueryRow runs one query for a row, with BEGIN in front of it when it is
// the first.
func (t *callerTx) QueryRow(ctx context.Context, sql string, args ...any) pgx.Row {
	if t.done {
		return errRow{errEnded}
	}
	if t.begun {
		return t.conn.QueryRow(ctx, sql, args...)
	}
	var b pgx.Batch
	b.Queue(sql, args...)
	br := t.SendBatch(ctx, &b)
	return batchRow{br.QueryRow(), br}
}

// Query runs a query. The first statement of a transaction sends BEGIN
// on its own first: rows read from a batch would hold the batch open
// until whoever reads them closes them.
func (t *callerTx) Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error) {
	if t.done {
		return nil, errEnded
	}
	if !t.begun {
		t.begun = true
		if _, err := t.conn.Exec(ctx, strings.Join(t.begin, "; ")); err != nil {
			return nil, err
		}
	}
	return t.conn.Query(ctx, sql, args...)
}

// Commit commits. A transaction PostgreSQL has aborted (a statement in it
// failed) cannot commit: Commit rolls it back and returns an error.
func (t *callerTx) Commit(ctx context.Context) error {
	if t.done {
		return errEnded
	}
	t.done = true
	defer t.conn.Release()
	if !t.begun {
		return nil
	}
	tag, err := t.conn.Exec(ctx, "COMMIT")
	if err == nil && tag.String() == "ROLLBACK" {
		err = pgx.ErrTxCommitRollback
	}
	return classify("commit", err)
}

// Rollback rolls back; rolling back a finished transaction is not an error.
// A connection left inside a transaction (the ROLLBACK failed) is closed
// by the pool when it is released.
func (t *callerTx) Rollback(ctx context.Context) error {
	if t.done {
		return nil
	}
	t.done = true
	defer t.conn.Release()
	if !t.begun || !inTransaction(t.conn) {
		return nil
	}
	if _, err := t.conn.Exec(ctx, "ROLLBACK"); err != nil {
		return classify("rollback", err)
	}
	return nil
}

// batchRow is the row of a one-query batch; reading it closes the batch.
type batchRow struct {
	row pgx.Row
	br  pgx.BatchResults
}

func (r batchRow) Scan(dest ...any) error {
	err := r.row.Scan(dest...)
	if cerr := r.br.Close(); err == nil {
		err = cerr
	}
	return err
}

// errRow and errResults are a row and batch results that only fail.
type errRow struct{ err error }

func (r errRow) Scan(...any) error { return r.err }

type errResults struct{ err error }

func (r errResults) Exec() (pgconn.CommandTag, error) { return pgconn.CommandTag{}, r.err }
func (r errResults) Query() (pgx.Rows, error)         { return nil, r.err }
func (r errResults) QueryRow() pgx.Row                { return errRow(r) }
func (r errResults) Close() error                     { return r.err }
func (r errResults) Tx() pgx.Tx                       { return nil }

// callerRows are the rows of a read (Backend.read) on a pooled
// connection; done, when set, releases what the rows came from.
type callerRows struct {
	rows pgx.Rows
	done func()
}

func (r *callerRows) Next() bool             { return r.rows.Next() }
func (r *callerRows) Scan(dest ...any) error { return r.rows.Scan(dest...) }
func (r *callerRows) Err() error             { return r.rows.Err() }

func (r *callerRows) Close() error {
	r.rows.Close()
	err := r.rows.Err()
	if r.done != nil {
		r.done()
		r.done = nil
	}
	return err
}

// Rebind translates ? placeholders to PostgreSQL's $1, $2, ... Question
// marks inside string literals ('...', E'...', $tag$...$tag$), quoted
// identifiers and comments are left alone. (A caller using ? placeholders
// cannot use the jsonb ? operators; jsonb_exists() does the same.)
func Rebind(query string) string {
	if !strings.Contains(query, "?") {
		return query
	}
	var b strings.Builder
	b.Grow(len(query) + 8)
	n := 0
	for i := 0; i < len(query); {
		c := query[i]
		switch {
		case c == '?':
			n++
			b.WriteByte('$')
			b.WriteString(strconv.Itoa(n))
			i++
		case c == '\'':
			// E'...' strings treat backslash as an escape.
			escapes := i > 0 && (query[i-1] == 'E' || query[i-1] == 'e') && (i == 1 || !isIdentChar(query[i-2]))
			j := i + 1
			for j < len(query) {
				if escapes && query[j] == '\\' {
					j += 2
					continue
				}
				if query[j] == '\'' {
					if j+1 < len(query) && query[j+1] == '\'' {
						j += 2
						continue
					}
					break
				}
				j++
			}
			j = min(j+1, len(query))
			b.WriteString(query[i:j])
			i = j
		case c == '"':
			j := i + 1
			for j < len(query) {
				if query[j] == '"' {
					if j+1 < len(query) && query[j+1] == '"' {
						j += 2
						continue
					}
					break
				}
				j++
			}
			j = min(j+1, len(query))
			b.WriteString(query[i:j])
			i = j
		case c == '-' && i+1 < len(query) && query[i+1] == '-':
			j := strings.IndexByte(query[i:], '\n')
			if j < 0 {
				j = len(query) - i
			}
			b.WriteString(query[i : i+j])
			i += j
		case c == '/' && i+1 < len(query) && query[i+1] == '*':
			// Block comments nest in PostgreSQL.
			depth, j := 1, i+2
			for j < len(query) && depth > 0 {
				switch {
				case query[j] == '/' && j+1 < len(query) && query[j+1] == '*':
					depth++
					j += 2
				case query[j] == '*' && j+1 < len(query) && query[j+1] == '/':
					depth--
					j += 2
				default:
					j++
				}
			}
			b.WriteString(query[i:j])
			i = j
		case c == '$' && (i == 0 || !isIdentChar(query[i-1])):
			if tag, ok := dollarTag(query[i:]); ok {
				end := strings.Index(query[i+len(tag):], tag)
				j := len(query)
				if end >= 0 {
					j = i + len(tag) + end + len(tag)
				}
				b.WriteString(query[i:j])
				i = j
				continue
			}
			b.WriteByte(c)
			i++
		default:
			b.WriteByte(c)
			i++
		}
	}
	return b.String()
}

// dollarTag returns the opening tag of a dollar-quoted string ($$ or
// $name$) at the start of s.
func dollarTag(s string) (string, bool) {
	for j := 1; j < len(s); j++ {
		c := s[j]
		if c == '$' {
			return s[:j+1], true
		}
		if !(c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || (j > 1 && c >= '0' && c <= '9')) {
			return "", false
		}
	}
	return "", false
}

func isIdentChar(c byte) bool {
	return c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9'
}

// Exec runs one statement of the caller's own (? placeholders) on a pooled
// connection, outside any transaction, and returns the rows it affected:
// for tools and tests that change the database on purpose (a test that
// takes a table away). The runtime and the engine never call it.
func (b *Backend) Exec(ctx context.Context, query string, args ...any) (int64, error) {
	tag, err := b.pool.Exec(ctx, Rebind(query), args...)
	if err != nil {
		return 0, classify("caller statement", err)
	}
	return tag.RowsAffected(), nil
}
