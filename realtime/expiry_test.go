package realtime

import (
	"testing"
	"time"

	"github.com/ductus/ductus/actor"
)

// TestTokenExpiryEndsTheSubscription: once a subscription's token has run
// out, the next change is not sent; the subscription ends with
// token_expired (once), the connection and its other subscriptions stay
// open, and a subscribe with a fresh token and since resumes with the
// change it was not sent.
func TestTokenExpiryEndsTheSubscription(t *testing.T) {
	h := startHost(t, openSQLite(t))
	srv := startServer(t, h)
	short := actor.Ref{Type: tallyType, ID: "short"}
	long := actor.Ref{Type: tallyType, ID: "long"}
	// Expiry has a second's resolution: at least a second from now.
	expires := time.Now().Truncate(time.Second).Add(2 * time.Second)
	tok, err := testKeys.Sign(Claims{Ref: short, Observables: []string{"n"}, Expires: expires})
	if err != nil {
		t.Fatal(err)
	}
	c := dial(t, srv.url, nil)
	c.send(subscribeFrame(short, tok, nil, "n"))
	snap := c.expect(OpSnapshot, "")
	c.send(subscribeFrame(long, token(t, long), nil, "n"))
	c.expect(OpSnapshot, "")

	ask(t, h, short, "add", 1) // before the expiry: sent
	c.untilValue("n", 1)
	time.Sleep(time.Until(expires) + 50*time.Millisecond)

	ask(t, h, short, "add", 1) // after it: refused instead
	ask(t, h, short, "add", 1)
	f := c.expect(OpError, CodeTokenExpired)
	if f.Ref == nil || *f.Ref != short {
		t.Fatalf("token_expired for %v, want %v", f.Ref, short)
	}
	ask(t, h, long, "add", 5) // the other subscription goes on; no second refusal
	up := c.expect(OpUpdate, "")
	if up.Ref == nil || *up.Ref != long || intValue(t, up.Changes["n"]) != 5 {
		t.Fatalf("got %s, want long's n=5", up)
	}
	if got := srv.metric(t, "ductus_realtime_refusals_total", CodeTokenExpired); got != 1 {
		t.Fatalf("token_expired refusals %v, want 1", got)
	}

	// A fresh token and since: what was held back arrives (as the missed
	// updates or a snapshot), ending at n=3.
	since := snap.Version
	c.send(subscribeFrame(short, token(t, short), &since, "n"))
	c.untilValue("n", 3)
}
