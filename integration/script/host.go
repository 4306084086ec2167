package script

import (
	"context"
	"embed"
	"fmt"
	"log/slog"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"unicode/utf8"

	v8 "rogchap.com/v8go"
)

// MaxRunaways is how many runaways in a row stop an interface.
const MaxRunaways = 3

// DefaultHeapLimit is an isolate's heap ceiling when Config sets none.
const DefaultHeapLimit = 512 << 20

//go:embed js/hl7codec.js js/hl7.js js/csv.js js/sdk.js
var jsFiles embed.FS

// sdkOrigin names the SDK in stacks; the SDK drops frames under "ductus:"
// from the stacks it reports.
const sdkOrigin = "ductus:sdk.js"

// sdkSource is the SDK as one script: the natives the global template
// installed are captured and removed, then hl7codec.js, hl7.js, csv.js and
// sdk.js run in
// one closure, which returns the API the host calls.
var sdkSource = func() string {
	src := "(function () {\n\"use strict\";\n" +
		"const native = { log: globalThis.__ductus_log, mark: globalThis.__ductus_mark, env: globalThis.__ductus_env, secret: globalThis.__ductus_secret };\n" +
		"delete globalThis.__ductus_log; delete globalThis.__ductus_mark; delete globalThis.__ductus_env; delete globalThis.__ductus_secret;\n"
	for _, f := range []string{"js/hl7codec.js", "js/hl7.js", "js/csv.js", "js/sdk.js"} {
		b, err := jsFiles.ReadFile(f)
		if err != nil {
			panic(err) // embedded at build time
		}
		src += string(b) + "\n"
	}
	return src + "})()"
}()

// Config configures a Host.
type Config struct {
	// Isolates is the pool size; zero means runtime.NumCPU().
	Isolates int
	// HeapLimit is the ceiling, in bytes, of an isolate's used heap plus
	// external (array buffer) memory; a call that passes it is stopped as a
	// runaway. Zero means DefaultHeapLimit. It counts garbage not yet
	// collected, so leave room above what a transform keeps alive.
	HeapLimit uint64
	// Logger receives console output (with the interface's name) and the
	// host's own events; nil means slog.Default().
	Logger *slog.Logger
	// Env answers env(name) for an interface; false means not defined, and
	// env(name) then throws (env(name, fallback) returns fallback). Nil
	// defines nothing. It runs while the calling transform waits, with its
	// isolate locked: it must be quick and must not call the Host. The SDK
	// caches each answer for the life of the interface's context (until the
	// interface is loaded again or its isolate replaced).
	Env func(iface, name string) (string, bool)
	// Secret answers secret(name) likewise; an unknown secret always
	// throws.
	Secret func(iface, name string) (string, bool)
}

// Host runs interfaces' JavaScript on a pool of V8 isolates. Each isolate
// is used by one goroutine at a time; each interface is compiled once per
// isolate and bound in a context of its own, so interfaces never see one
// another's globals. A Host is safe for concurrent use.
type Host struct {
	cfg     Config
	log     *slog.Logger
	workers []*worker
	pool    chan *worker
	guard   *watchdog
	done    chan struct{}
	gen     atomic.Uint64 // bumped on every Load and Unload

	sdkMu    sync.Mutex
	sdkCache *v8.CompilerCachedData

	mu     sync.Mutex
	closed bool
	ifaces map[string]*loaded
}

// loaded is an interface as published by Load. Everything but the health
// fields is immutable once published.
type loaded struct {
	*prepared
	log    *slog.Logger
	sealed bool // published: code caches are final

	// guarded by Host.mu
	runaways    int
	stopped     bool
	lastRunaway string
}

