package crashtest

import (
	"context"
	"encoding/json"
	"net"
	"net/http"
	"strconv"
	"testing"
	"time"

	"github.com/ductus/ductus/actor"
	"github.com/ductus/ductus/runtime/host"
	"github.com/ductus/ductus/runtime/store"
	"github.com/ductus/ductus/runtime/store/storetest"
)

// small sizes a quick real-process run: two workers unless told otherwise.
func small(cfg Config) Config {
	if cfg.Workers == 0 {
		cfg.Workers = 2
	}
	if cfg.Timeout == 0 {
		cfg.Timeout = 2 * time.Minute
	}
	cfg.defaults()
	return cfg
}

// clientOf opens the test's own backend and a client host (no workers).
func clientOf(t *testing.T, ctx context.Context, cfg Config) (store.Backend, *host.Host) {
	t.Helper()
	be, err := cfg.Open(ctx, cfg.DSN)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { be.Close() })
	reg := actor.NewRegistry()
	reg.MustRegister(emitterDefinition())
	client, err := host.New(host.Config{Backend: be, Registry: reg, NoWorkers: true})
	if err != nil {
		t.Fatal(err)
	}
	return be, client
}

// tellAll tells each actor the message and waits until every one has
// completed.
func tellAll(t *testing.T, ctx context.Context, be store.Backend, client *host.Host, refs []actor.Ref, message string, args any) {
	t.Helper()
	batch := make([]actor.Envelope, len(refs))
	for i, r := range refs {
		batch[i] = actor.Envelope{Ref: r, Message: message, Args: args}
	}
	var ids []actor.MessageID
	if err := store.Retry(ctx, 20, func() error { var err error; ids, err = client.TellBatch(ctx, batch); return err }); err != nil {
		t.Fatal(err)
	}
	raw := make([]int64, len(ids))
	for i, id := range ids {
		raw[i] = int64(id)
	}
	for {
		st, err := be.MessageStatus(ctx, raw)
		done := err == nil
		for _, s := range st {
			done = done && s.State == store.MessageCompleted
		}
		if done {
			return
		}
		if ctx.Err() != nil {
			t.Fatalf("waiting for %s on %d actors: %v", message, len(refs), ctx.Err())
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func emitters(prefix string, n int) []actor.Ref {
	out := make([]actor.Ref, n)
	for i := range out {
		out[i] = actor.Ref{Type: emitType, ID: prefix + strconv.Itoa(i)}
	}
	return out
}

// RunSchedulers runs reminders every 50ms on 20 actors under two worker
// processes, both scheduling at once, one of them SIGKILLed and restarted
// midway. Afterwards each reminder's occurrence counter must equal the
// mailbox rows its occurrences made (ticks run plus ticks still waiting),
// and no occurrence's nominal time may have run twice.
func RunSchedulers(t *testing.T, cfg Config) {
	cfg = small(cfg)
	ctx, cancel := context.WithTimeout(context.Background(), cfg.Timeout)
	defer cancel()
	be, client := clientOf(t, ctx, cfg)
	f := &fleet{t: t, cfg: cfg, procs: make([]*proc, cfg.Workers)}
	for i := range f.procs {
		f.start(i)
	}
	defer f.stopAll()
	refs := emitters("s", 20)
	tellAll(t, ctx, be, client, refs, "schedule", 50)
	sleepCtx(ctx, 1500*time.Millisecond)
	f.kill(0)
	f.start(0)
	sleepCtx(ctx, 1500*time.Millisecond)
	f.stopAll() // nothing runs while the rows are compared

	total := int64(0)
	for _, r := range refs {
		rs, s, info := settled(t, ctx, be, r)
		if len(rs) != 1 || rs[0].Occurrence == 0 {
			t.Fatalf("%s: reminders %+v; want one that fired", r.ID, rs)
		}
		if n := int64(len(s.Ticks) + info.Unfinished); n != rs[0].Occurrence {
			t.Fatalf("%s: %d occurrences fired, but %d ticks ran and %d wait: want one mailbox row per occurrence",
				r.ID, rs[0].Occurrence, len(s.Ticks), info.Unfinished)
		}
		seen := map[int64]bool{}
		for _, d := range s.Ticks {
			if seen[d] {
				t.Fatalf("%s: the occurrence due at %s ran twice", r.ID, time.UnixMicro(d).UTC())
			}
			seen[d] = true
		}
		total += rs[0].Occurrence
	}
	t.Logf("%d occurrences over %d reminders, one mailbox row each, across a SIGKILLed scheduler", total, len(refs))
}

// RunStaleEffects stages delayed effects in worker processes, SIGKILLs
// them all before the effects are due and activates the actors again in
// new processes: each effect then runs under a newer generation than the
// one that staged it, and its handler must see it as stale (the fencing
// token a downstream system would refuse it by).
func RunStaleEffects(t *testing.T, cfg Config) {
	cfg = small(cfg)
	ctx, cancel := context.WithTimeout(context.Background(), cfg.Timeout)
	defer cancel()
	rec := &record{byID: map[string]recordDelivery{}}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: rec}
	go srv.Serve(ln)
	defer srv.Close()
	be, client := clientOf(t, ctx, cfg)
	f := &fleet{t: t, cfg: cfg, procs: make([]*proc, cfg.Workers), record: "http://" + ln.Addr().String() + "/"}
	for i := range f.procs {
		f.start(i)
	}
	defer f.stopAll()
	refs := emitters("g", 5)
	const delay = 3 * time.Second // past a restart and the dead workers' leases
	tellAll(t, ctx, be, client, refs, "emit_later", emitArgs{Seq: 1, DelayMS: int(delay / time.Millisecond)})
	staged := time.Now()
	for i := range f.procs {
		f.kill(i)
		f.start(i)
	}
	tellAll(t, ctx, be, client, refs, "touch", nil) // a new activation: the generation moves on
	if time.Since(staged) >= delay {
		t.Fatalf("the actors were activated again only %s after staging, when their effects were already due", time.Since(staged))
	}
	for {
		rec.mu.Lock()
		n := len(rec.byID)
		rec.mu.Unlock()
		if n == len(refs) {
			break
		}
		if ctx.Err() != nil {
			t.Fatalf("%d of %d effects recorded", n, len(refs))
		}
		time.Sleep(50 * time.Millisecond)
	}
	rec.mu.Lock()
	defer rec.mu.Unlock()
	for _, d := range rec.all {
		if !d.Stale || d.Generation == 0 || d.ActorGeneration <= d.Generation {
			t.Fatalf("%s's effect ran as %+v; want it stale (staged by a generation the actor has left)", d.Actor, d)
		}
	}
	t.Logf("%d effects staged before a SIGKILL ran stale in later generations", len(rec.byID))
}

// settled reads r's reminders and actor once no fire is in flight
// (storetest.SettledReminders: MariaDB may still be running a batch a
// SIGKILLed process sent just before it died) and decodes the actor.
func settled(t *testing.T, ctx context.Context, be store.Backend, r actor.Ref) ([]store.ReminderInfo, emitter, *store.ActorInfo) {
	t.Helper()
	rs, info, err := storetest.SettledReminders(ctx, be, r)
	if err != nil {
		t.Fatal(err)
	}
	var s emitter
	if err := json.Unmarshal(info.State, &s); err != nil {
		t.Fatal(err)
	}
	return rs, s, info
}
