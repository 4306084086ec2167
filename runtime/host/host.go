package host

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/google/uuid"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/ductus/ductus/actor"
	"github.com/ductus/ductus/runtime/store"
)

// Host is one runtime process over a backend. Create it with New, start its
// workers with Start, and stop it with Shutdown. Its client methods (Tell,
// Ask, ...) work before Start too.
type Host struct {
	cfg     Config
	be      store.Backend
	reg     *actor.Registry
	log     *slog.Logger
	met     *metrics
	promReg *prometheus.Registry
	id      string // the process ID: the lease owner
	types   []string
	checker *checker

	waiters waiters
	cache   cache
	wake    chan struct{}      // the dispatcher's wake-up
	hints   hints              // actors local enqueues woke
	runq    chan *activation   // claimed activations waiting for an executor
	free    chan struct{}      // executor slots
	fxWake  chan struct{}      // effect worker
	ntWake  chan struct{}      // the debounced cross-process notifier
	ntWant  atomic.Bool        // a work signal is owed to other processes
	ntOn    atomic.Bool        // the notifier loop runs (signalSoon is heard)
	ntWantB atomic.Bool        // a commit wrote broadcasts: signal other processes
	sendWk  chan struct{}      // outbox worker
	bcWake  chan struct{}      // broadcast tailer
	bcStale atomic.Bool        // the tailer skipped reads (no subscribers)
	bcSync  chan chan struct{} // a first subscriber waits for the tailer to catch up
	subs    *subscriptions     // in-process observable subscribers
	clock   dbClock            // database time estimate (for cron)
	ctx     context.Context    // cancelled at the end of Shutdown
	cancel  context.CancelFunc // stops every loop
	claimMu sync.Mutex         // stops claims during shutdown
	closing bool

	mu      sync.Mutex
	started bool
	stopped bool
	wg      sync.WaitGroup // loops
	runWG   sync.WaitGroup // running passes
}

// New validates cfg and returns a Host that is not yet running.
func New(cfg Config) (*Host, error) {
	c, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	h := &Host{
		cfg:    c,
		be:     c.Backend,
		reg:    c.Registry,
		log:    c.Logger,
		id:     uuid.NewString(),
		types:  c.Registry.Names(),
		wake:   make(chan struct{}, 1),
		runq:   make(chan *activation, c.Workers),
		free:   make(chan struct{}, c.Workers),
		fxWake: make(chan struct{}, 1),
		ntWake: make(chan struct{}, 1),
		sendWk: make(chan struct{}, 1),
		bcWake: make(chan struct{}, 1),
		bcSync: make(chan chan struct{}),
		subs:   newSubscriptions(),
	}
	reg := c.Metrics
	if reg == nil {
		h.promReg = prometheus.NewRegistry()
		reg = h.promReg
	}
	if h.met, err = newMetrics(reg); err != nil {
		return nil, err
	}
	h.checker = &checker{h: h}
	h.waiters.init()
	h.cache.init(c.CacheCapacity)
	h.hints.init()
	h.ctx, h.cancel = context.WithCancel(context.Background())
	for i := 0; i < c.Workers; i++ {
		h.free <- struct{}{}
	}
	return h, nil
}

// ID is this process's ID, the lease owner of its activations.
func (h *Host) ID() string { return h.id }

// Backend returns the store the host runs on.
func (h *Host) Backend() store.Backend { return h.be }

// Registry returns the actor types the host runs.
func (h *Host) Registry() *actor.Registry { return h.reg }

// Limits returns the resolved value limits.
func (h *Host) Limits() actor.Limits { return h.cfg.Limits }

// Metrics returns the private Prometheus registry when Config.Metrics was
// nil (serve it at /metrics), else nil.
func (h *Host) Metrics() *prometheus.Registry { return h.promReg }

