package crashtest

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/ductus/ductus/actor"
	"github.com/ductus/ductus/runtime/host"
	"github.com/ductus/ductus/runtime/store"
)

// emitter stages one ordered effect per message: the effect records the
// message's sequence number in an external system. It also runs a
// reminder (schedule, tick) for the schedulers' crash test.
type emitter struct {
	Last int `json:"last"`
	// Ticks are the nominal times (Unix microseconds) of the reminder
	// occurrences that ran.
	Ticks []int64 `json:"ticks,omitempty"`
}

type emitArgs struct {
	Seq int `json:"seq"`
	// DelayMS postpones the effect (emit_later).
	DelayMS int `json:"delay_ms,omitempty"`
}

type recordArgs struct {
	Actor string `json:"actor"`
	Seq   int    `json:"seq"`
}

func emitterDefinition() *actor.Type[emitter] {
	return &actor.Type[emitter]{Name: emitType, Messages: map[string]actor.Handler[emitter]{
		"emit": actor.Message(func(c *actor.Context, s *emitter, a emitArgs) (any, error) {
			s.Last = a.Seq
			return nil, c.Emit("record", recordArgs{Actor: c.Ref().ID, Seq: a.Seq})
		}),
		"emit_later": actor.Message(func(c *actor.Context, s *emitter, a emitArgs) (any, error) {
			s.Last = a.Seq
			return nil, c.Emit("record", recordArgs{Actor: c.Ref().ID, Seq: a.Seq}, actor.EffectDelay(time.Duration(a.DelayMS)*time.Millisecond))
		}),
		"touch": actor.Message(func(c *actor.Context, s *emitter, _ struct{}) (any, error) { return nil, nil }),
		"schedule": actor.Message(func(c *actor.Context, s *emitter, everyMS int) (any, error) {
			return nil, c.Schedule("tick", actor.Every(time.Duration(everyMS)*time.Millisecond), "tick", nil)
		}),
		"tick": actor.Message(func(c *actor.Context, s *emitter, _ json.RawMessage) (any, error) {
			s.Ticks = append(s.Ticks, c.Info().Due.UnixMicro())
			return nil, nil
		}),
	}}
}

// recordEffect posts each effect to the external record, keyed by the
// effect's stable ID (the record deduplicates on it, as a real idempotent
// receiver would).
func recordEffect(url string) host.Effect {
	client := &http.Client{Timeout: 2 * time.Second}
	return host.Effect{Ordered: true, Timeout: 2 * time.Second, Retry: host.RetryPolicy{Base: 20 * time.Millisecond, Max: 200 * time.Millisecond},
		Handler: host.EffectFunc(func(ctx context.Context, ec host.EffectContext, a recordArgs) (any, error) {
			body, _ := json.Marshal(recordDelivery{ID: ec.ID, Actor: a.Actor, Seq: a.Seq, Generation: ec.Generation,
				ActorGeneration: ec.ActorGeneration, Stale: ec.Stale()})
			req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(body))
			if err != nil {
				return nil, err
			}
			resp, err := client.Do(req)
			if err != nil {
				return nil, err
			}
			resp.Body.Close()
			if resp.StatusCode != http.StatusOK {
				return nil, fmt.Errorf("record answered %s", resp.Status)
			}
			return nil, nil
		})}
}

// record is the external system: it keeps every delivery (with repeats)
// and answers 503 now and then, like a flaky receiver.
type record struct {
	mu   sync.Mutex
	all  []recordDelivery
	byID map[string]recordDelivery
}

type recordDelivery struct {
	ID    string `json:"id"`
	Actor string `json:"actor"`
	Seq   int    `json:"seq"`
	// What the handler saw: the generation that staged the effect, the
	// actor's generation when it was claimed, and Stale.
	Generation      int64 `json:"gen"`
	ActorGeneration int64 `json:"actor_gen"`
	Stale           bool  `json:"stale"`
}

func (r *record) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	b, _ := io.ReadAll(req.Body)
	var d recordDelivery
	if err := json.Unmarshal(b, &d); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	if rand.N(20) == 0 {
		http.Error(w, "flaky", http.StatusServiceUnavailable)
		return
	}
	r.mu.Lock()
	r.all = append(r.all, d)
	if _, ok := r.byID[d.ID]; !ok {
		r.byID[d.ID] = d
	}
	r.mu.Unlock()
}

