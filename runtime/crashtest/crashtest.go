// Package crashtest proves the runtime's contract with real processes: the
// test binary re-executes itself as worker processes over one database,
// which are SIGKILLed and restarted (one every ~200ms) while, at the same
// time, another is SIGSTOPped past its lease and resumed, as counters are
// incremented. Afterwards every counter must
// equal the sum of its increments exactly, every actor must have applied its
// messages in sequence order, nothing may be pending or dead, and the
// resumed stale workers' commits must have been refused (counted, > 0).
//
// An adapter's test package wires it in with TestMain:
//
//	func TestMain(m *testing.M) { crashtest.Main(m, openFromDSN) }
//
// and a test that calls Run with a DSN of a fresh database.
package crashtest

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"os"
	"os/exec"
	"os/signal"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/ductus/ductus/actor"
	"github.com/ductus/ductus/runtime/host"
	"github.com/ductus/ductus/runtime/store"
	"github.com/ductus/ductus/runtime/store/storetest"
)

// Opener opens a backend from a DSN, in the test and in worker processes.
type Opener func(ctx context.Context, dsn string) (store.Backend, error)

const (
	envWorker = "DUCTUS_CRASHTEST_WORKER"
	envDSN    = "DUCTUS_CRASHTEST_DSN"
	envTTL    = "DUCTUS_CRASHTEST_TTL"
	envWork   = "DUCTUS_CRASHTEST_WORK"
	envRecord = "DUCTUS_CRASHTEST_RECORD"
	typeName  = "crashtest.counter"
	emitType  = "crashtest.emitter"
)

// Main runs the tests, or, in a re-executed worker process, the worker.
func Main(m *testing.M, open Opener) {
	if os.Getenv(envWorker) == "1" {
		os.Exit(worker(open))
	}
	os.Exit(m.Run())
}

// counter is the state: the total, the last sequence applied, and how often
// a message arrived out of order (must stay 0).
type counter struct {
	N          int `json:"n"`
	Last       int `json:"last"`
	Violations int `json:"violations"`
}

type inc struct {
	Seq int `json:"seq"`
	By  int `json:"by"`
}

// definition is the counter type. When announce is set (the parent asked
// with SIGUSR1 before a pause), the next turn says so on stdout and lingers
// in actor code, so the SIGSTOP that follows lands between take and
// commit: every pause then makes a stale commit to refuse, by design
// rather than by luck of timing.
func definition(work time.Duration, announce *atomic.Bool) *actor.Type[counter] {
	return &actor.Type[counter]{Name: typeName, Messages: map[string]actor.Handler[counter]{
		"inc": actor.Message(func(c *actor.Context, s *counter, a inc) (int, error) {
			if a.Seq != s.Last+1 {
				s.Violations++
			}
			s.Last = a.Seq
			s.N += a.By
			if announce != nil && announce.CompareAndSwap(true, false) {
				fmt.Println(inTurnLine)
				time.Sleep(inTurnLinger)
			}
			if work > 0 {
				time.Sleep(work) // actor code outside any transaction
			}
			return s.N, nil
		}),
	}}
}

const (
	// inTurnLine is what a worker prints when it is inside actor code
	// after a SIGUSR1; inTurnLinger is how long it then stays there, long
	// enough for the parent to read the line and SIGSTOP it.
	inTurnLine   = "INTURN"
	inTurnLinger = 500 * time.Millisecond
)

// refusals counts the runtime's "stale commit refused" events by watching
// its log records, and reports each on stdout at once (a killed worker
// cannot report at exit).
type refusals struct{ slog.Handler }

func (r refusals) Enabled(context.Context, slog.Level) bool { return true }

func (r refusals) Handle(ctx context.Context, rec slog.Record) error {
	if strings.Contains(rec.Message, "stale commit refused") {
		fmt.Println("REFUSED")
	}
	if !r.Handler.Enabled(ctx, rec.Level) {
		return nil
	}
	return r.Handler.Handle(ctx, rec)
}

