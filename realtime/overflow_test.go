package realtime

import (
	"testing"
	"time"

	"github.com/ductus/ductus/actor"
)

// TestOverflowSendsSnapshot: a client whose queue overflows loses its
// pending updates and gets one snapshot once drained, and another client
// of the same actor misses nothing meanwhile.
func TestOverflowSendsSnapshot(t *testing.T) {
	h := startHost(t, openSQLite(t))
	srv := startServer(t, h, func(c *Config) { c.QueueSize = 4 })
	ref := actor.Ref{Type: tallyType, ID: "o"}
	slow := dial(t, srv.url+"?user=slow", nil)
	slow.send(subscribeFrame(ref, token(t, ref), nil, "n"))
	slow.expect(OpSnapshot, "")
	fast := dial(t, srv.url+"?user=fast", nil)
	fast.send(subscribeFrame(ref, token(t, ref), nil, "n"))
	fast.expect(OpSnapshot, "")

	// Hold the slow connection's writer: its frames queue up as if its
	// socket were full.
	var sc *conn
	srv.h.mu.Lock()
	for c := range srv.h.conns {
		if c.key == "slow" {
			sc = c
		}
	}
	srv.h.mu.Unlock()
	for held := false; !held; {
		sc.qmu.Lock()
		if !sc.writing { // the snapshot's flush has finished
			sc.writing, held = true, true
		}
		sc.qmu.Unlock()
		time.Sleep(time.Millisecond)
	}

	for i := 1; i <= 10; i++ {
		ask(t, h, ref, "add", 1)
		if f, _ := fast.untilValue("n", i); len(f.Changes) != 1 {
			t.Fatalf("fast client got %s", f)
		}
	}
	waitSeen(t, srv, ref, "n", 10)
	if got := srv.metric(t, "ductus_realtime_dropped_updates_total", ""); got != 10 {
		t.Fatalf("dropped %v updates, want all 10 (4 queued, then the overflow and everything after it)", got)
	}
	sc.qmu.Lock()
	sc.writing = false
	sc.kick()
	sc.qmu.Unlock()
	snap := slow.expect(OpSnapshot, "")
	if intValue(t, snap.Values["n"]) != 10 {
		t.Fatalf("snapshot after overflow %s, want n=10", snap)
	}
	ask(t, h, ref, "add", 1)
	if f := slow.expect(OpUpdate, ""); intValue(t, f.Changes["n"]) != 11 || f.Version <= snap.Version {
		t.Fatalf("after the snapshot got %s, want n=11 above version %d", f, snap.Version)
	}
}
