package host

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ductus/ductus/actor"
	"github.com/ductus/ductus/internal/testutil"
	"github.com/ductus/ductus/runtime/store"
)

// readCounter counts the broadcast tailer's reads.
type readCounter struct {
	store.Backend
	reads atomic.Int64
}

func (r *readCounter) BroadcastRead(ctx context.Context, p *store.BroadcastReadParams) ([]store.Broadcast, error) {
	r.reads.Add(1)
	return r.Backend.BroadcastRead(ctx, p)
}

// TestBroadcastReadsWaitForSubscribers commits turns that broadcast while
// nobody subscribes: the tailer must not read after each of them (its
// poll, an hour here, is the only reader then). A first subscriber then
// waits for one read that brings the tailer up to date, so it receives
// the next broadcast and none committed before it subscribed.
func TestBroadcastReadsWaitForSubscribers(t *testing.T) {
	be := &readCounter{Backend: openSQLite(t)}
	reg := actor.NewRegistry()
	reg.MustRegister(&actor.Type[tally]{Name: "hosttest.obs", Messages: map[string]actor.Handler[tally]{
		"add": actor.Message(func(c *actor.Context, s *tally, n int) (int, error) { s.N += n; return s.N, nil }),
	}, Observables: map[string]func(*tally) any{"n": func(s *tally) any { return s.N }}})
	h := startHost(t, be, reg, func(c *Config) { c.PollInterval = time.Hour })
	ctx := testutil.Context(t)
	r := actor.Ref{Type: "hosttest.obs", ID: "o"}
	for i := 0; i < 5; i++ {
		if _, err := h.Ask(ctx, r, "add", 1); err != nil {
			t.Fatal(err)
		}
	}
	time.Sleep(50 * time.Millisecond)
	if n := be.reads.Load(); n != 0 {
		t.Fatalf("the tailer read broadcasts %d times with nobody subscribed", n)
	}
	var mu sync.Mutex
	var got []string
	cancel, err := h.Subscribe(ctx, r, func(b Broadcast) {
		mu.Lock()
		got = append(got, string(b.Value))
		mu.Unlock()
	})
	if err != nil {
		t.Fatal(err)
	}
	defer cancel()
	if n := be.reads.Load(); n != 1 {
		t.Fatalf("subscribing made %d reads, want the one catch-up read", n)
	}
	if _, err := h.Ask(ctx, r, "add", 1); err != nil {
		t.Fatal(err)
	}
	testutil.Eventually(t, 5*time.Second, "the broadcast of the next commit", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(got) > 0
	})
	time.Sleep(50 * time.Millisecond)
	mu.Lock()
	defer mu.Unlock()
	if len(got) != 1 || got[0] != "6" {
		t.Fatalf("the subscriber received %v, want only the broadcast committed after it subscribed ([6])", got)
	}
}