func worker(open Opener) int {
	ctx := context.Background()
	be, err := open(ctx, os.Getenv(envDSN))
	if err != nil {
		fmt.Fprintln(os.Stderr, "crashtest worker: open:", err)
		return 2
	}
	ttl, _ := time.ParseDuration(os.Getenv(envTTL))
	work, _ := time.ParseDuration(os.Getenv(envWork))
	reg := actor.NewRegistry()
	var announce atomic.Bool
	usr1 := make(chan os.Signal, 1)
	signal.Notify(usr1, syscall.SIGUSR1)
	go func() {
		for range usr1 {
			announce.Store(true)
		}
	}()
	reg.MustRegister(definition(work, &announce), emitterDefinition())
	logger := slog.New(refusals{slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn})})
	h, err := host.New(host.Config{Backend: be, Registry: reg, Logger: logger, Kind: "crashtest-worker",
		Effects: map[string]host.Effect{"record": recordEffect(os.Getenv(envRecord))}, ClaimTTL: 3 * time.Second,
		Workers: 4, BatchSize: 16, LeaseTTL: ttl, RenewEvery: ttl / 4, PollInterval: 50 * time.Millisecond,
		Retry: host.RetryPolicy{MaxAttempts: 1000, Base: 10 * time.Millisecond, Max: 200 * time.Millisecond}})
	if err != nil {
		fmt.Fprintln(os.Stderr, "crashtest worker:", err)
		return 2
	}
	if err := h.Start(ctx); err != nil {
		fmt.Fprintln(os.Stderr, "crashtest worker:", err)
		return 2
	}
	fmt.Println("READY")
	select {} // until killed
}

// Config sizes a run.
type Config struct {
	DSN        string
	Open       Opener
	Workers    int           // processes (default 4)
	Actors     int           // counters (default 200)
	Increments int           // in all (default 20,000)
	KillEvery  time.Duration // default ~200ms
	LeaseTTL   time.Duration // default 1s
	Work       time.Duration // actor code time per message (default 300µs)
	Timeout    time.Duration // default 10m
	// Chaos, if set, runs beside the kills (e.g. cutting database
	// connections); it gets the worker PIDs of the moment.
	Chaos func(ctx context.Context, pids func() []int)
}

func (c *Config) defaults() {
	if c.Workers == 0 {
		c.Workers = 4
	}
	if c.Actors == 0 {
		c.Actors = 200
	}
	if c.Increments == 0 {
		c.Increments = 20_000
	}
	if c.KillEvery == 0 {
		c.KillEvery = 200 * time.Millisecond
	}
	if c.LeaseTTL == 0 {
		c.LeaseTTL = time.Second
	}
	if c.Work == 0 {
		c.Work = 2 * time.Millisecond // actor code time: what a pause must land in
	}
	if c.Timeout == 0 {
		c.Timeout = 10 * time.Minute
	}
}

type proc struct {
	cmd    *exec.Cmd
	done   chan struct{}
	inTurn chan struct{} // the worker printed inTurnLine
	ready  atomic.Bool   // it printed READY: SIGUSR1 no longer ends it
}

type fleet struct {
	t        *testing.T
	cfg      Config
	record   string // the external record's URL (RunEffects)
	mu       sync.Mutex
	procs    []*proc
	killing  int // the worker the kill loop is restarting (-1: none)
	paused   int // the worker the pause loop holds stopped (-1: none)
	refused  atomic.Int64
	kills    atomic.Int64
	pauses   atomic.Int64
	restarts atomic.Int64
}

