package host

import (
	"testing"
	"time"

	"github.com/ductus/ductus/actor"
)

func TestAdvanceKeepsTheNominalSchedule(t *testing.T) {
	// "Every hour, jitter 5m", each occurrence delivered as late as its
	// jitter allows: the nominal times must stay on the hour.
	s := actor.Schedule{Every: time.Hour, Jitter: 5 * time.Minute}
	start := time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC)
	due := start
	for i := 1; i <= 48; i++ {
		delivered := due.Add(jitter(s.Jitter) + 5*time.Minute - time.Microsecond)
		next, _, err := advance(s, due, delivered, 100)
		if err != nil {
			t.Fatal(err)
		}
		if want := start.Add(time.Duration(i) * time.Hour); !next.Equal(want) {
			t.Fatalf("occurrence %d: next %s, want %s (the schedule drifted)", i, next, want)
		}
		due = next
	}
}

func TestAdvance(t *testing.T) {
	ny, err := time.LoadLocation("America/New_York")
	if err != nil {
		t.Skip("no time zone database:", err)
	}
	t0 := time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		name    string
		s       actor.Schedule
		due     time.Time
		now     time.Time
		max     int
		want    time.Time
		skipped bool
	}{
		{"one-shot ends", actor.Schedule{At: t0}, t0, t0, 100, time.Time{}, false},
		{"every, on time", actor.Every(time.Hour), t0, t0.Add(time.Second), 100, t0.Add(time.Hour), false},
		{"latest keeps the phase", actor.Every(time.Hour), t0, t0.Add(10*time.Hour + 30*time.Minute), 100, t0.Add(11 * time.Hour), false},
		{"all steps one", actor.Schedule{Every: time.Hour, CatchUp: actor.CatchUpAll}, t0, t0.Add(3*time.Hour + time.Minute), 100, t0.Add(time.Hour), false},
		{"all at the bound", actor.Schedule{Every: time.Hour, CatchUp: actor.CatchUpAll}, t0, t0.Add(5*time.Hour + time.Minute), 5, t0.Add(time.Hour), false},
		{"all past the bound skips like latest", actor.Schedule{Every: time.Hour, CatchUp: actor.CatchUpAll}, t0, t0.Add(6*time.Hour + time.Minute), 5, t0.Add(7 * time.Hour), true},
		{"cron all past the bound", actor.Schedule{Cron: "*/10 * * * *", TimeZone: "UTC", CatchUp: actor.CatchUpAll}, t0, t0.Add(2*time.Hour + time.Minute), 5, t0.Add(2*time.Hour + 10*time.Minute), true},
		{"cron all within the bound", actor.Schedule{Cron: "*/10 * * * *", TimeZone: "UTC", CatchUp: actor.CatchUpAll}, t0, t0.Add(45 * time.Minute), 5, t0.Add(10 * time.Minute), false},
		// 9:00 in New York is 14:00 UTC in winter and 13:00 UTC once
		// daylight saving starts (10 March 2024).
		{"cron in a time zone across DST", actor.Cron("0 9 * * *", "America/New_York"),
			time.Date(2024, 3, 9, 9, 0, 0, 0, ny), time.Date(2024, 3, 9, 14, 0, 1, 0, time.UTC), 100,
			time.Date(2024, 3, 10, 13, 0, 0, 0, time.UTC), false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			next, skipped, err := advance(tc.s, tc.due, tc.now, tc.max)
			if err != nil {
				t.Fatal(err)
			}
			if !next.Equal(tc.want) || (skipped > 0) != tc.skipped {
				t.Fatalf("advance = %s (skipped %d), want %s (skipping: %v)", next, skipped, tc.want, tc.skipped)
			}
		})
	}
}
