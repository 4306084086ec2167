package readside

import (
	"context"
	"database/sql"
	"time"

	"github.com/uptrace/bun"
	"github.com/uptrace/bun/schema"
)

// Reader runs the read side's queries on a backend's database.
type Reader struct {
	db       *bun.DB
	classify func(op string, err error) error
}

// New is a Reader over db, whose queries dialect spells; classify wraps a
// failure as the adapter reports its own (store.Error: the backend, the
// operation, whether a retry may help).
func New(db *sql.DB, dialect schema.Dialect, classify func(op string, err error) error) *Reader {
	return &Reader{db: bun.NewDB(db, noInit{dialect}), classify: classify}
}

// noInit is a dialect whose Init (run by bun.NewDB) does nothing. bun's
// MySQL dialect asks the server its version there, a round trip on every
// open that logs through the standard logger when it fails, only to
// choose features of writes (RETURNING, CREATE INDEX IF NOT EXISTS) that
// the read side never makes; the adapter knows the server already.
type noInit struct{ schema.Dialect }

func (noInit) Init(*sql.DB) {}

// DB is the bun handle, for the plan tests that render a query.
func (r *Reader) DB() *bun.DB { return r.db }

// micros is microseconds since the epoch as a time; 0 is the zero time
// (the nullable columns read NULL as 0).
func micros(us int64) time.Time {
	if us == 0 {
		return time.Time{}
	}
	return time.UnixMicro(us)
}

// list runs q, reads its rows as R (by column name) and converts each;
// a failure is reported as op.
func list[R, T any](ctx context.Context, r *Reader, op string, q *bun.SelectQuery, conv func(*R) T) ([]T, error) {
	var rows []R
	if err := r.classify(op, q.Scan(ctx, &rows)); err != nil {
		return nil, err
	}
	out := make([]T, len(rows))
	for i := range rows {
		out[i] = conv(&rows[i])
	}
	return out, nil
}

// one is list of a query by a unique key: its row, if there is one.
func one[R, T any](ctx context.Context, r *Reader, op string, q *bun.SelectQuery, conv func(*R) T) (T, bool, error) {
	got, err := list(ctx, r, op, q, conv)
	if err != nil || len(got) == 0 {
		var none T
		return none, false, err
	}
	return got[0], true, nil
}