// Start registers the process and starts its loops. It returns once the
// process row is written.
func (h *Host) Start(ctx context.Context) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.started {
		return errors.New("host: already started")
	}
	meta, _ := json.Marshal(map[string]any{"types": h.types, "workers": h.cfg.Workers, "batch": h.cfg.BatchSize})
	err := store.Retry(ctx, 5, func() error {
		return h.be.ProcessRegister(ctx, &store.ProcessInfo{ID: h.id, Kind: h.cfg.Kind, Host: hostname(), PID: os.Getpid(), Version: h.cfg.Version, Metadata: meta})
	})
	if err != nil {
		return fmt.Errorf("host: register the process: %w", err)
	}
	if err := h.clock.sync(ctx, h.be); err != nil {
		return fmt.Errorf("host: read the database clock: %w", err)
	}
	h.started = true
	h.loop("heartbeat", h.heartbeatLoop)
	if sig, ok := h.be.(store.Signaler); ok {
		h.loop("signals", func(ctx context.Context) { h.listen(ctx, sig) })
	}
	if n, ok := h.be.(store.Notifier); ok {
		h.ntOn.Store(true)
		h.loop("notifier", func(ctx context.Context) { h.notifyLoop(ctx, n) })
	}
	if !h.cfg.NoWorkers {
		h.loop("dispatcher", h.dispatchLoop)
		for i := 0; i < h.cfg.Workers; i++ {
			h.loop("executor", h.executorLoop)
		}
		h.loop("leases", h.leaseLoop)
		h.loop("effects", h.effectLoop)
		h.loop("reminders", h.reminderLoop)
		h.loop("outbox", h.outboxLoop)
		if h.cfg.Retention.Keep > 0 {
			h.loop("retention", h.retentionLoop)
		}
	}
	// The broadcast tail starts at the newest row now, before Start returns,
	// so every commit after Start is published.
	cursor, err := h.be.BroadcastLatestID(ctx)
	if err != nil {
		return fmt.Errorf("host: read the broadcast position: %w", err)
	}
	h.loop("broadcasts", func(ctx context.Context) { h.broadcastLoop(ctx, cursor) })
	h.log.Info("runtime started", "process", h.id, "backend", h.be.Name(), "types", h.types,
		"workers", h.cfg.Workers, "batch", h.cfg.BatchSize, "lease_ttl", h.cfg.LeaseTTL)
	return nil
}

func (h *Host) loop(name string, fn func(ctx context.Context)) {
	h.wg.Add(1)
	go func() {
		defer h.wg.Done()
		defer func() {
			if r := recover(); r != nil {
				h.log.Error("runtime loop panicked", "loop", name, "panic", r)
			}
		}()
		fn(h.ctx)
	}()
}

// Shutdown stops the host gracefully: it stops claiming, lets running turns
// finish within ShutdownTimeout (then cancels them; their uncommitted
// messages run again elsewhere), runs OnDeactivate hooks, releases every
// lease and marks the process stopped.
func (h *Host) Shutdown(ctx context.Context) error {
	h.mu.Lock()
	if h.stopped || !h.started {
		h.stopped = true
		h.mu.Unlock()
		h.cancel()
		return nil
	}
	h.stopped = true
	h.mu.Unlock()

	h.claimMu.Lock()
	h.closing = true
	h.claimMu.Unlock()
	h.poke(h.wake)

	ctx, cancel := context.WithTimeout(ctx, h.cfg.ShutdownTimeout)
	defer cancel()
	done := make(chan struct{})
	go func() { h.runWG.Wait(); close(done) }()
	select {
	case <-done:
	case <-ctx.Done():
		h.log.Warn("shutdown: turns still running at the timeout; cancelling them")
	}
	h.cancel()
	h.wg.Wait()
	h.runWG.Wait()

	rel, rctx := h.cache.drain(), context.Background()
	var leases []store.LeaseRef
	for _, a := range rel {
		a.deactivate(rctx, h)
		leases = append(leases, a.lease())
	}
	var errs []error
	if len(leases) > 0 {
		if err := h.be.LeaseRelease(rctx, &store.LeaseReleaseParams{Owner: h.id, Leases: leases}); err != nil {
			errs = append(errs, fmt.Errorf("host: release leases: %w", err))
		}
	}
	if err := h.be.ProcessStop(rctx, h.id); err != nil {
		errs = append(errs, fmt.Errorf("host: mark the process stopped: %w", err))
	}
	h.met.cached.Set(0)
	h.log.Info("runtime stopped", "process", h.id, "released", len(leases))
	return errors.Join(errs...)
}