func (f *fleet) start(i int) {
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), envWorker+"=1", envDSN+"="+f.cfg.DSN, envTTL+"="+f.cfg.LeaseTTL.String(), envWork+"="+f.cfg.Work.String(),
		envRecord+"="+f.record)
	out, err := cmd.StdoutPipe()
	if err != nil {
		f.t.Fatal(err)
	}
	cmd.Stderr = &prefixWriter{prefix: fmt.Sprintf("worker %d: ", i), t: f.t}
	if err := cmd.Start(); err != nil {
		f.t.Fatal(err)
	}
	p := &proc{cmd: cmd, done: make(chan struct{}), inTurn: make(chan struct{}, 1)}
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			switch sc.Text() {
			case "REFUSED":
				f.refused.Add(1)
			case "READY":
				p.ready.Store(true)
			case inTurnLine:
				select {
				case p.inTurn <- struct{}{}:
				default:
				}
			}
		}
		_ = cmd.Wait()
		close(p.done)
	}()
	f.mu.Lock()
	f.procs[i] = p
	f.mu.Unlock()
}

func (f *fleet) pids() []int {
	f.mu.Lock()
	defer f.mu.Unlock()
	out := make([]int, 0, len(f.procs))
	for _, p := range f.procs {
		if p != nil && p.cmd.Process != nil {
			out = append(out, p.cmd.Process.Pid)
		}
	}
	return out
}

func (f *fleet) kill(i int) {
	f.mu.Lock()
	p := f.procs[i]
	f.mu.Unlock()
	_ = p.cmd.Process.Signal(syscall.SIGKILL)
	<-p.done
	f.kills.Add(1)
}

func (f *fleet) stopAll() {
	for i := range f.procs {
		f.kill(i)
	}
}

// prefixWriter forwards worker stderr into the test log.
type prefixWriter struct {
	prefix string
	t      *testing.T
	mu     sync.Mutex
	buf    []byte
}

func (w *prefixWriter) Write(b []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.buf = append(w.buf, b...)
	for {
		i := strings.IndexByte(string(w.buf), '\n')
		if i < 0 {
			return len(b), nil
		}
		w.t.Log(w.prefix + string(w.buf[:i]))
		w.buf = w.buf[i+1:]
	}
}

