package scenariotest

import (
	"testing"
	"time"

	"github.com/ductus/ductus/internal/testutil"

	"github.com/ductus/ductus/actor"
	"github.com/ductus/ductus/runtime/host"
	"github.com/ductus/ductus/runtime/store"
)

// dues reads the nominal times of an alarm's ticks.
func dues(t *testing.T, h *host.Host, r actor.Ref) []time.Time {
	t.Helper()
	a, err := actor.AskAs[alarm](testutil.Context(t), h, r, "get", nil)
	if err != nil {
		t.Fatal(err)
	}
	out := make([]time.Time, len(a.Dues))
	for i, d := range a.Dues {
		out[i] = time.UnixMicro(d)
	}
	return out
}

func oneReminder(t *testing.T, h *host.Host, r actor.Ref) host.ReminderInfo {
	t.Helper()
	rs, err := h.Reminders(testutil.Context(t), host.ReminderQuery{Ref: r})
	if err != nil || len(rs) != 1 {
		t.Fatalf("%s: reminders %+v, %v; want one", r.ID, rs, err)
	}
	return rs[0]
}

func init() {
	scenario("EveryWithStartKeepsItsPhaseUnderJitter", func(t *testing.T, be store.Backend) {
		// Jitter delays each delivery, never the schedule: every tick's
		// nominal time is Start + k*Every, however late the one before it
		// was delivered.
		h := newHost(t, be, alarmRegistry())
		ctx := testutil.Context(t)
		const every, jit = 100 * time.Millisecond, 60 * time.Millisecond
		start := time.Now().Add(150 * time.Millisecond).Truncate(time.Millisecond)
		if _, err := h.Ask(ctx, aref("phase"), "schedule", scheduleArgs{Name: "tick", Every: every, Start: start, Jitter: jit}); err != nil {
			t.Fatal(err)
		}
		testutil.Eventually(t, 20*time.Second, "six ticks", func() bool { return len(dues(t, h, aref("phase"))) >= 6 })
		ds := dues(t, h, aref("phase"))
		if !ds[0].Equal(start) {
			t.Fatalf("the first tick was due at %s, want Start %s", ds[0], start)
		}
		for i, d := range ds {
			if off := d.Sub(start); off%every != 0 || (i > 0 && !d.After(ds[i-1])) {
				t.Fatalf("tick %d due at Start%+v: off the schedule (%v)", i, off, ds)
			}
		}
		r := oneReminder(t, h, aref("phase"))
		// due_at is next_at plus under the jitter, or a scheduler's claim
		// expiry (ClaimTTL, 30s) while one holds the reminder.
		off, delay := r.NextAt.Sub(start), r.DueAt.Sub(r.NextAt)
		if off%every != 0 || delay < 0 || (delay >= jit && delay < time.Second) {
			t.Fatalf("stored reminder next %s (Start%+v), due %s: the nominal time must stay on the schedule, the jitter only on due",
				r.NextAt, off, r.DueAt)
		}
	})

	scenario("CronInATimeZone", func(t *testing.T, be store.Backend) {
		// The next occurrence of "30 9 * * *" in Kathmandu (UTC+5:45) is a
		// 9:30 there, within a day: a zone the server is certainly not in.
		loc, err := time.LoadLocation("Asia/Kathmandu")
		if err != nil {
			t.Skip("no time zone database:", err)
		}
		h := newHost(t, be, alarmRegistry())
		ctx := testutil.Context(t)
		before := time.Now()
		if _, err := h.Ask(ctx, aref("tz"), "schedule", scheduleArgs{Name: "tz", Cron: "30 9 * * *", TimeZone: "Asia/Kathmandu"}); err != nil {
			t.Fatal(err)
		}
		next := oneReminder(t, h, aref("tz")).NextAt.In(loc)
		if next.Hour() != 9 || next.Minute() != 30 || next.Second() != 0 || !next.After(before.Add(-time.Second)) || next.After(before.Add(24*time.Hour+time.Second)) {
			t.Fatalf("next occurrence %s; want the next 9:30 in Kathmandu after %s", next, before.In(loc))
		}
	})

	scenario("ReplaceReminderByName", func(t *testing.T, be store.Backend) {
		h := newHost(t, be, alarmRegistry())
		ctx := testutil.Context(t)
		if _, err := h.Ask(ctx, aref("rep"), "schedule", scheduleArgs{Name: "r", Every: time.Hour}); err != nil {
			t.Fatal(err)
		}
		first := oneReminder(t, h, aref("rep"))
		if _, err := h.Ask(ctx, aref("rep"), "schedule", scheduleArgs{Name: "r", Every: 50 * time.Millisecond}); err != nil {
			t.Fatal(err)
		}
		testutil.Eventually(t, 10*time.Second, "the replacement to fire", func() bool { return len(dues(t, h, aref("rep"))) >= 2 })
		r := oneReminder(t, h, aref("rep"))
		if r.Schedule.Every != 50*time.Millisecond || r.Name != first.Name {
			t.Fatalf("after replacing: %+v; want one reminder with the new schedule", r)
		}
	})

	scenario("CatchUpLatestAndAll", func(t *testing.T, be store.Backend) {
		// Reminders whose Start lies in the past stand for downtime. latest
		// delivers one missed occurrence; all replays them one per pass,
		// unless more than CatchUpMax are missed, then it skips like latest.
		// CatchUpMax leaves all's four missed ticks room for a pass delayed
		// by seconds on a loaded machine (with 8, a second's stall between
		// passes made the rest "too far" and skipped them); all_too_far
		// starts far enough back to be past it whatever the delay.
		h := newHost(t, be, alarmRegistry(), func(c *host.Config) { c.CatchUpMax = 50 })
		ctx := testutil.Context(t)
		const every = 100 * time.Millisecond
		now := time.Now().Truncate(time.Millisecond)
		cases := []struct {
			id, catchUp string
			start       time.Time
			missed      int // ticks due before now that must run
		}{
			{"latest", "latest", now.Add(-2 * time.Second), 1},
			{"all", "all", now.Add(-350 * time.Millisecond), 4},
			{"all_too_far", "all", now.Add(-20 * time.Second), 1},
		}
		for _, c := range cases {
			if _, err := h.Ask(ctx, aref(c.id), "schedule", scheduleArgs{Name: "c", Every: every, Start: c.start, CatchUp: c.catchUp}); err != nil {
				t.Fatal(err)
			}
		}
		for _, c := range cases {
			testutil.Eventually(t, 20*time.Second, c.id+" to tick past now", func() bool {
				ds := dues(t, h, aref(c.id))
				return len(ds) > 0 && ds[len(ds)-1].After(now)
			})
			ds := dues(t, h, aref(c.id))
			missed := 0
			for i, d := range ds {
				if d.Sub(c.start)%every != 0 {
					t.Fatalf("%s: tick due at Start%+v is off the schedule", c.id, d.Sub(c.start))
				}
				if d.Before(now) {
					missed++
					if want := c.start.Add(time.Duration(i) * every); !d.Equal(want) {
						t.Fatalf("%s: missed tick %d due at %s, want %s (all: %v)", c.id, i, d, want, ds)
					}
				}
			}
			if missed != c.missed {
				t.Fatalf("%s: %d missed occurrences ran, want %d (dues %v)", c.id, missed, c.missed, ds)
			}
		}
	})
}
