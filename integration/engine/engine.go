// Package engine is the Ductus integration engine built on the actor
// runtime: it loads a project (integration/config), opens its database,
// registers the lane and schedule actor types, turns every destination into
// an ordered effect of its lane actors, and runs the sources (MLLP, HTTP,
// file, schedule) that store messages through one intake.
//
// The mapping (docs/engine.md): an interface's ordering
// key hashes to a lane; each destination's lane is an actor
// ("<interface>/<destination>/<lane>") whose mailbox is the destination's
// ordered queue for it; the lane's turn runs the destination's JavaScript
// transform and stages the send as an ordered effect, so one lane's
// deliveries go out strictly in order and a failing one holds only its own
// lane; a route is an ordered effect that stores into the target
// interface exactly once per hop; a schedule is a reminder of the
// interface's schedule actor.
//
// Files hold one concept each: engine.go (loading and running), sources.go
// (binding every source), source_mllp.go, source_http.go, source_file.go
// and source_schedule.go (one per source kind), charsets.go (decoding at
// the sources, encoding for the destinations), intake.go (storing),
// groupcommit.go (concurrent intakes sharing a transaction), lane.go (the lane actor and its transform turn), destinations.go (a
// destination as an ordered effect), dest_mllp.go, dest_http.go,
// dest_file.go and routes.go (one per destination kind), dedupe.go,
// status.go (the runaway guard's stopped interfaces), metrics.go.
package engine

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"os"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"golang.org/x/sync/errgroup"

	"github.com/ductus/ductus/actor"
	"github.com/ductus/ductus/adapters/dburl"
	"github.com/ductus/ductus/integration/access"
	"github.com/ductus/ductus/integration/config"
	"github.com/ductus/ductus/integration/format"
	"github.com/ductus/ductus/integration/ixstore"
	"github.com/ductus/ductus/integration/msgstore"
	"github.com/ductus/ductus/integration/script"
	"github.com/ductus/ductus/runtime/host"
)

// Options adjusts an engine beyond its project.
type Options struct {
	Logger *slog.Logger
	// Backend, when set, is used instead of opening the project's
	// database (tests share one); New applies the engine's migrations to
	// it.
	Backend ixstore.Backend
	// Host tunes the runtime (tests shorten timings).
	Host func(*host.Config)
	// Version is reported in the process registry.
	Version string
	// DedupePruneEvery is how often expired dedupe keys are deleted
	// (default one minute).
	DedupePruneEvery time.Duration
}

// Engine runs one project.
type Engine struct {
	proj    *config.Project
	log     *slog.Logger
	be      ixstore.Backend
	ownBE   bool
	rt      *host.Host
	ms      *msgstore.Store
	scripts *script.Host
	ifaces  map[string]*ifaceRuntime
	stats   map[string]*destStats // by destKey, made at New and only read after (deststats.go)
	senders []sender
	met     *metrics
	reg     *prometheus.Registry
	// queues holds the collector that reads the database at scrape time
	// (metrics_queue.go), apart from reg, so that reading a counter in
	// process (Metrics) never runs a query; /metrics gathers both.
	queues *prometheus.Registry
	opts   Options
	group  groupCommit

	startedAt time.Time
	access    *access.Store
	paused    pauses     // the paused destinations (pause.go)
	drain     drainState // the sources' gate (drain.go)
	// runCtx and stopRun are Run's context and its cancel (a drain with
	// stop ends Run); set before the API serves, which alone uses them.
	runCtx  context.Context
	stopRun context.CancelFunc

	mu        sync.Mutex
	sources   []source
	listening bool // every source's listener is bound
	apiAddr   string
}

// ifaceRuntime is an interface with what the engine compiled for it.
type ifaceRuntime struct {
	cfg    *config.Interface
	order  *format.KeyPath // nil without an ordering key
	dedupe *format.KeyPath // nil without dedupe
	// reportedStop: the stop after repeated runaways has been logged.
	reportedStop atomic.Bool
	// tp is the last hour's received and sent, per minute (throughput.go).
	tp throughput
}

// source is a running source of messages.
type source interface {
	run(ctx context.Context) error
	name() string
}

// OpenDatabase opens a project's database and migrates it: the runtime's
// migration line (the adapter's Open) and the engine's own (migrate). The
// adapter logs its own lines (connected, a lost LISTEN connection) to log.
func OpenDatabase(ctx context.Context, db config.Database, log *slog.Logger) (ixstore.Backend, error) {
	// The engine opens its database the way any service does, through
	// dburl; the configuration has already turned the project's database
	// URL into a driver and a DSN (a relative SQLite path resolved against
	// the project).
	be, err := dburl.Target{Driver: db.Driver, DSN: db.DSN}.OpenEngine(ctx, dburl.Options{Logger: log})
	if err != nil {
		return nil, fmt.Errorf("engine: open the %s database: %w", db.Driver, err)
	}
	if err := migrate(ctx, be); err != nil {
		be.Close()
		return nil, err
	}
	return be, nil
}