// NewHost starts a host. Isolates are created on first use.
func NewHost(cfg Config) (*Host, error) {
	if err := checkIsolateLayout(); err != nil {
		return nil, err
	}
	if cfg.Isolates < 0 {
		return nil, fmt.Errorf("script: Isolates is %d; it must be positive (or zero for one per CPU)", cfg.Isolates)
	}
	if cfg.Isolates == 0 {
		cfg.Isolates = runtime.NumCPU()
	}
	if cfg.HeapLimit == 0 {
		cfg.HeapLimit = DefaultHeapLimit
	}
	if cfg.HeapLimit < 8<<20 {
		return nil, fmt.Errorf("script: HeapLimit %d is below 8 MiB, less than an isolate needs to start", cfg.HeapLimit)
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	h := &Host{
		cfg:    cfg,
		log:    cfg.Logger,
		pool:   make(chan *worker, cfg.Isolates),
		done:   make(chan struct{}),
		ifaces: map[string]*loaded{},
	}
	for i := 0; i < cfg.Isolates; i++ {
		w := newWorker(h)
		h.workers = append(h.workers, w)
		h.pool <- w
	}
	h.guard = newWatchdog(h.workers)
	return h, nil
}

// compileSDK compiles the SDK on iso, from the code cache of the first
// isolate that compiled it.
func (h *Host) compileSDK(iso *v8.Isolate) (*v8.UnboundScript, error) {
	h.sdkMu.Lock()
	cache := h.sdkCache
	h.sdkMu.Unlock()
	if cache != nil {
		// a copy: v8go writes Rejected into the struct it is given
		return iso.CompileUnboundScript(sdkSource, sdkOrigin, v8.CompileOptions{CachedData: &v8.CompilerCachedData{Bytes: cache.Bytes}})
	}
	us, err := iso.CompileUnboundScript(sdkSource, sdkOrigin, v8.CompileOptions{})
	if err != nil {
		return nil, fmt.Errorf("script: compiling the SDK: %w", err)
	}
	if c := us.CreateCodeCache(); c != nil && len(c.Bytes) > 0 && !c.Rejected {
		h.sdkMu.Lock()
		h.sdkCache = c
		h.sdkMu.Unlock()
	}
	return us, nil
}

func (h *Host) acquire(ctx context.Context) (*worker, error) {
	select {
	case w := <-h.pool:
		select {
		case <-h.done:
			h.pool <- w
			return nil, ErrClosed
		default:
			return w, nil
		}
	case <-ctx.Done():
		return nil, ctx.Err()
	case <-h.done:
		return nil, ErrClosed
	}
}

func (h *Host) release(w *worker) { h.pool <- w }

// Isolates is the pool's size: how many calls (or Loads) run at once.
func (h *Host) Isolates() int { return h.cfg.Isolates }

// Load compiles an interface, runs its top-level code on one isolate and
// checks that spec.Functions are defined, then publishes it (replacing an
// earlier version of the same name, and clearing a stopped state). Problems
// in the code are *LoadError values naming the file and line.
func (h *Host) Load(ctx context.Context, spec Interface) error {
	p, err := prepare(spec)
	if err != nil {
		return err
	}
	l := &loaded{prepared: p, log: h.log.With("interface", p.name)}
	w, err := h.acquire(ctx)
	if err != nil {
		return err
	}
	err = h.validate(ctx, w, l)
	h.release(w)
	if err != nil {
		return err
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.closed {
		return ErrClosed
	}
	l.sealed = true
	h.ifaces[p.name] = l
	h.gen.Add(1)
	return nil
}

func (h *Host) validate(ctx context.Context, w *worker, l *loaded) error {
	if err := w.ensure(); err != nil {
		return err
	}
	why, err := w.check(ctx, l)
	if why != stopNone {
		w.discard()
		switch why {
		case stopClosed:
			return ErrClosed
		case stopCancel:
			return ctx.Err()
		}
		return &LoadError{Interface: l.name, File: l.mainFile, Message: "top-level code was stopped: " + h.runawayReason(why, w, l)}
	}
	if err != nil {
		delete(w.scripts, l) // never published: nothing will bind it
	}
	if w.retire {
		w.discard()
	}
	return err
}

// Unload removes an interface; calls to it fail with ErrUnknownInterface.
func (h *Host) Unload(name string) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	if _, ok := h.ifaces[name]; !ok {
		return fmt.Errorf("%w: %q", ErrUnknownInterface, name)
	}
	delete(h.ifaces, name)
	h.gen.Add(1)
	return nil
}

// Status reports an interface's health; false if it is not loaded.
func (h *Host) Status(name string) (Status, bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	l, ok := h.ifaces[name]
	if !ok {
		return Status{}, false
	}
	return Status{Stopped: l.stopped, Runaways: l.runaways, LastRunaway: l.lastRunaway}, true
}

func (h *Host) lookup(name string) (*loaded, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.closed {
		return nil, ErrClosed
	}
	l, ok := h.ifaces[name]
	if !ok {
		return nil, fmt.Errorf("%w: %q", ErrUnknownInterface, name)
	}
	if l.stopped {
		return nil, fmt.Errorf("%w: %s (%d in a row, the last: %s); load it again to restart it", ErrInterfaceStopped, name, l.runaways, l.lastRunaway)
	}
	return l, nil
}

// Call runs function (DefaultFunction when empty) of interface iface on one
// message. What the transform decided is the Result; an error means the
// call could not be made (unknown or stopped interface, unknown function,
// malformed input, a cancelled ctx, a closed host) and says nothing about
// the message.
func (h *Host) Call(ctx context.Context, iface, function string, in Input) (Result, error) {
	if function == "" {
		function = DefaultFunction
	}
	if !functionPattern.MatchString(function) {
		return Result{}, fmt.Errorf("%w: %q is not a JavaScript identifier", ErrUnknownFunction, function)
	}
	if !in.Format.Valid() {
		return Result{}, fmt.Errorf("%w: unknown input format %q (hl7v2, json, csv or text)", ErrBadInput, in.Format)
	}
	if in.OutputFormat == "" {
		in.OutputFormat = in.Format
	}
	if !in.OutputFormat.Valid() {
		return Result{}, fmt.Errorf("%w: unknown output format %q (hl7v2, json, csv or text)", ErrBadInput, in.OutputFormat)
	}
	for _, f := range []string{in.Meta.ID, in.Meta.Destination, in.Meta.Origin} {
		if strings.ContainsRune(f, 0) || !utf8.ValidString(f) {
			return Result{}, fmt.Errorf("%w: meta field %q is not NUL-free UTF-8", ErrBadInput, f)
		}
	}
	if _, err := h.lookup(iface); err != nil {
		return Result{}, err
	}
	if !utf8.Valid(in.Payload) {
		return Result{Kind: KindQuarantined, Reason: fmt.Sprintf("the payload is not valid UTF-8 (at byte %d)", invalidUTF8At(in.Payload))}, nil
	}
	w, err := h.acquire(ctx)
	if err != nil {
		return Result{}, err
	}
	defer h.release(w)
	l, err := h.lookup(iface) // again: it may have changed while we waited
	if err != nil {
		return Result{}, err
	}
	res, why, err := w.call(ctx, l, function, in)
	if why != stopNone {
		w.discard()
		switch why {
		case stopClosed:
			return Result{}, ErrClosed
		case stopCancel:
			return Result{}, fmt.Errorf("script: call to %s.%s stopped: %w", iface, function, context.Cause(ctx))
		case stopHeapFull:
			res = Result{Kind: KindTransient, Reason: h.runawayReason(why, w, l)}
			l.log.Warn("isolate heap full of state kept between calls; isolate replaced, message to be retried", "message_id", in.Meta.ID, "reason", res.Reason)
			return res, nil
		}
		res = Result{Kind: KindRunaway, Cause: CauseTimeout, Reason: h.runawayReason(why, w, l)}
		if why != stopTimeout {
			res.Cause = CauseHeap
		}
	} else if w.retire {
		w.discard()
	}
	h.account(l, in.Meta, res, err)
	return res, err
}

func (h *Host) runawayReason(why stop, w *worker, l *loaded) string {
	const mib = 1 << 20
	switch why {
	case stopTimeout:
		return fmt.Sprintf("the script ran past its timeout of %s", l.timeout)
	case stopHeap:
		return fmt.Sprintf("the isolate's heap passed its ceiling of %d MiB (%d MiB in use)", h.cfg.HeapLimit/mib, w.heapUsed.Load()/mib)
	case stopV8Limit:
		return fmt.Sprintf("the isolate's heap reached V8's own limit (%d MiB)", w.heapUsed.Load()/mib)
	case stopHeapFull:
		return fmt.Sprintf("the isolate's heap passed its ceiling of %d MiB (%d MiB in use, %d MiB of it before this call started: state kept between calls); retry on a fresh isolate", h.cfg.HeapLimit/mib, w.heapUsed.Load()/mib, w.baseline/mib)
	}
	return "the script was stopped"
}

// account keeps the runaway count: a runaway adds one, any call that ran
// to completion clears it, MaxRunaways in a row stop the interface.
func (h *Host) account(l *loaded, meta Meta, res Result, err error) {
	if res.Kind != KindRunaway {
		if err == nil {
			h.mu.Lock()
			l.runaways = 0
			h.mu.Unlock()
		}
		return
	}
	h.mu.Lock()
	l.runaways++
	l.lastRunaway = res.Reason
	n := l.runaways
	if n >= MaxRunaways {
		l.stopped = true
	}
	h.mu.Unlock()
	l.log.Warn("script runaway stopped; isolate replaced", "message_id", meta.ID, "destination", meta.Destination, "cause", res.Cause.String(), "reason", res.Reason, "in_a_row", n)
	if n == MaxRunaways {
		l.log.Error("interface stopped after repeated runaways; load it again to restart it", "runaways", n)
	}
}

// Close stops running calls, disposes every isolate and ends the watchdog.
// Calls in flight or waiting return ErrClosed.
func (h *Host) Close() error {
	h.mu.Lock()
	if h.closed {
		h.mu.Unlock()
		return nil
	}
	h.closed = true
	close(h.done)
	h.mu.Unlock()
	for range h.workers {
		w := <-h.pool
		w.discard()
	}
	h.guard.stop()
	for _, w := range h.workers {
		w.handle.Delete()
	}
	return nil
}
