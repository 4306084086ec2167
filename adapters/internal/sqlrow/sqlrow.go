// Package sqlrow holds what the three adapters' SQL has in common without
// being SQL of one dialect: the column lists their statements name in the
// same order, and the functions that fill this repository's row types from
// those columns (and argument lists from the row types). The statements
// themselves stay in each adapter, beside the code that runs them. The
// engine store's read side (the message browser, the audit log, accounts)
// is not here: package readside writes it once with bun.
//
// It is internal to adapters/: the runtime and the engine never see it.
package sqlrow

import (
	"fmt"
	"strings"

	"github.com/ductus/ductus/actor"
)

// Scanner is a row being read: *sql.Row, *sql.Rows, pgx.Row, pgx.Rows.
type Scanner interface {
	Scan(dest ...any) error
}

// Chunks splits n items into [start, end) ranges of at most size: a
// multi-row statement's batches.
func Chunks(n, size int) [][2]int {
	var out [][2]int
	for s := 0; s < n; s += size {
		out = append(out, [2]int{s, min(s+size, n)})
	}
	return out
}

// Values returns "(?,?,...)" groups: rows groups of n each, comma
// separated, for a multi-row VALUES list.
func Values(rows, n int) string {
	group := "(" + List(n) + ")"
	var b strings.Builder
	b.Grow(rows * (len(group) + 1))
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

// CheckTable refuses a table name Backend.TableCount must not count: only
// the backend's own tables (ductus_ followed by lower-case letters, digits
// and _) are counted, and the name is written into the statement.
func CheckTable(table string) error {
	ok := strings.HasPrefix(table, "ductus_") && len(table) <= 63
	for _, c := range table {
		ok = ok && (c == '_' || c >= 'a' && c <= 'z' || c >= '0' && c <= '9')
	}
	if !ok {
		return fmt.Errorf("%w: %q is not one of the backend's tables (ductus_[a-z0-9_]+)", actor.ErrInvalidArguments, table)
	}
	return nil
}

// Collect reads every row of rows with scan (one of the adapter's scan
// functions of a row type) and returns the rows read, or the first error.
// The caller closes rows.
func Collect[T any](rows Rows, scan func(Scanner) (T, error)) ([]T, error) {
	var out []T
	for rows.Next() {
		v, err := scan(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, v)
	}
	return out, rows.Err()
}
