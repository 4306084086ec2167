package script

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"runtime/cgo"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unsafe"

	v8 "rogchap.com/v8go"
)

// worker owns one isolate. Whoever holds the worker (taken from the host's
// pool) is the only goroutine using the isolate; the watchdog reads just the
// fields under mu.
type worker struct {
	host   *Host
	handle cgo.Handle

	mu       sync.Mutex // guards the fields the watchdog reads
	raw      unsafe.Pointer
	armed    bool
	deadline time.Time
	callCtx  context.Context

	cause    atomic.Uint32 // a stop, set on the isolate's thread
	heapUsed atomic.Uint64
	baseline uint64 // heap in use when the transform started (native mark)
	retire   bool   // V8's own heap limit was reached outside a call

	iso      *v8.Isolate
	global   *v8.ObjectTemplate
	sdk      *v8.UnboundScript
	bindings map[string]*binding
	byCtx    map[*v8.Context]*binding
	scripts  map[*loaded][]*v8.UnboundScript // see compiled
	gen      uint64
	closed   int             // contexts closed since the last trim
	current  *Meta           // the message being transformed, for console lines
	logCtx   context.Context // its call's context, for the log handler
}

// binding is one interface bound in one context of this worker's isolate.
type binding struct {
	ifc    *loaded
	ctx    *v8.Context
	invoke *v8.Function
	settle *v8.Function
}

func newWorker(h *Host) *worker {
	w := &worker{host: h}
	w.handle = cgo.NewHandle(w)
	return w
}

// ensure creates the isolate if the worker has none (first use, or after a
// runaway discarded it).
func (w *worker) ensure() error {
	if w.iso != nil {
		return nil
	}
	iso := v8.NewIsolate()
	w.mu.Lock()
	w.iso, w.raw = iso, rawIsolate(iso)
	w.mu.Unlock()
	watchHeapLimit(w.raw, w.handle)
	w.bindings = map[string]*binding{}
	w.byCtx = map[*v8.Context]*binding{}
	w.scripts = map[*loaded][]*v8.UnboundScript{}
	w.retire = false
	w.global = v8.NewObjectTemplate(iso)
	natives := map[string]v8.FunctionCallback{
		"__ductus_log":    w.nativeLog,
		"__ductus_mark":   w.nativeMark,
		"__ductus_env":    w.nativeLookup(w.host.cfg.Env),
		"__ductus_secret": w.nativeLookup(w.host.cfg.Secret),
	}
	for name, fn := range natives {
		if err := w.global.Set(name, v8.NewFunctionTemplate(iso, fn)); err != nil {
			w.discard()
			return fmt.Errorf("script: installing %s: %w", name, err)
		}
	}
	sdk, err := w.host.compileSDK(iso)
	if err != nil {
		w.discard()
		return err
	}
	w.sdk = sdk
	return nil
}

// discard disposes the isolate and everything bound in it; the next call
// makes a fresh one.
func (w *worker) discard() {
	if w.iso == nil {
		return
	}
	for _, b := range w.bindings {
		b.ctx.Close()
	}
	w.bindings, w.byCtx, w.scripts = nil, nil, nil
	w.closed = 0 // the isolate goes with everything in it
	w.mu.Lock()
	iso := w.iso
	w.iso, w.raw = nil, nil
	w.mu.Unlock()
	w.global, w.sdk = nil, nil
	iso.Dispose()
}

func (w *worker) unbind(b *binding) {
	delete(w.bindings, b.ifc.name)
	delete(w.byCtx, b.ctx)
	b.ctx.Close()
	w.closed++
	if w.closed >= trimAfter {
		w.trim()
	}
}

// trimAfter is how many closed contexts a worker lets pile up before it
// asks V8 to give their memory back. A closed context (about 120 KB of
// heap) is garbage that V8 collects in its own time, and the pages it
// frees stay with the process unless asked for: the contexts of a start's
// checks (one per interface, see worker.check) held 180 MB at 1,001
// interfaces. A full collection costs a few milliseconds (1.4-16 ms, most
// of them 2-7, at 64 contexts on the 2-core machine), so it is paid once
// per trimAfter contexts, and at most trimAfter contexts' worth is left
// per isolate.
const trimAfter = 64