func (h *Host) heartbeatLoop(ctx context.Context) {
	beat := time.NewTicker(h.cfg.Heartbeat)
	defer beat.Stop()
	prune := time.NewTicker(time.Hour)
	defer prune.Stop()
	h.pruneProcesses(ctx)
	for {
		select {
		case <-ctx.Done():
			return
		case <-beat.C:
			if err := h.be.ProcessHeartbeat(ctx, h.id); err != nil && ctx.Err() == nil {
				h.log.Warn("heartbeat failed", "err", err)
			}
			if err := h.clock.sync(ctx, h.be); err != nil && ctx.Err() == nil {
				h.log.Warn("reading the database clock failed", "err", err)
			}
		case <-prune.C:
			h.pruneProcesses(ctx)
		}
	}
}

// pruneProcesses deletes rows of processes long stopped or long silent.
func (h *Host) pruneProcesses(ctx context.Context) {
	n, err := h.be.ProcessPrune(ctx, h.cfg.ProcessRetention)
	if err != nil && ctx.Err() == nil {
		h.log.Warn("pruning stale process rows failed", "err", err)
	} else if n > 0 {
		h.log.Info("pruned stale process rows", "rows", n)
	}
}

func (h *Host) retentionLoop(ctx context.Context) {
	t := time.NewTicker(h.cfg.Retention.Every)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		for ctx.Err() == nil {
			res, err := h.be.Prune(ctx, &store.PruneParams{Keep: h.cfg.Retention.Keep, Limit: h.cfg.Retention.Batch})
			if err != nil {
				if ctx.Err() == nil {
					h.log.Warn("retention: prune failed", "err", err)
				}
				break
			}
			if res.Total() > 0 {
				h.log.Debug("retention: pruned", "messages", res.Messages, "effects", res.Effects, "outbox", res.Outbox, "broadcasts", res.Broadcasts)
			}
			if res.Messages < h.cfg.Retention.Batch && res.Effects < h.cfg.Retention.Batch &&
				res.Outbox < h.cfg.Retention.Batch && res.Broadcasts < h.cfg.Retention.Batch {
				break
			}
		}
	}
}

// poke wakes a loop without blocking.
func (h *Host) poke(ch chan struct{}) {
	select {
	case ch <- struct{}{}:
	default:
	}
}

// dbClock estimates the database's time from the local monotonic clock and
// an offset sampled at start and with each heartbeat. It is used only where
// the runtime must compute an absolute time itself (a cron occurrence);
// leases, due times and back-off are computed by the database.
type dbClock struct {
	mu     sync.Mutex
	offset time.Duration
}

func (c *dbClock) sync(ctx context.Context, be store.Backend) error {
	before := time.Now()
	t, err := be.Now(ctx)
	if err != nil {
		return err
	}
	mid := before.Add(time.Since(before) / 2)
	c.mu.Lock()
	c.offset = t.Sub(mid)
	c.mu.Unlock()
	return nil
}

func (c *dbClock) now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return time.Now().Add(c.offset)
}

// signalSoon asks the notifier to tell other processes there is new work.
// Call it only after the work committed.
func (h *Host) signalSoon() {
	h.ntWant.Store(true)
	h.poke(h.ntWake)
}

// notifyLoop sends at most one work signal per debounce window, whatever
// the number of enqueues in it: a burst of commits costs one notification,
// and no commit waits for one. The first signal after a quiet spell goes
// out 2 ms after the enqueue that asked for it; a backend that paces its
// signals (store.NotifyPacer) then holds the next one back until its
// interval has passed.
func (h *Host) notifyLoop(ctx context.Context, n store.Notifier) {
	defer h.ntOn.Store(false) // later enqueues signal in their own commits
	const window = 2 * time.Millisecond
	interval := window
	if p, ok := n.(store.NotifyPacer); ok {
		interval = max(p.NotifyInterval(), window)
	}
	for {
		select {
		case <-ctx.Done():
			return
		case <-h.ntWake:
		}
		sleep(ctx, window)
		work, bc := h.ntWant.Swap(false), h.ntWantB.Swap(false)
		if work || bc {
			if err := n.Notify(ctx, store.Signal{Work: work, Broadcast: bc}); err != nil && ctx.Err() == nil {
				h.log.Warn("waking other processes failed; they find the work at their next poll", "err", err)
			}
			if interval > window {
				sleep(ctx, interval-window)
			}
		}
	}
}
