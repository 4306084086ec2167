package engine

import (
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/ductus/ductus/actor"
	"github.com/ductus/ductus/integration/api"
	"github.com/ductus/ductus/integration/ixstore"
	"github.com/ductus/ductus/internal/testutil"
)

// A paused destination holds a send already staged (its attempts stop),
// the messages that arrive for it (their transforms do not run, on a lane
// that had no message before the pause too), keeps the pause across a
// restart, and on resume delivers everything in its lanes' order.
func TestAPIPauseResume(t *testing.T) {
	forEachBackend(t, func(t *testing.T, be ixstore.Backend) {
		recv := newReceiver(t)
		mllpAddr := testutil.FreePort(t)
		proj := project(t, map[string]string{
			"ductus.yaml": "partitions: 2\nscript: { isolates: 1 }\napi: { listen: \"127.0.0.1:0\" }\n",
			"interfaces/adt/interface.yaml": fmt.Sprintf(`
source: { type: mllp, listen: %q }
ordering_key: PID-3.1
destinations:
  out: { type: http, url: %q, retry: { initial: 10ms, max: 20ms } }
`, mllpAddr, recv.srv.URL),
			"interfaces/adt/transform.js": "function transform(msg) { return msg; }\n",
		})
		e, stop := startWith(t, proj, be, Options{})
		testutil.Eventually(t, 10*time.Second, "the API to listen", func() bool { return e.APIAddr() != "" })
		base := "http://" + e.APIAddr()
		op, viewer, _ := actionTokens(t, e)
		// Two keys on the two lanes: K's lane has a message before the
		// pause, the other's lane actor does not exist until the pause.
		other := "Q"
		for i := 0; laneOf(other, 2) == laneOf("K", 2); i++ {
			other = fmt.Sprintf("Q%d", i)
		}

		// S1 is staged and failing (503) when the pause comes.
		recv.fail.Store(http.StatusServiceUnavailable)
		s1, _ := sendStored(t, base, op, mllpAddr, "S1", "K", "pending")
		testutil.Eventually(t, 10*time.Second, "S1 to be tried", func() bool {
			return waitDelivery(t, base, op, s1, "pending").Attempts > 0
		})

		const path = "/api/v1/interfaces/adt/destinations/out/pause"
		refused := []struct {
			token, path, method, body string
			status                    int
			says                      string
		}{
			{viewer, path, "POST", `{"reason":"x"}`, 403, "operator"},
			{op, path, "POST", `{}`, 400, "reason"},
			{op, "/api/v1/interfaces/adt/destinations/nope/pause", "POST", `{"reason":"x"}`, 404, "nope"},
			{op, "/api/v1/interfaces/nope/destinations/out/pause", "DELETE", "", 404, "nope"},
			{op, path, "DELETE", "", 409, "not paused"},
		}
		for _, c := range refused {
			if st, b := call(t, base, c.token, c.method, c.path, c.body); st != c.status || !strings.Contains(string(b), c.says) {
				t.Errorf("%s %s %s: %d %s; want %d naming %s", c.method, c.path, c.body, st, b, c.status, c.says)
			}
		}
		var p api.Pause
		callJSON(t, base, op, "POST", path, `{"reason":"EMR upgrade"}`, 200, &p)
		if p.By != "op" || p.Reason != "EMR upgrade" || time.Since(p.At) > time.Minute {
			t.Fatalf("pause: %+v", p)
		}
		if st, b := call(t, base, op, "POST", path, `{"reason":"again"}`); st != 409 || !strings.Contains(string(b), "EMR upgrade") {
			t.Fatalf("a second pause: %d %s; want 409 naming the first", st, b)
		}
		p1, _ := sendStored(t, base, op, mllpAddr, "P1", "K", "pending")
		q1, _ := sendStored(t, base, op, mllpAddr, "Q1", other, "pending")

		held := func(e *Engine, base string) {
			t.Helper()
			for lane := range 2 {
				a, err := e.rt.Actor(testutil.Context(t), actor.Ref{Type: laneType, ID: fmt.Sprintf("adt/out/%d", lane)})
				if err != nil || !a.Paused {
					t.Fatalf("lane %d: %+v %v; want it paused", lane, a, err)
				}
			}
			var list api.InterfaceList
			callJSON(t, base, op, "GET", "/api/v1/interfaces", "", 200, &list)
			d := list.Interfaces[0].Destinations[0]
			if d.Paused == nil || d.Paused.Reason != "EMR upgrade" || d.Paused.By != "op" || d.Pending != 3 {
				t.Fatalf("a paused destination reads %+v (paused %+v); want paused with 3 pending", d, d.Paused)
			}
			// The staged send is given back untried while paused.
			time.Sleep(300 * time.Millisecond)
			a1 := waitDelivery(t, base, op, s1, "pending").Attempts
			time.Sleep(time.Second)
			if a2 := waitDelivery(t, base, op, s1, "pending").Attempts; a2 != a1 {
				t.Fatalf("S1 was tried while paused: attempts %d then %d", a1, a2)
			}
		}
		held(e, base)

		// A restart keeps the pause.
		stop()
		e, _ = startWith(t, proj, be, Options{})
		testutil.Eventually(t, 10*time.Second, "the API to listen", func() bool { return e.APIAddr() != "" })
		base = "http://" + e.APIAddr()
		held(e, base)
		if recv.count() != 0 {
			t.Fatalf("the receiver got %d messages while paused", recv.count())
		}

		recv.fail.Store(0)
		callJSON(t, base, op, "DELETE", path, "", 204, nil)
		for _, id := range []string{s1, p1, q1} {
			waitDelivery(t, base, op, id, "sent")
		}
		got := controlIDs(recv)
		if len(got) != 3 || slices.Index(got, "S1") > slices.Index(got, "P1") || !slices.Contains(got, "Q1") {
			t.Fatalf("the receiver got %v; want S1 before P1, and Q1", got)
		}
		var list api.InterfaceList
		callJSON(t, base, op, "GET", "/api/v1/interfaces", "", 200, &list)
		if d := list.Interfaces[0].Destinations[0]; d.Paused != nil || d.Pending != 0 {
			t.Fatalf("after the resume: %+v", d)
		}
	})
}