// trim collects the isolate's garbage and returns the freed pages.
func (w *worker) trim() {
	unlock := w.lock()
	lowMemory(w.raw)
	unlock()
	w.closed = 0
}

// sweep drops contexts of interfaces that were reloaded or unloaded, and
// the compiled scripts of versions that were replaced. It runs after every
// Load publishes (a start sweeps once per interface), so it reads the
// published set under one lock rather than once per entry.
func (w *worker) sweep() {
	h := w.host
	gen := h.gen.Load()
	if gen == w.gen {
		return
	}
	w.gen = gen
	var stale []*binding
	h.mu.Lock()
	for name, b := range w.bindings {
		if h.ifaces[name] != b.ifc {
			stale = append(stale, b)
		}
	}
	for l := range w.scripts {
		if l.sealed && h.ifaces[l.name] != l { // one still being checked by Load is not sealed
			delete(w.scripts, l) // V8 keeps them until the isolate goes; Go need not
		}
	}
	h.mu.Unlock()
	for _, b := range stale {
		w.unbind(b) // outside the lock: it may trim
	}
}

// arm starts the guard's watch over a call into V8.
func (w *worker) arm(ctx context.Context, budget time.Duration) {
	w.cause.Store(uint32(stopNone))
	w.baseline = 0
	w.mu.Lock()
	w.armed, w.deadline, w.callCtx = true, time.Now().Add(budget), ctx
	w.mu.Unlock()
	w.host.guard.arm()
}

func (w *worker) disarm() stop {
	w.mu.Lock()
	w.armed, w.callCtx = false, nil
	w.mu.Unlock()
	w.host.guard.disarm()
	return stop(w.cause.Load())
}

// poke is the watchdog's tick for this worker.
func (w *worker) poke() {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.armed && w.raw != nil {
		requestInterrupt(w.raw, w.handle)
	}
}

// interrupted runs on the isolate's thread, inside the running JavaScript.
func (w *worker) interrupted() {
	w.mu.Lock()
	armed, deadline, ctx := w.armed, w.deadline, w.callCtx
	w.mu.Unlock()
	if !armed || w.cause.Load() != uint32(stopNone) {
		return
	}
	why := stopNone
	select {
	case <-w.host.done:
		why = stopClosed
	default:
		switch {
		case time.Now().After(deadline):
			why = stopTimeout
		case ctx.Err() != nil:
			why = stopCancel
		default:
			hs := w.iso.GetHeapStatistics()
			if used := hs.UsedHeapSize + hs.ExternalMemory; used > w.host.cfg.HeapLimit {
				w.heapUsed.Store(used)
				why = w.blame(used, stopHeap)
			}
		}
	}
	if why != stopNone {
		w.cause.Store(uint32(why))
		w.iso.TerminateExecution()
	}
}

// nearHeapLimit runs on the isolate's thread when V8's own heap limit is
// close: stop the call (if any) and retire the isolate.
func (w *worker) nearHeapLimit(current uint64) {
	w.heapUsed.Store(current)
	w.mu.Lock()
	armed := w.armed
	w.mu.Unlock()
	if armed {
		w.cause.CompareAndSwap(uint32(stopNone), uint32(w.blame(current, stopV8Limit)))
		w.iso.TerminateExecution()
		return
	}
	w.retire = true
}

// blame decides whose fault a full heap is. An isolate's heap holds every
// context bound in it, so an interface that keeps state in its globals can
// fill it between calls, and the call that finds it full is not the one
// that filled it. If the running call grew the heap by at least half of
// what is in use, it is the runaway; otherwise the isolate is just full
// (stopHeapFull): it is replaced and the message retried.
func (w *worker) blame(used uint64, runaway stop) stop {
	if w.baseline > 0 && used-min(used, w.baseline) < used/2 {
		return stopHeapFull
	}
	return runaway
}

