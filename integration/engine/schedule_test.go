package engine

import (
	"context"
	"encoding/json"
	"net/http"
	"testing"
	"time"

	"github.com/ductus/ductus/integration/ixstore"
	"github.com/ductus/ductus/internal/testutil"

	"github.com/ductus/ductus/runtime/host"
)

func TestScheduleRunsStoreDueAndPrevious(t *testing.T) {
	forEachBackend(t, func(t *testing.T, be ixstore.Backend) {
		api := newReceiver(t)
		proj := project(t, map[string]string{
			"ductus.yaml": "script: { isolates: 1 }\napi: { listen: off }\n",
			"interfaces/tick/interface.yaml": `
source: { type: schedule, every: 1s }
destinations:
  out: { type: http, url: "` + api.srv.URL + `" }
`,
			"interfaces/tick/transform.js": `function transform(run, meta) { return { due: run.due, previous: run.previous, id: meta.id }; }`,
		})
		running(t, proj, be)
		testutil.Eventually(t, 15*time.Second, "three runs", func() bool { return api.count() >= 3 })
		type run struct {
			Due      time.Time  `json:"due"`
			Previous *time.Time `json:"previous"`
			ID       string     `json:"id"`
		}
		var runs []run
		for _, b := range api.bodies() {
			var r run
			if err := json.Unmarshal(b, &r); err != nil {
				t.Fatal(err)
			}
			runs = append(runs, r)
		}
		if runs[0].Previous != nil {
			t.Fatalf("the first run has a previous: %+v", runs[0])
		}
		for i := 1; i < len(runs); i++ {
			if runs[i].Previous == nil || !runs[i].Previous.Equal(runs[i-1].Due) {
				t.Fatalf("run %d previous %v, want the due of run %d (%v)", i, runs[i].Previous, i-1, runs[i-1].Due)
			}
			// Due times are slots of the schedule, not clock readings: the
			// gap is the interval, or a multiple of it when a slow machine
			// fired a reminder late (catch-up takes the latest slot) or
			// skipped a run while the previous one was still pending.
			gap := runs[i].Due.Sub(runs[i-1].Due)
			if slots := gap.Round(time.Second); slots < time.Second || (gap-slots).Abs() > 100*time.Millisecond {
				t.Fatalf("runs %d and %d are %s apart, want a whole number of 1s intervals", i-1, i, gap)
			}
		}
	})
}

// Runs missed while the engine was down collapse into one run at start.
func TestScheduleMissedRunsCollapse(t *testing.T) {
	forEachBackend(t, scheduleMissedRunsCollapse)
}

func scheduleMissedRunsCollapse(t *testing.T, be ixstore.Backend) {
	api := newReceiver(t)
	proj := project(t, map[string]string{
		"ductus.yaml": "script: { isolates: 1 }\napi: { listen: off }\n",
		"interfaces/tick/interface.yaml": `
source: { type: schedule, every: 1s }
destinations:
  out: { type: http, url: "` + api.srv.URL + `" }
`,
		"interfaces/tick/transform.js": `function transform(run) { return run; }`,
	})
	first, err := New(context.Background(), proj, Options{Backend: be, Logger: testutil.Logger(), Host: func(c *host.Config) { c.PollInterval = 20 * time.Millisecond }})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- first.Run(ctx) }()
	testutil.Eventually(t, 10*time.Second, "the first run", func() bool { return api.count() >= 1 })
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	first.Close()
	stopped := time.Now()
	time.Sleep(3500 * time.Millisecond) // three runs missed
	restarted := time.Now()
	running(t, proj, be)
	testutil.Eventually(t, 10*time.Second, "runs after the restart", func() bool { return api.count() >= 3 })
	time.Sleep(1500 * time.Millisecond)
	missed := 0
	for _, b := range api.bodies() {
		var r struct{ Due time.Time }
		if err := json.Unmarshal(b, &r); err != nil {
			t.Fatal(err)
		}
		if r.Due.After(stopped) && r.Due.Before(restarted) {
			missed++
		}
	}
	// One run for the three missed slots; none when the catch-up found the
	// first engine's last run still pending (a run is skipped then, by
	// design), which a loaded machine makes likely.
	if missed > 1 {
		t.Fatalf("%d runs for the slots missed while the engine was down, want at most one (they collapse)", missed)
	}
}

// A run is skipped while the previous run's message is still pending: a
// destination that is down does not pile up a run per interval.
func TestScheduleSkipsRunWhilePreviousPending(t *testing.T) {
	forEachBackend(t, func(t *testing.T, be ixstore.Backend) {
		api := newReceiver(t)
		api.fail.Store(http.StatusServiceUnavailable)
		proj := project(t, map[string]string{
			"ductus.yaml": "script: { isolates: 1 }\napi: { listen: off }\n",
			"interfaces/tick/interface.yaml": `
source: { type: schedule, every: 1s }
destinations:
  out: { type: http, url: "` + api.srv.URL + `", retry: { initial: 50ms, max: 200ms } }
`,
			"interfaces/tick/transform.js": `function transform(run) { return run; }`,
		})
		e := running(t, proj, be)
		ctx := context.Background()
		testutil.Eventually(t, 10*time.Second, "the first run stored", func() bool {
			msgs, _ := e.Store().List(ctx, "tick", "", 10)
			return len(msgs) >= 1
		})
		time.Sleep(3500 * time.Millisecond) // three more intervals, the first run still pending
		msgs, err := e.Store().List(ctx, "tick", "", 10)
		if err != nil {
			t.Fatal(err)
		}
		if len(msgs) != 1 {
			t.Fatalf("%d runs stored while the first was pending, want 1 (the others skipped)", len(msgs))
		}
		api.fail.Store(0)
		testutil.Eventually(t, 15*time.Second, "runs again after the destination recovered", func() bool { return api.count() >= 3 })
		var first struct{ Previous *time.Time }
		if err := json.Unmarshal(api.bodies()[0], &first); err != nil {
			t.Fatal(err)
		}
		if first.Previous != nil {
			t.Fatalf("the first delivered run has a previous (%v): a skipped run was stored", first.Previous)
		}
	})
}
