package engine

import (
	"testing"
	"time"
)

func TestDestStatsPercentiles(t *testing.T) {
	var s destStats
	if _, _, ok := s.percentiles(); ok {
		t.Fatal("percentiles before any send")
	}
	for i := 1; i <= 100; i++ {
		s.observeSent(time.Duration(i) * time.Millisecond)
	}
	if p50, p95, ok := s.percentiles(); !ok || p50 != 50*time.Millisecond || p95 != 95*time.Millisecond {
		t.Fatalf("1..100 ms: p50 %v, p95 %v", p50, p95)
	}
	// The window keeps the latest sends only: 2,000 more at 1 s push the
	// early ones out.
	for range 2000 {
		s.observeSent(time.Second)
	}
	if p50, p95, _ := s.percentiles(); p50 != time.Second || p95 != time.Second || s.sent.Load() != 2100 {
		t.Fatalf("after the window moved: p50 %v, p95 %v, sent %d", p50, p95, s.sent.Load())
	}
	var one destStats
	one.observeSent(7 * time.Millisecond)
	if p50, p95, _ := one.percentiles(); p50 != 7*time.Millisecond || p95 != 7*time.Millisecond {
		t.Fatalf("one send: %v %v", p50, p95)
	}
}
