package postgres

import (
	"context"
	"errors"
	"strconv"
	"strings"

	"github.com/jackc/pgx/v5"

	"github.com/ductus/ductus/runtime/store"
)

// callerTx is a store.Tx the caller drives (Backend.Begin); the adapter's
// methods that take a store.Tx run their statements on its pgx.Tx (see
// outerTx).
type callerTx struct {
	tx   pgx.Tx
	done bool
}

var _ store.Tx = (*callerTx)(nil)

// Commit commits. A transaction PostgreSQL has aborted (a statement in it
// failed) cannot commit: Commit rolls it back and returns an error.
func (t *callerTx) Commit(ctx context.Context) error {
	if t.done {
		return errors.New("postgres: the transaction has ended")
	}
	t.done = true
	if err := t.tx.Commit(ctx); err != nil {
		return classify("commit", err)
	}
	return nil
}

// Rollback rolls back; rolling back a finished transaction is not an error.
func (t *callerTx) Rollback(ctx context.Context) error {
	if t.done {
		return nil
	}
	t.done = true
	if err := t.tx.Rollback(ctx); err != nil && !errors.Is(err, pgx.ErrTxClosed) {
		return classify("rollback", err)
	}
	return nil
}

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
