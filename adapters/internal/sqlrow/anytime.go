package sqlrow

import (
	"fmt"
	"time"
)

// AnyTime scans a nullable time that a computed column (MIN of a time
// column) returns in its dialect's form: a time.Time from Postgres's
// timestamptz and MySQL's DATETIME (the adapter asks for parseTime and
// UTC), Unix microseconds from SQLite's INTEGER columns. NULL is the zero
// time.
type AnyTime struct {
	Time time.Time
}

// Scan implements sql.Scanner (which pgx honours too).
func (t *AnyTime) Scan(v any) error {
	switch x := v.(type) {
	case nil:
		t.Time = time.Time{}
	case time.Time:
		t.Time = x
	case int64:
		t.Time = time.UnixMicro(x)
	default:
		return fmt.Errorf("sqlrow: a time column came as %T", v)
	}
	return nil
}
