package engine

import (
	"testing"
	"time"
)

// The ring keeps an hour of minutes: a count lands in its minute's
// bucket, the view ends with the minute in progress, and a bucket an hour
// old is replaced rather than added to.
func TestThroughput(t *testing.T) {
	var tp throughput
	t0 := time.Date(2026, 12, 6, 9, 0, 30, 0, time.UTC)
	if v := tp.view(t0); v != nil {
		t.Fatalf("an idle hour: %+v, want none", v)
	}
	tp.add(t0, 2, 0)
	tp.add(t0.Add(10*time.Second), 1, 3)
	tp.add(t0.Add(time.Minute), 0, 1)

	v := tp.view(t0.Add(time.Minute))
	if v.BucketSeconds != 60 || len(v.Received) != 60 || len(v.Sent) != 60 {
		t.Fatalf("view shape: %d s, %d received, %d sent", v.BucketSeconds, len(v.Received), len(v.Sent))
	}
	if want := time.Date(2026, 12, 6, 9, 2, 0, 0, time.UTC); !v.Until.Equal(want) {
		t.Errorf("until %v, want %v", v.Until, want)
	}
	if v.Received[58] != 3 || v.Sent[58] != 3 || v.Received[59] != 0 || v.Sent[59] != 1 {
		t.Errorf("last two minutes: received %v, sent %v; want [3 0], [3 1]", v.Received[58:], v.Sent[58:])
	}

	// An hour later the 9:00 bucket is out of the view (9:01 is first)
	// and is reused.
	later := t0.Add(time.Hour)
	if v := tp.view(later); v == nil || sum(v.Received) != 0 || v.Sent[0] != 1 || sum(v.Sent) != 1 {
		t.Fatalf("an hour on: %+v; want only 9:01's send, first", v)
	}
	if v := tp.view(later.Add(time.Minute)); v != nil {
		t.Fatalf("an hour after the last: %+v, want none", v)
	}
	tp.add(later, 5, 0)
	if v := tp.view(later); v.Received[59] != 5 || v.Received[0] != 0 {
		t.Errorf("the reused bucket: received first %d, last %d; want 0, 5", v.Received[0], v.Received[59])
	}
}
