package tools

import (
	"context"
	"sync/atomic"
	"testing"
	"time"
)

func TestPercentile(t *testing.T) {
	ms := func(v ...int) []time.Duration {
		out := make([]time.Duration, len(v))
		for i, x := range v {
			out[i] = time.Duration(x) * time.Millisecond
		}
		return out
	}
	cases := []struct {
		in   []time.Duration
		p    float64
		want time.Duration
	}{
		{nil, 50, 0},
		{ms(7), 50, 7 * time.Millisecond},
		{ms(7), 99, 7 * time.Millisecond},
		{ms(5, 1, 4, 2, 3), 50, 3 * time.Millisecond},
		{ms(5, 1, 4, 2, 3), 99, 5 * time.Millisecond},
		{ms(1, 2, 3, 4, 5, 6, 7, 8, 9, 10), 50, 5 * time.Millisecond},
		{ms(1, 2, 3, 4, 5, 6, 7, 8, 9, 10), 90, 9 * time.Millisecond},
		{ms(1, 2, 3, 4, 5, 6, 7, 8, 9, 10), 100, 10 * time.Millisecond},
	}
	for _, tc := range cases {
		if got := Percentile(append([]time.Duration(nil), tc.in...), tc.p); got != tc.want {
			t.Errorf("Percentile(%v, %v) = %v, want %v", tc.in, tc.p, got, tc.want)
		}
	}
}

func TestCodes(t *testing.T) {
	var c Codes
	for _, code := range []string{"AA", "AA", "AE", "CR", "XX"} {
		c.Add(code)
	}
	s := c.Snapshot()
	if s.Total() != 4 || s.Accepted() != 2 || s.Get("AE") != 1 || s.Get("XX") != 0 {
		t.Errorf("%+v", s)
	}
	if got, want := s.String(), "AA 2  AE 1  AR 0  CA 0  CE 0  CR 1"; got != want {
		t.Errorf("String() = %q, want %q", got, want)
	}
	if got, want := s.Short(), "AA 2, AE 1, CR 1"; got != want {
		t.Errorf("Short() = %q, want %q", got, want)
	}
	if got := (CodeCounts{}).Short(); got != "no ACKs" {
		t.Errorf("empty Short() = %q", got)
	}
}

func TestEvery(t *testing.T) {
	var n atomic.Int32
	stop := Every(context.Background(), 5*time.Millisecond, func() { n.Add(1) })
	for end := time.Now().Add(5 * time.Second); n.Load() < 3 && time.Now().Before(end); time.Sleep(time.Millisecond) {
	}
	stop()
	got := n.Load()
	if got < 3 {
		t.Fatalf("called %d times", got)
	}
	time.Sleep(20 * time.Millisecond)
	if n.Load() != got {
		t.Error("called after stop")
	}
	Every(context.Background(), 0, func() { t.Error("called with no interval") })()
}
