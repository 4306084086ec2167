package api

import (
	"testing"
	"time"
)

// An address gets its burst at once, then one attempt per interval; its
// neighbours' attempts are their own; an idle address is forgotten once
// the map is full.
func TestSignInLimiter(t *testing.T) {
	l := newSignInLimiter()
	l.burst, l.every, l.maxKeep = 3, time.Second, 2
	now := time.Unix(1000, 0)
	for i := range 3 {
		if ok, _ := l.allow("10.0.0.1:5000", now); !ok {
			t.Fatalf("attempt %d of the burst refused", i+1)
		}
	}
	ok, retry := l.allow("10.0.0.1:5001", now) // another port, the same host
	if ok || retry <= 0 || retry > time.Second {
		t.Fatalf("the fourth attempt: %v, retry %v", ok, retry)
	}
	if ok, _ := l.allow("10.0.0.2:5000", now); !ok {
		t.Fatal("another address was refused")
	}
	if ok, _ := l.allow("10.0.0.1:5000", now.Add(time.Second)); !ok {
		t.Fatal("an attempt after the interval was refused")
	}
	if ok, _ := l.allow("10.0.0.1", now.Add(time.Second)); ok {
		t.Fatal("a second attempt within the interval was allowed")
	}
	// Both kept addresses idle past signInForget: the next new one drops them.
	later := now.Add(signInForget + time.Minute)
	l.allow("10.0.0.3:1", later)
	if len(l.by) != 1 {
		t.Fatalf("%d addresses kept, want 1", len(l.by))
	}
}
