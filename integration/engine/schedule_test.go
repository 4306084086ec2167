package engine

import (
	"encoding/json"
	"testing"
	"time"
)

func TestScheduleRunsStoreDueAndPrevious(t *testing.T) {
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
	running(t, proj, testBackend(t))
	eventually(t, 15*time.Second, "three runs", func() bool { return api.count() >= 3 })
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
		if gap := runs[i].Due.Sub(runs[i-1].Due); gap < 900*time.Millisecond || gap > 1100*time.Millisecond {
			t.Fatalf("runs %d and %d are %s apart, want the 1s interval", i-1, i, gap)
		}
	}
}
