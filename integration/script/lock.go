package script

// #include "lock.h"
import "C"

import "runtime"

// lock takes the isolate's v8::Locker and keeps it until unlock is called.
// A Locker belongs to the OS thread that took it (another thread's v8go
// call would wait for it forever), so lock also wires the calling goroutine
// to its thread until then.
//
// Why: v8go takes the Locker inside each of its calls (a new value, a
// call, reading a result...), and a Locker that is not nested inside
// another on the same thread is a top-level one: V8 restores the thread's
// isolate state when it is taken and frees it when it is released, about
// 3 µs each time on the 2-core machine, several times per transform. With
// this one held for the whole call, v8go's become nested Lockers, which
// cost next to nothing.
//
// Nothing else may take the Locker while a worker holds it: the watchdog
// only requests interrupts and terminations, which V8 allows from any
// thread without it. The isolate must not be disposed while it is held.
func (w *worker) lock() (unlock func()) {
	runtime.LockOSThread()
	l := C.ductusLock(w.raw)
	return func() {
		C.ductusUnlock(l)
		runtime.UnlockOSThread()
	}
}
