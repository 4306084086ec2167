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

// signalBackend lets a test deliver cross-process signals by hand and
// counts the polls for owned actors with work.
type signalBackend struct {
	store.Backend
	mu     sync.Mutex
	listen func(store.Signal)
	polls  atomic.Int64
}

func (s *signalBackend) Listen(ctx context.Context, fn func(store.Signal)) error {
	s.mu.Lock()
	s.listen = fn
	s.mu.Unlock()
	<-ctx.Done()
	return nil
}

func (s *signalBackend) LeaseOwnedDue(ctx context.Context, owner string) ([]store.LeaseRef, error) {
	s.polls.Add(1)
	return s.Backend.LeaseOwnedDue(ctx, owner)
}

// heldActor starts a host over a backend that counts the polls for owned
// actors with work, polling only once an hour (so nothing but the path a
// test takes runs a held actor), and has it hold actor id's activation:
// one Ask ran it.
func heldActor(t *testing.T, id string) (*Host, *signalBackend, actor.Ref) {
	t.Helper()
	be := &signalBackend{Backend: openSQLite(t)}
	h := startHost(t, be, tallyRegistry(&testHooks{}), func(c *Config) { c.PollInterval = time.Hour })
	r := tref(id)
	if _, err := h.Ask(testutil.Context(t), r, "add", 1); err != nil {
		t.Fatal(err)
	}
	return h, be, r
}

// TestSignalNamingAHeldActorRunsIt: a work signal that names an actor this
// process holds runs it at once, without the poll for owned actors with
// work (the query an Ask from another process used to wait for).
func TestSignalNamingAHeldActorRunsIt(t *testing.T) {
	_, be, r := heldActor(t, "held")
	raw, ctx := be.Backend, testutil.Context(t)
	// Another process's enqueue: straight to the store, no local wake-up.
	res, err := raw.MailboxEnqueue(ctx, nil, &store.MailboxEnqueueParams{Messages: []store.NewMessage{{Ref: r, Name: "add", Args: []byte("1")}}})
	if err != nil {
		t.Fatal(err)
	}
	var fn func(store.Signal)
	testutil.Eventually(t, 5*time.Second, "the listener", func() bool {
		be.mu.Lock()
		defer be.mu.Unlock()
		fn = be.listen
		return fn != nil
	})
	before := be.polls.Load()
	fn(store.Signal{Work: true, PKs: []int64{res[0].ActorPK}})
	testutil.Eventually(t, 5*time.Second, "the named actor's message", func() bool {
		return messageState(t, raw, actor.MessageID(res[0].MessageID)) == store.MessageCompleted
	})
	if n := be.polls.Load() - before; n != 0 {
		t.Fatalf("the signal naming a held actor cost %d polls for owned work", n)
	}
}

// TestResumeRunsAHeldActor: resuming an actor whose activation this process
// holds runs what arrived during the pause at once, without the poll for
// owned actors with work (a paused actor's activation stays parked, and
// the claim scan passes over an actor whose lease is this process's).
func TestResumeRunsAHeldActor(t *testing.T) {
	h, be, r := heldActor(t, "paused")
	raw, ctx := be.Backend, testutil.Context(t)
	if ok, err := h.Pause(ctx, r); !ok || err != nil {
		t.Fatalf("pause: %v %v", ok, err)
	}
	id, err := h.Tell(ctx, r, "add", 1)
	if err != nil {
		t.Fatal(err)
	}
	time.Sleep(100 * time.Millisecond)
	if st := messageState(t, raw, id); st == store.MessageCompleted {
		t.Fatal("a paused actor ran its message")
	}
	before := be.polls.Load()
	if ok, err := h.Resume(ctx, r); !ok || err != nil {
		t.Fatalf("resume: %v %v", ok, err)
	}
	testutil.Eventually(t, 5*time.Second, "the message sent while paused", func() bool {
		return messageState(t, raw, id) == store.MessageCompleted
	})
	if n := be.polls.Load() - before; n != 0 {
		t.Fatalf("the resume cost %d polls for owned work", n)
	}
}
