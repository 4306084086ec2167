package sqlrow

import (
	"fmt"
	"time"
)

// AnyTime scans a nullable time that a computed column (MIN of a time
// column) returns in its dialect's form: a time.Time from Postgres's
// timestamptz and MySQL's DATETIME (the adapter asks for parseTime and
// UTC), Unix microseconds from SQLite's INTEGER columns, or MySQL's text
// form when a driver hands the column over unparsed. NULL is the zero
// time.
type AnyTime struct {
	Time time.Time
}

// mysqlText is how MySQL writes a DATETIME(6) as text.
const mysqlText = "2006-01-02 15:04:05.999999"

// Scan implements sql.Scanner (which pgx honours too).
func (t *AnyTime) Scan(v any) error {
	switch x := v.(type) {
	case nil:
		t.Time = time.Time{}
	case time.Time:
		t.Time = x
	case int64:
		t.Time = time.UnixMicro(x)
	case []byte:
		return t.parse(string(x))
	case string:
		return t.parse(x)
	default:
		return fmt.Errorf("sqlrow: a time column came as %T", v)
	}
	return nil
}

func (t *AnyTime) parse(s string) error {
	v, err := time.ParseInLocation(mysqlText, s, time.UTC)
	if err != nil {
		return fmt.Errorf("sqlrow: a time column came as %q: %w", s, err)
	}
	t.Time = v
	return nil
}