// nativeMark is the SDK's first act in every call: the heap in use before
// the transform runs, read on the isolate's thread with its lock held. A
// heap already past the ceiling (state kept by short calls, which the
// watchdog's ticks never catch running) stops the call before it starts.
func (w *worker) nativeMark(info *v8.FunctionCallbackInfo) *v8.Value {
	info.Release()
	hs := w.iso.GetHeapStatistics()
	w.baseline = hs.UsedHeapSize + hs.ExternalMemory
	if w.baseline > w.host.cfg.HeapLimit && w.cause.CompareAndSwap(uint32(stopNone), uint32(stopHeapFull)) {
		w.heapUsed.Store(w.baseline)
		w.iso.TerminateExecution()
	}
	return nil
}

func (w *worker) nativeLog(info *v8.FunctionCallbackInfo) *v8.Value {
	defer info.Release()
	args := info.Args()
	b := w.byCtx[info.Context()]
	if b == nil || len(args) < 2 {
		return nil
	}
	level := slog.Level(args[0].Int32())
	text := args[1].String()
	ctx := w.logCtx
	if ctx == nil {
		ctx = context.Background()
	}
	defer func() {
		if r := recover(); r != nil { // a log handler's panic must not unwind through V8
			w.host.log.Error("log handler panicked", "interface", b.ifc.name, "panic", fmt.Sprint(r))
		}
	}()
	if m := w.current; m != nil {
		b.ifc.log.Log(ctx, level, text, "message_id", m.ID, "destination", m.Destination)
	} else {
		b.ifc.log.Log(ctx, level, text)
	}
	return nil
}

func (w *worker) nativeLookup(fn func(iface, name string) (string, bool)) v8.FunctionCallback {
	return func(info *v8.FunctionCallbackInfo) *v8.Value {
		defer info.Release()
		args := info.Args()
		b := w.byCtx[info.Context()]
		if fn == nil || b == nil || len(args) < 1 {
			return nil
		}
		v, ok := w.lookupSafely(fn, b, args[0].String())
		if !ok {
			return nil
		}
		val, err := v8.NewValue(w.iso, v)
		if err != nil {
			return nil
		}
		return val
	}
}

// lookupSafely calls a Config.Env or Config.Secret function; a panic in it
// must not unwind through V8's frames, so it is logged and read as "not
// defined".
func (w *worker) lookupSafely(fn func(iface, name string) (string, bool), b *binding, name string) (v string, ok bool) {
	defer func() {
		if r := recover(); r != nil {
			b.ifc.log.Error("env/secret lookup panicked", "name", name, "panic", fmt.Sprint(r))
			v, ok = "", false
		}
	}()
	return fn(b.ifc.name, name)
}

// bindIn returns the interface's binding on this isolate, creating the
// context (SDK, modules, entry file) the first time. Top-level code runs
// armed with the interface's timeout.
func (w *worker) bindIn(ctx context.Context, ifc *loaded) (*binding, stop, error) {
	if b := w.bindings[ifc.name]; b != nil {
		if b.ifc == ifc {
			return b, stopNone, nil
		}
		w.unbind(b)
	}
	w.arm(ctx, ifc.timeout)
	b, err := w.bind(ifc)
	why := w.disarm()
	if why != stopNone {
		if b != nil {
			w.unbind(b)
		}
		return nil, why, nil
	}
	if err != nil {
		return nil, stopNone, err
	}
	return b, stopNone, nil
}

// check runs ifc's top-level code in a fresh context and checks its
// functions (bind), then closes the context: each isolate binds the
// interface on its first call instead, so a start holds no context per
// interface (see trimAfter), and an interface that never gets a message on
// an isolate costs it nothing. Its trips into V8 share one Locker, as a
// call's do (lock.go); the caller disposes of the isolate after a stop,
// once the Locker is released.
func (w *worker) check(ctx context.Context, ifc *loaded) (stop, error) {
	defer w.lock()()
	w.sweep()
	b, why, err := w.bindIn(ctx, ifc)
	if b != nil && why == stopNone && err == nil {
		w.unbind(b)
	}
	return why, err
}

