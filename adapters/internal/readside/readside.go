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
	return &Reader{db: bun.NewDB(db, dialect), classify: classify}
}

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

// scan runs q into dest and reports a failure as op.
func (r *Reader) scan(ctx context.Context, op string, q *bun.SelectQuery, dest ...any) error {
	return r.classify(op, q.Scan(ctx, dest...))
}