// Run runs the crash test against the database at cfg.DSN (fresh and empty).
func Run(t *testing.T, cfg Config) {
	cfg.defaults()
	ctx, cancel := context.WithTimeout(context.Background(), cfg.Timeout)
	defer cancel()
	be, err := cfg.Open(ctx, cfg.DSN)
	if err != nil {
		t.Fatal(err)
	}
	defer be.Close()
	reg := actor.NewRegistry()
	reg.MustRegister(definition(0, nil))
	client, err := host.New(host.Config{Backend: be, Registry: reg, NoWorkers: true})
	if err != nil {
		t.Fatal(err)
	}

	f := &fleet{t: t, cfg: cfg, procs: make([]*proc, cfg.Workers), killing: -1, paused: -1}
	for i := range f.procs {
		f.start(i)
	}
	defer f.stopAll()

	// Enqueue while the workers run: batches round-robin over the actors,
	// each actor's increments in sequence order.
	perActor := cfg.Increments / cfg.Actors
	want := map[string]int{}
	enqueued := make(chan error, 1)
	go func() {
		var batch []actor.Envelope
		flush := func() error {
			if len(batch) == 0 {
				return nil
			}
			err := store.Retry(ctx, 20, func() error { _, err := client.TellBatch(ctx, batch); return err })
			batch = batch[:0]
			return err
		}
		for seq := 1; seq <= perActor; seq++ {
			for a := 0; a < cfg.Actors; a++ {
				id := "c" + strconv.Itoa(a)
				by := 1 + (a+seq)%3
				// The key makes the retry below safe after an ambiguous
				// commit (a lost connection may have committed the batch).
				key := actor.WithIdempotencyKey("inc-" + strconv.Itoa(seq))
				batch = append(batch, actor.Envelope{Ref: actor.Ref{Type: typeName, ID: id}, Message: "inc", Args: inc{Seq: seq, By: by}, Options: []actor.TellOption{key}})
				if len(batch) == 500 {
					if err := flush(); err != nil {
						enqueued <- err
						return
					}
				}
			}
		}
		enqueued <- flush()
	}()
	for seq := 1; seq <= perActor; seq++ {
		for a := 0; a < cfg.Actors; a++ {
			want["c"+strconv.Itoa(a)] += 1 + (a+seq)%3
		}
	}

	// Chaos, concurrently: a SIGKILL of a random worker every ~KillEvery,
	// restarted at once; and, on its own goroutine, one worker at a time
	// SIGSTOPped past its lease and resumed (the killer leaves that one
	// alone, so its stale commits happen while the others are being
	// killed).
	chaosCtx, stopChaos := context.WithCancel(ctx)
	var chaos sync.WaitGroup
	chaos.Add(2)
	go func() { defer chaos.Done(); f.killLoop(chaosCtx) }()
	go func() { defer chaos.Done(); f.pauseLoop(chaosCtx) }()
	if cfg.Chaos != nil {
		chaos.Add(1)
		go func() { defer chaos.Done(); cfg.Chaos(chaosCtx, f.pids) }()
	}

	if err := <-enqueued; err != nil {
		t.Fatalf("enqueue: %v", err)
	}
	t.Logf("enqueued %d increments to %d actors", perActor*cfg.Actors, cfg.Actors)
	// Let the chaos run while there is work, but stop it with a margin so
	// the survivors can finish.
	// The chaos also stops at half the timeout whatever it has caught, so
	// a slow machine ends in a verdict (the checks below) rather than in
	// the deadline.
	deadline, _ := ctx.Deadline()
	deadline = deadline.Add(-time.Minute)
	calm := time.Now().Add(cfg.Timeout / 2)
	for {
		pending := pendingRows(t, ctx, be)
		if pending == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("timed out with %d messages ready or claimed (%d kills, %d pauses, %d stale commits refused)",
				pending, f.kills.Load(), f.pauses.Load(), f.refused.Load())
		}
		if f.refused.Load() > 0 && pending < int64(cfg.Increments/10) || time.Now().After(calm) {
			stopChaos()
		}
		time.Sleep(500 * time.Millisecond)
	}
	stopChaos()
	chaos.Wait()
	t.Logf("chaos: %d kills, %d restarts, %d pauses past the lease; %d stale commits refused",
		f.kills.Load(), f.restarts.Load(), f.pauses.Load(), f.refused.Load())

	// Verify every counter.
	infos := listAll(t, ctx, be, cfg.Actors)
	if len(infos) != cfg.Actors {
		t.Fatalf("%d counters exist, want %d", len(infos), cfg.Actors)
	}
	for _, info := range infos {
		var c counter
		if err := json.Unmarshal(info.State, &c); err != nil {
			t.Fatalf("%s: state %s: %v", info.Ref.ID, info.State, err)
		}
		if c.N != want[info.Ref.ID] || c.Last != perActor || c.Violations != 0 || info.Unfinished != 0 {
			t.Errorf("%s: total %d (want %d), last seq %d (want %d), %d out-of-order, %d unfinished",
				info.Ref.ID, c.N, want[info.Ref.ID], c.Last, perActor, c.Violations, info.Unfinished)
		}
	}
	// Nothing pending, counted in the tables themselves rather than in the
	// actors' bookkeeping: no ready or claimed row, no dead letter, and
	// every increment stored as a message.
	rows, err := storetest.RowCounts(ctx, be, "ductus_messages", "ductus_ready", "ductus_claimed", "ductus_dead_letters")
	if err != nil {
		t.Fatal(err)
	}
	if rows["ductus_ready"] != 0 || rows["ductus_claimed"] != 0 || rows["ductus_dead_letters"] != 0 || rows["ductus_messages"] != int64(perActor*cfg.Actors) {
		t.Errorf("rows at the end: %v; want %d messages and no ready, claimed or dead one", rows, perActor*cfg.Actors)
	}
	dead, err := be.DeadLetterList(ctx, &store.DeadLetterListParams{Limit: 10})
	if err != nil || len(dead) != 0 {
		t.Fatalf("dead letters: %+v, %v", dead, err)
	}
	if f.refused.Load() == 0 {
		t.Fatalf("no stale commit was refused in %d pauses: the pause never caught a worker between take and commit", f.pauses.Load())
	}
}

