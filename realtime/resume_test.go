package realtime

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/ductus/ductus/actor"
	"github.com/ductus/ductus/internal/testutil/backendtest"
)

// TestResume: a client that reconnects with since gets exactly the changes
// it missed while they are retained, else a snapshot, on every backend.
func TestResume(t *testing.T) {
	forEachBackend(t, func(t *testing.T, spec backendtest.Spec) {
		h := startHost(t, spec.OpenT(t))
		srv := startServer(t, h, func(c *Config) { c.RetainUpdates = 3 })
		ref := actor.Ref{Type: tallyType, ID: "r"}
		c := dial(t, srv.url, nil)
		c.send(subscribeFrame(ref, token(t, ref), nil, "n"))
		c.expect(OpSnapshot, "")
		ask(t, h, ref, "add", 1)
		f, _ := c.untilValue("n", 1)
		last := f.Version
		c.ws.Close()

		// Within retention: two changes missed, both sent, then resumed.
		ask(t, h, ref, "add", 1)
		ask(t, h, ref, "add", 1)
		waitSeen(t, srv, ref, "n", 3)
		c = dial(t, srv.url, nil)
		c.send(subscribeFrame(ref, token(t, ref), &last, "n"))
		up := c.expect(OpUpdate, "")
		if intValue(t, up.Changes["n"]) != 3 {
			t.Fatalf("resume sent %s, want the missed changes ending at n=3", up)
		}
		res := c.expect(OpResumed, "")
		if res.Version != up.Version {
			t.Fatalf("resumed at %d, last update %d", res.Version, up.Version)
		}
		ask(t, h, ref, "add", 1)
		c.untilValue("n", 4) // live again
		last = res.Version
		c.ws.Close()

		// Beyond retention (3 kept, 5 missed): a snapshot with the current values.
		for i := 0; i < 5; i++ {
			ask(t, h, ref, "add", 1)
		}
		waitSeen(t, srv, ref, "n", 9)
		c = dial(t, srv.url, nil)
		c.send(subscribeFrame(ref, token(t, ref), &last, "n"))
		snap := c.expect(OpSnapshot, "")
		if intValue(t, snap.Values["n"]) != 9 {
			t.Fatalf("snapshot %s, want n=9", snap)
		}

		// A version from another history (newer than any here): a snapshot.
		future := snap.Version + 1000
		c2 := dial(t, srv.url, nil)
		c2.send(subscribeFrame(ref, token(t, ref), &future, "n"))
		c2.expect(OpSnapshot, "")

		// A new server (a restart) retains nothing from before: a snapshot.
		srv2 := startServer(t, h)
		c3 := dial(t, srv2.url, nil)
		c3.send(subscribeFrame(ref, token(t, ref), &last, "n"))
		if f := c3.expect(OpSnapshot, ""); intValue(t, f.Values["n"]) != 9 {
			t.Fatalf("snapshot after restart %s, want n=9", f)
		}
	})
}

// waitSeen waits until the server has seen observable name of ref reach
// want, so a resume test does not race the broadcast reader.
func waitSeen(t *testing.T, srv *server, ref actor.Ref, name string, want int) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		got := -1
		srv.h.hub.mu.Lock()
		if rs := srv.h.hub.refs[ref]; rs != nil {
			for _, e := range rs.ring {
				if e.name == name {
					_ = json.Unmarshal(e.value, &got)
				}
			}
		}
		srv.h.hub.mu.Unlock()
		if got == want {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("the server saw %s=%d of %s, want %d", name, got, ref, want)
		}
		time.Sleep(5 * time.Millisecond)
	}
}
