package script

// #cgo CXXFLAGS: -std=c++17 -fno-rtti -fPIC -Wall
// #include "interrupt.h"
import "C"

import (
	"errors"
	"reflect"
	"runtime/cgo"
	"sync/atomic"
	"time"
	"unsafe"

	v8 "rogchap.com/v8go"
)

// The guard stops runaway calls. A single watchdog goroutine ticks every
// guardInterval while any call is armed and asks V8, for every armed
// isolate, to interrupt the running JavaScript (Isolate::RequestInterrupt,
// which V8 documents as callable from any thread without the isolate's
// lock). V8 then runs ductusGuardInterrupt on the isolate's own thread,
// inside the running code, where the isolate is entered and locked. There,
// and only there, the guard reads the heap statistics and decides:
//
//   - past the call's deadline: TerminateExecution (a timeout);
//   - used heap plus external memory (array buffers) above the host's
//     ceiling: TerminateExecution (a heap runaway);
//   - the caller's context cancelled or the host closing: TerminateExecution.
//
// Why not sample from the watchdog? v8go's GetHeapStatistics calls
// v8::Isolate::GetHeapStatistics without a Locker, and V8 requires the
// isolate to be locked for it. In V8 11.1 (disassembled from v8go's libv8.a)
// it walks the heap's spaces and memory chunks (CommittedMemory,
// CommittedPhysicalMemory, SizeOfObjects), the global-handle blocks and the
// native-context list, a chain of heap objects that the collector moves.
// From another thread, while the JavaScript allocates and collects, that is
// a data race on lists being relinked and objects being moved: a wrong
// number at best, a crash at worst. Inside an interrupt the JavaScript is
// paused at a safe point on its own thread, so the same call is safe.
//
// Why terminate from inside the interrupt rather than from the watchdog? A
// TerminateExecution that lands just after a call returned would stop the
// isolate's next call, someone else's. Deciding inside the interrupt, which
// checks the call armed at that moment, means only an overdue or oversized
// call can ever be stopped; a stale interrupt serviced by a later call
// simply re-checks that call.
//
// Behind the ceiling, each isolate also has V8's near-heap-limit callback
// (AddNearHeapLimitCallback): if an allocation burst outruns the sampling and
// reaches V8's own limit, the callback terminates the call and raises the
// limit by a quarter so that V8 does not abort the process; the isolate is
// discarded afterwards either way.
const guardInterval = 10 * time.Millisecond

// stop says why the guard terminated a call.
type stop uint32

const (
	stopNone stop = iota
	stopTimeout
	stopHeap
	stopV8Limit
	stopHeapFull // the heap was full before the call grew it (see blame)
	stopCancel
	stopClosed
)

// ductusGuardInterrupt runs on the isolate's thread inside running
// JavaScript, once per interrupt the watchdog requested.
//
//export ductusGuardInterrupt
func ductusGuardInterrupt(h C.uintptr_t) {
	cgo.Handle(h).Value().(*worker).interrupted()
}

// ductusGuardNearHeapLimit runs on the isolate's thread when its heap nears
// V8's own limit; the returned limit is what V8 continues with.
//
//export ductusGuardNearHeapLimit
func ductusGuardNearHeapLimit(h C.uintptr_t, current, initial C.size_t) C.size_t {
	cgo.Handle(h).Value().(*worker).nearHeapLimit(uint64(current))
	return current + current/4
}

// checkIsolateLayout makes sure v8go's Isolate still begins with its
// v8::Isolate pointer, which rawIsolate reads; a v8go upgrade that changes
// the struct fails NewHost with this error instead of crashing.
func checkIsolateLayout() error {
	t := reflect.TypeOf(v8.Isolate{})
	if t.NumField() == 0 || t.Field(0).Name != "ptr" || t.Field(0).Offset != 0 ||
		t.Field(0).Type.Kind() != reflect.Pointer && t.Field(0).Type.Kind() != reflect.UnsafePointer {
		return errors.New("script: rogchap.com/v8go's Isolate no longer starts with its V8 pointer; the guard (guard.go) needs updating")
	}
	return nil
}

// rawIsolate returns the v8::Isolate* inside a v8go Isolate (its first
// field, checked by checkIsolateLayout).
func rawIsolate(iso *v8.Isolate) unsafe.Pointer {
	return *(*unsafe.Pointer)(unsafe.Pointer(iso))
}

func watchHeapLimit(raw unsafe.Pointer, h cgo.Handle) {
	C.ductusWatchHeapLimit(raw, C.uintptr_t(h))
}

// lowMemory runs a full collection that gives freed pages back to the
// system (Isolate::MemoryPressureNotification, critical). The caller holds
// the isolate's Locker.
func lowMemory(raw unsafe.Pointer) { C.ductusLowMemory(raw) }

func requestInterrupt(raw unsafe.Pointer, h cgo.Handle) {
	C.ductusRequestInterrupt(raw, C.uintptr_t(h))
}

// watchdog is the one goroutine that pokes armed isolates. It sleeps when
// no call has been armed for idleTicks ticks, and wakes on the next arm:
// under load it ticks steadily, so calls do not wake it one by one.
type watchdog struct {
	workers  []*worker
	armed    atomic.Int32
	sleeping atomic.Bool
	wake     chan struct{}
	quit     chan struct{}
	done     chan struct{}
}

const idleTicks = 100

func newWatchdog(workers []*worker) *watchdog {
	g := &watchdog{workers: workers, wake: make(chan struct{}, 1), quit: make(chan struct{}), done: make(chan struct{})}
	g.sleeping.Store(true)
	go g.run()
	return g
}

func (g *watchdog) run() {
	defer close(g.done)
	for {
		select {
		case <-g.quit:
			return
		case <-g.wake:
		}
		for {
			if !g.watch() {
				return
			}
			g.sleeping.Store(true)
			// a call armed between the last tick and the line above saw
			// the watchdog awake and did not wake it: take it over here
			if g.armed.Load() == 0 || !g.sleeping.CompareAndSwap(true, false) {
				break
			}
		}
	}
}

// watch ticks until nothing has been armed for idleTicks ticks (true) or
// the host closes (false).
func (g *watchdog) watch() bool {
	t := time.NewTicker(guardInterval)
	defer t.Stop()
	for idle := 0; idle < idleTicks; {
		select {
		case <-g.quit:
			return false
		case <-t.C:
		}
		if g.armed.Load() == 0 {
			idle++
			continue
		}
		idle = 0
		for _, w := range g.workers {
			w.poke()
		}
	}
	return true
}

// arm notes one more armed call and wakes the watchdog if it sleeps.
func (g *watchdog) arm() {
	g.armed.Add(1)
	if g.sleeping.Load() && g.sleeping.CompareAndSwap(true, false) {
		select {
		case g.wake <- struct{}{}:
		default:
		}
	}
}

func (g *watchdog) disarm() { g.armed.Add(-1) }

func (g *watchdog) stop() {
	close(g.quit)
	<-g.done
}