// migrate applies the engine's migration line (its tables are the
// engine's: the runtime's Open does not create them).
func migrate(ctx context.Context, be ixstore.Backend) error {
	if err := be.EngineStore().SchemaMigrate(ctx); err != nil {
		return fmt.Errorf("engine: migrate the %s database: %w", be.Name(), err)
	}
	return nil
}

// New loads everything an engine needs without starting anything that
// listens or sends: the database (migrated), the scripts (compiled), the
// runtime host.
func New(ctx context.Context, proj *config.Project, opts Options) (*Engine, error) {
	e := &Engine{proj: proj, log: opts.Logger, ifaces: map[string]*ifaceRuntime{}, stats: map[string]*destStats{}, opts: opts, startedAt: time.Now().UTC()}
	if e.log == nil {
		e.log = slog.New(slog.NewTextHandler(os.Stderr, nil))
	}
	e.reg = prometheus.NewRegistry()
	e.met = newMetrics(e.reg)
	e.reg.MustRegister(stoppedCollector{e})
	e.queues = prometheus.NewRegistry()
	e.queues.MustRegister(queueCollector{e})
	for _, in := range proj.Interfaces {
		ir := &ifaceRuntime{cfg: in}
		var err error
		if in.OrderingKey != nil {
			if ir.order, err = format.CompileKey(format.Name(in.Format), in.OrderingKey.Path); err != nil {
				return nil, fmt.Errorf("interface %s: ordering key: %w", in.Name, err)
			}
		}
		if in.Dedupe != nil {
			if ir.dedupe, err = format.CompileKey(format.Name(in.Format), in.Dedupe.Key.Path); err != nil {
				return nil, fmt.Errorf("interface %s: dedupe key: %w", in.Name, err)
			}
		}
		e.ifaces[in.Name] = ir
		for _, d := range in.Destinations {
			e.stats[destKey(in.Name, d.Name)] = &destStats{}
		}
	}
	// The scripts, the database and the file destinations' folders do not
	// depend on each other, and only the scripts are CPU in this process
	// (V8): the migrations wait on the database, the folders on the file
	// system. So the three are done at once, and every failure is
	// reported. (Starting 1,001 interfaces on the 2-core machine,
	// 2026-12-07, each after the scripts' 1.4 s: the folders took 0.21 s
	// of CPU in one profile and 1.30 s on a slower disk, a new PostgreSQL
	// database's migrations and the host's setup 0.72 s.)
	var dbErr, dirErr error
	var wg sync.WaitGroup
	wg.Go(func() { dbErr = e.openDatabase(ctx, opts) })
	wg.Go(func() { dirErr = makeFolders(proj.Interfaces) })
	err := e.loadScripts(ctx)
	wg.Wait()
	if err = errors.Join(err, dbErr, dirErr); err != nil {
		e.Close()
		return nil, err
	}
	e.ms = msgstore.New(e.be)
	e.access = access.New(e.be.EngineStore(), access.Policy{})
	if err := e.buildHost(opts); err != nil {
		e.Close()
		return nil, err
	}
	return e, nil
}

// openDatabase migrates the caller's backend, or opens (and migrates) the
// project's database, which the engine then owns.
func (e *Engine) openDatabase(ctx context.Context, opts Options) error {
	if opts.Backend != nil {
		e.be = opts.Backend
		return migrate(ctx, e.be)
	}
	be, err := OpenDatabase(ctx, e.proj.Engine.Database, e.log)
	if err != nil {
		return err
	}
	e.be, e.ownBE = be, true
	return nil
}

// loadScripts starts the script host and loads every interface's scripts
// into it.
func (e *Engine) loadScripts(ctx context.Context) error {
	lim := e.proj.Engine.Script
	sh, err := script.NewHost(script.Config{
		Isolates: lim.Isolates, HeapLimit: uint64(lim.HeapMB) << 20, Logger: e.log,
		Env:    func(_, name string) (string, bool) { return os.LookupEnv(name) },
		Secret: func(_, name string) (string, bool) { v, ok := e.proj.Secrets[name]; return v, ok },
	})
	if err != nil {
		return fmt.Errorf("engine: start the script host: %w", err)
	}
	e.scripts = sh
	// One Load per isolate at a time: checking an interface is CPU in V8
	// (a context, the SDK, the top-level code), so a site of many
	// interfaces starts in about 1/isolates of the time. Every failure is
	// reported, in the project's order, so one start lists all the broken
	// interfaces.
	errs := make([]error, len(e.proj.Interfaces))
	var g errgroup.Group
	g.SetLimit(sh.Isolates())
	for i, in := range e.proj.Interfaces {
		g.Go(func() error {
			errs[i] = e.loadInterface(ctx, in)
			return nil
		})
	}
	_ = g.Wait()
	return errors.Join(errs...)
}