// RunEffects is the effects crash test: worker processes run actors that
// each stage an ordered effect per message; the effects post to an external
// record while workers are SIGKILLed (mid-send among other moments). Every
// effect must reach the record at least once, each effect ID must stand for
// one message, and each actor's effects must arrive (first arrivals) in
// staging order.
func RunEffects(t *testing.T, cfg Config) {
	cfg.defaults()
	if cfg.Actors == 200 && cfg.Increments == 20_000 {
		cfg.Actors, cfg.Increments = 100, 3_000
	}
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

	be, err := cfg.Open(ctx, cfg.DSN)
	if err != nil {
		t.Fatal(err)
	}
	defer be.Close()
	reg := actor.NewRegistry()
	reg.MustRegister(emitterDefinition())
	client, err := host.New(host.Config{Backend: be, Registry: reg, NoWorkers: true})
	if err != nil {
		t.Fatal(err)
	}
	f := &fleet{t: t, cfg: cfg, procs: make([]*proc, cfg.Workers), record: "http://" + ln.Addr().String() + "/"}
	for i := range f.procs {
		f.start(i)
	}
	defer f.stopAll()

	per := cfg.Increments / cfg.Actors
	var batch []actor.Envelope
	for seq := 1; seq <= per; seq++ {
		for a := 0; a < cfg.Actors; a++ {
			batch = append(batch, actor.Envelope{Ref: actor.Ref{Type: emitType, ID: "e" + strconv.Itoa(a)}, Message: "emit", Args: emitArgs{Seq: seq}})
		}
	}
	if err := store.Retry(ctx, 20, func() error { _, err := client.TellBatch(ctx, batch); return err }); err != nil {
		t.Fatal(err)
	}
	total := per * cfg.Actors

	chaosCtx, stopChaos := context.WithCancel(ctx)
	chaosDone := make(chan struct{})
	go func() {
		defer close(chaosDone)
		for chaosCtx.Err() == nil {
			sleepCtx(chaosCtx, cfg.KillEvery/2+rand.N(cfg.KillEvery))
			if chaosCtx.Err() != nil {
				return
			}
			f.cycle(rand.N(cfg.Workers))
		}
	}()
	deadline := time.Now().Add(cfg.Timeout)
	for {
		rec.mu.Lock()
		n := len(rec.byID)
		rec.mu.Unlock()
		if n >= total {
			break
		}
		if n > total*2/3 {
			stopChaos() // let the survivors finish in peace
		}
		if time.Now().After(deadline) {
			t.Fatalf("timed out: %d of %d effects recorded", n, total)
		}
		time.Sleep(200 * time.Millisecond)
	}
	stopChaos()
	<-chaosDone
	time.Sleep(500 * time.Millisecond) // late repeats, if any, land too

	rec.mu.Lock()
	defer rec.mu.Unlock()
	if len(rec.byID) != total {
		t.Fatalf("%d distinct effect IDs recorded, want %d (one per message)", len(rec.byID), total)
	}
	perActor := map[string][]int{}
	idOf := map[string]string{}
	seen := map[string]bool{}
	for _, d := range rec.all {
		key := d.Actor + "/" + strconv.Itoa(d.Seq)
		if prev, ok := idOf[key]; ok && prev != d.ID {
			t.Fatalf("message %s produced two effects (%s and %s)", key, prev, d.ID)
		}
		idOf[key] = d.ID
		if !seen[d.ID] {
			seen[d.ID] = true
			perActor[d.Actor] = append(perActor[d.Actor], d.Seq)
		}
	}
	for a, seqs := range perActor {
		for i, s := range seqs {
			if s != i+1 {
				t.Fatalf("actor %s: effects first arrived in the order %v", a, seqs)
			}
		}
	}
	t.Logf("%d kills; %d effects recorded once each by ID, %d deliveries in all (%d repeats after crashes or 503s)",
		f.kills.Load(), total, len(rec.all), len(rec.all)-total)
	if dead, _ := be.EffectList(ctx, &store.EffectListParams{State: store.EffectDead}); len(dead) != 0 {
		t.Fatalf("dead effects: %+v", dead)
	}
}