func (w *worker) bind(ifc *loaded) (*binding, error) {
	ctx := v8.NewContext(w.iso, w.global)
	b := &binding{ifc: ifc, ctx: ctx}
	w.byCtx[ctx] = b
	w.bindings[ifc.name] = b
	fail := func(err error) (*binding, error) {
		w.unbind(b)
		return nil, err
	}
	v, err := w.sdk.Run(ctx)
	if err != nil {
		return fail(fmt.Errorf("script: starting the SDK for %s: %w", ifc.name, err))
	}
	api, err := v.AsObject()
	if err != nil {
		return fail(fmt.Errorf("script: the SDK returned no API: %w", err))
	}
	fns := map[string]*v8.Function{}
	for _, name := range []string{"invoke", "settle", "define", "start", "check"} {
		fv, err := api.Get(name)
		if err == nil {
			fns[name], err = fv.AsFunction()
		}
		if err != nil {
			return fail(fmt.Errorf("script: the SDK has no %s: %w", name, err))
		}
	}
	b.invoke, b.settle = fns["invoke"], fns["settle"]
	undefined := v8.Undefined(w.iso)
	call := func(fn *v8.Function, args ...any) (*v8.Value, error) {
		vals := make([]v8.Valuer, len(args))
		var made []*v8.Value
		for i, a := range args {
			if v, ok := a.(*v8.Value); ok {
				vals[i] = v
				continue
			}
			v, err := v8.NewValue(w.iso, a)
			if err != nil {
				return nil, err
			}
			vals[i] = v
			made = append(made, v)
		}
		defer func() {
			for _, v := range made {
				v.Release()
			}
		}()
		return fn.Call(undefined, vals...)
	}
	for i := range ifc.sources {
		s := &ifc.sources[i]
		if s.kind == "json" {
			if _, err := call(fns["define"], s.name, "json", s.text); err != nil {
				return fail(loadErrorFrom(ifc.name, err, ""))
			}
			continue
		}
		us, err := w.compiled(ifc, i)
		if err != nil {
			return fail(loadErrorFrom(ifc.name, err, ""))
		}
		if s.kind == "main" {
			if _, err := call(fns["start"], s.name); err != nil {
				return fail(fmt.Errorf("script: SDK start: %w", err))
			}
		}
		fv, err := us.Run(ctx)
		if err != nil {
			return fail(loadErrorFrom(ifc.name, err, ""))
		}
		if s.kind == "js" {
			_, err = call(fns["define"], s.name, "js", fv)
			if err != nil {
				return fail(loadErrorFrom(ifc.name, err, ""))
			}
		}
		fv.Release()
	}
	res, err := call(fns["check"], strings.Join(ifc.functions, "\n"))
	if err != nil {
		return fail(loadErrorFrom(ifc.name, err, ""))
	}
	var report struct{ Missing, Defined []string }
	if err := json.Unmarshal([]byte(res.String()), &report); err != nil {
		return fail(fmt.Errorf("script: the SDK's check answered %q: %w", res.String(), err))
	}
	res.Release()
	if len(report.Missing) > 0 {
		return fail(&LoadError{Interface: ifc.name, File: ifc.mainFile, Message: fmt.Sprintf("function %s is not defined (the code defines %s)", strings.Join(quoteAll(report.Missing), ", "), defList(report.Defined))})
	}
	return b, nil
}

func quoteAll(names []string) []string {
	out := make([]string, len(names))
	for i, n := range names {
		out[i] = fmt.Sprintf("%q", n)
	}
	return out
}

func defList(names []string) string {
	if len(names) == 0 {
		return "no functions"
	}
	return strings.Join(names, ", ")
}

// compiled is source i of ifc compiled on this isolate, compiled once per
// Load and isolate: a context closed after its Load's check (or any other)
// binds again from the same script, which v8go v0.9.0 would otherwise keep
// a second copy of until the isolate is disposed.
func (w *worker) compiled(ifc *loaded, i int) (*v8.UnboundScript, error) {
	scripts := w.scripts[ifc]
	if scripts == nil {
		scripts = make([]*v8.UnboundScript, len(ifc.sources))
		w.scripts[ifc] = scripts
	}
	if scripts[i] != nil {
		return scripts[i], nil
	}
	us, err := w.compile(&ifc.sources[i], !ifc.sealed)
	if err != nil {
		return nil, err
	}
	scripts[i] = us
	return us, nil
}