// loadInterface reads an interface's scripts from its folder and loads
// them into the script host (replacing, and so restarting, a loaded one).
func (e *Engine) loadInterface(ctx context.Context, in *config.Interface) error {
	spec, err := script.ReadInterfaceDir(in.Name, in.Dir)
	if err != nil {
		return fmt.Errorf("engine: interface %s: %w", in.Name, err)
	}
	spec.Timeout = in.Timeout
	for _, d := range in.Destinations {
		spec.Functions = append(spec.Functions, d.Transform)
	}
	if err := e.scripts.Load(ctx, spec); err != nil {
		return fmt.Errorf("engine: %w", err)
	}
	return nil
}

func (e *Engine) buildHost(opts Options) error {
	reg := actor.NewRegistry()
	if err := reg.Register(e.laneDefinition()); err != nil {
		return err
	}
	if err := reg.Register(e.scheduleDefinition()); err != nil {
		return err
	}
	fx, err := e.effects()
	if err != nil {
		return err
	}
	maxPayload := 16 << 20
	cfg := host.Config{
		Backend: e.be, Registry: reg, Logger: e.log, Metrics: e.reg, Effects: fx, Kind: "ductus", Version: opts.Version,
		Workers: e.proj.Engine.Runtime.Workers,
		// Outputs travel in effect arguments and (with save_output) in
		// results: allow whole messages.
		Limits: actor.Limits{EffectBytes: maxPayload, ResultBytes: maxPayload, MailboxMessages: -1},
		// A lane retries a transient transform (or a read failure) until it
		// succeeds: order is kept and nothing is dropped.
		TypeRetry: map[string]host.RetryPolicy{
			laneType:     {MaxAttempts: 1 << 30, Base: time.Second, Max: time.Minute},
			scheduleType: {MaxAttempts: 1 << 30, Base: time.Second, Max: time.Minute},
		},
	}
	if opts.Host != nil {
		opts.Host(&cfg)
	}
	rt, err := host.New(cfg)
	if err != nil {
		return err
	}
	e.rt = rt
	return nil
}

// Host is the runtime the engine runs on.
func (e *Engine) Host() *host.Host { return e.rt }

// Store is the engine's message store.
func (e *Engine) Store() *msgstore.Store { return e.ms }

// Metrics is the engine's Prometheus registry of in-process metrics
// (runtime and engine counters, histograms and gauges), cheap to gather
// as often as wanted. The destinations' queue gauges, which read the
// database, are not in it: /metrics (Gatherer) adds them.
func (e *Engine) Metrics() *prometheus.Registry { return e.reg }

// Run starts the runtime and every source, and blocks until ctx ends;
// then it stops the sources (no new messages are accepted), lets the
// runtime finish its turns and releases everything.
func (e *Engine) Run(ctx context.Context) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	e.runCtx, e.stopRun = ctx, cancel
	if err := e.rt.Start(ctx); err != nil {
		return err
	}
	if err := e.restorePauses(ctx); err != nil {
		_ = e.rt.Shutdown(context.Background())
		return err
	}
	srcs, err := e.buildSources(ctx)
	if err != nil {
		_ = e.rt.Shutdown(context.Background())
		return err
	}
	sctx, stop := context.WithCancel(ctx)
	defer stop()
	var wg sync.WaitGroup
	errc := make(chan error, len(srcs)+1)
	if err := e.serveAPI(sctx, &wg, errc); err != nil {
		closeAll(srcs)
		_ = e.rt.Shutdown(context.Background())
		return err
	}
	for _, s := range srcs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := s.run(sctx); err != nil && sctx.Err() == nil {
				errc <- fmt.Errorf("%s: %w", s.name(), err)
			}
		}()
	}
	wg.Add(2)
	go func() {
		defer wg.Done()
		e.pruneDedupeLoop(sctx, e.opts.DedupePruneEvery)
	}()
	go func() {
		defer wg.Done()
		e.refreshPausesLoop(sctx)
	}()
	names := make([]string, 0, len(srcs))
	for _, s := range srcs {
		names = append(names, s.name())
	}
	sort.Strings(names)
	e.log.Info("engine started", "interfaces", len(e.ifaces), "sources", names, "database", e.be.Name())
	var runErr error
	select {
	case <-ctx.Done():
	case runErr = <-errc:
		e.log.Error("a source failed; stopping", "err", runErr)
	}
	stop()
	wg.Wait()
	err = e.rt.Shutdown(context.Background())
	e.log.Info("engine stopped")
	return errors.Join(runErr, err)
}

// Close releases the scripts, senders and the database (when the engine
// opened it). Call it after Run returns.
func (e *Engine) Close() error {
	var errs []error
	for _, s := range e.senders {
		errs = append(errs, s.close())
	}
	if e.scripts != nil {
		errs = append(errs, e.scripts.Close())
	}
	if e.ownBE && e.be != nil {
		errs = append(errs, e.be.Close())
	}
	return errors.Join(errs...)
}

// redact drops a URL's password and query for logs and errors.
func redact(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return "(unparsable URL)"
	}
	if u.User != nil {
		u.User = url.User(u.User.Username())
	}
	u.RawQuery = ""
	return u.String()
}