func listAll(t *testing.T, ctx context.Context, be store.Backend, n int) []store.ActorInfo {
	var out []store.ActorInfo
	after := ""
	for {
		var page []store.ActorInfo
		err := store.Retry(ctx, 20, func() error {
			var err error
			page, err = be.ActorList(ctx, &store.ActorListParams{Type: typeName, AfterID: after, Limit: 500})
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, page...)
		if len(page) < 500 {
			return out
		}
		after = page[len(page)-1].Ref.ID
	}
}

// pendingRows counts the ready and claimed message rows.
func pendingRows(t *testing.T, ctx context.Context, be store.Backend) int64 {
	var n map[string]int64
	err := store.Retry(ctx, 20, func() error {
		var err error
		n, err = storetest.RowCounts(ctx, be, "ductus_ready", "ductus_claimed")
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return n["ductus_ready"] + n["ductus_claimed"]
}

// killLoop SIGKILLs a random worker (never the paused one) every
// ~KillEvery and restarts it at once.
func (f *fleet) killLoop(ctx context.Context) {
	tick := time.NewTicker(f.cfg.KillEvery)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		i := f.pick(&f.killing)
		if i < 0 {
			continue
		}
		f.cycle(i)
		f.release(&f.killing)
	}
}

// cycle SIGKILLs worker i and starts it again, or starts it if it has
// exited on its own (its open failed under the connection cutter). A
// worker still starting up is left alone: on a loaded machine a start can
// take longer than KillEvery, and killing starters would keep the whole
// fleet starting, with nothing processed, until the timeout.
func (f *fleet) cycle(i int) {
	f.mu.Lock()
	p := f.procs[i]
	f.mu.Unlock()
	select {
	case <-p.done:
	default:
		if !p.ready.Load() {
			return
		}
	}
	f.kill(i)
	f.start(i)
	f.restarts.Add(1)
}

// pauseLoop SIGSTOPs one worker in the middle of a turn (see definition)
// past its lease, SIGCONTs it, rests a lease and starts again, while the
// kill loop goes on.
func (f *fleet) pauseLoop(ctx context.Context) {
	for ctx.Err() == nil {
		i := f.pick(&f.paused)
		if i < 0 {
			sleepCtx(ctx, f.cfg.KillEvery)
			continue
		}
		f.mu.Lock()
		p := f.procs[i]
		f.mu.Unlock()
		if !p.ready.Load() {
			f.release(&f.paused)
			sleepCtx(ctx, f.cfg.KillEvery)
			continue
		}
		select {
		case <-p.inTurn: // a stale announcement from before
		default:
		}
		_ = p.cmd.Process.Signal(syscall.SIGUSR1)
		t := time.NewTimer(2 * time.Second)
		select {
		case <-p.inTurn:
			t.Stop()
			_ = p.cmd.Process.Signal(syscall.SIGSTOP)
			f.pauses.Add(1)
			sleepCtx(ctx, f.cfg.LeaseTTL*2+500*time.Millisecond)
			_ = p.cmd.Process.Signal(syscall.SIGCONT)
		case <-t.C: // no turn to catch (idle): try another worker
		case <-ctx.Done():
			t.Stop()
		}
		f.release(&f.paused)
		sleepCtx(ctx, f.cfg.LeaseTTL)
	}
}

// pick chooses a random worker that neither loop is working on and marks
// it in *slot; -1 when there is none.
func (f *fleet) pick(slot *int) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	var free []int
	for i := range f.procs {
		if i != f.killing && i != f.paused {
			free = append(free, i)
		}
	}
	if len(free) == 0 {
		return -1
	}
	*slot = free[rand.N(len(free))]
	return *slot
}

func (f *fleet) release(slot *int) {
	f.mu.Lock()
	*slot = -1
	f.mu.Unlock()
}

func sleepCtx(ctx context.Context, d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
	case <-t.C:
	}
}