// compile compiles a source on this isolate. While the interface is being
// validated (record: before Load publishes it, so no other worker reads the
// source yet) it records V8's code cache, which the other isolates then
// compile from.
func (w *worker) compile(s *source, record bool) (*v8.UnboundScript, error) {
	if s.cache != nil {
		// a copy: v8go writes Rejected into the struct it is given
		return w.iso.CompileUnboundScript(s.text, s.origin, v8.CompileOptions{CachedData: &v8.CompilerCachedData{Bytes: s.cache.Bytes}})
	}
	us, err := w.iso.CompileUnboundScript(s.text, s.origin, v8.CompileOptions{})
	if err != nil {
		return nil, err
	}
	if record {
		if c := us.CreateCodeCache(); c != nil && len(c.Bytes) > 0 && !c.Rejected {
			s.cache = c
		}
	}
	return us, nil
}

// call runs one message through one function of ifc on this worker.
func (w *worker) call(ctx context.Context, ifc *loaded, function string, in Input) (Result, stop, error) {
	if err := w.ensure(); err != nil {
		return Result{}, stopNone, err
	}
	// the call's dozen trips into V8 under one Locker, on one thread
	defer w.lock()()
	w.sweep()
	b, why, err := w.bindIn(ctx, ifc)
	if why != stopNone || err != nil {
		return Result{}, why, err
	}
	received := ""
	if !in.Meta.ReceivedAt.IsZero() {
		received = strconv.FormatInt(in.Meta.ReceivedAt.UnixMilli(), 10)
	}
	header := strings.Join([]string{function, string(in.Format), string(in.OutputFormat), in.Meta.ID, received, in.Meta.Destination, in.Meta.Origin}, "\x00")
	args := make([]v8.Valuer, 0, 2)
	for _, a := range []string{header, string(in.Payload)} {
		v, err := v8.NewValue(w.iso, a)
		if err != nil {
			return Result{}, stopNone, fmt.Errorf("script: passing the message to V8: %w", err)
		}
		defer v.Release()
		args = append(args, v)
	}

	w.current, w.logCtx = &in.Meta, ctx
	defer func() { w.current, w.logCtx = nil, nil }()
	w.arm(ctx, ifc.timeout)
	code, err := w.invoke(b, args)
	why = w.disarm()
	if why != stopNone {
		return Result{}, why, nil
	}
	if err != nil {
		// invoke catches everything a transform throws; an error here is
		// V8 refusing (a stack overflow inside the SDK's own handler...)
		return Result{Kind: KindQuarantined, Reason: "the transform failed: " + err.Error()}, stopNone, nil
	}
	res, err := outcome(code)
	return res, stopNone, err
}

func (w *worker) invoke(b *binding, args []v8.Valuer) (string, error) {
	undefined := v8.Undefined(w.iso)
	v, err := b.invoke.Call(undefined, args...)
	if err != nil {
		return "", err
	}
	code := v.String()
	v.Release()
	if code == "P" {
		// the transform returned a promise; microtasks ran when the call
		// returned (V8's automatic policy), so it has settled or never will
		v, err = b.settle.Call(undefined)
		if err != nil {
			return "", err
		}
		code = v.String()
		v.Release()
	}
	return code, nil
}

// outcome decodes the SDK's one-string answer (see js/sdk.js).
func outcome(code string) (Result, error) {
	if code == "" {
		return Result{Kind: KindQuarantined, Reason: "the SDK returned nothing"}, nil
	}
	body := code[1:]
	switch code[0] {
	case 'O':
		return Result{Kind: KindOutput, Output: []byte(body)}, nil
	case 'F':
		return Result{Kind: KindFiltered, Reason: body}, nil
	case 'T':
		return Result{Kind: KindTransient, Reason: body}, nil
	case 'Q':
		reason, stack, _ := strings.Cut(body, "\x00")
		return Result{Kind: KindQuarantined, Reason: reason, Stack: stack}, nil
	case 'E':
		return Result{}, fmt.Errorf("%w: %q", ErrUnknownFunction, body)
	}
	return Result{Kind: KindQuarantined, Reason: "the SDK returned an unknown outcome " + code[:1]}, nil
}
