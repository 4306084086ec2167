package host

import (
	"sync"

	"github.com/ductus/ductus/actor"
)

// waiters are the Asks of this process waiting for their messages. A
// worker of this process hands the result over directly after its commit;
// anything else (a signal from another process, a destroy) only tells the
// waiter to read the durable row again.
type waiters struct {
	mu sync.Mutex
	m  map[int64]*waiter
}

type waiter struct {
	ref actor.Ref
	ch  chan askOutcome // buffered 1; a newer outcome replaces nothing
}

type askOutcome struct {
	result []byte
	err    error
	reread bool // look at the durable row
}

func (w *waiters) init() { w.m = map[int64]*waiter{} }

func (w *waiters) add(id int64, ref actor.Ref) *waiter {
	wt := &waiter{ref: ref, ch: make(chan askOutcome, 1)}
	w.mu.Lock()
	w.m[id] = wt
	w.mu.Unlock()
	return wt
}

func (w *waiters) remove(id int64) {
	w.mu.Lock()
	delete(w.m, id)
	w.mu.Unlock()
}

func (w *waiters) local(id int64) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	_, ok := w.m[id]
	return ok
}

func (w *waiters) send(id int64, o askOutcome) {
	w.mu.Lock()
	wt, ok := w.m[id]
	w.mu.Unlock()
	if !ok {
		return
	}
	select {
	case wt.ch <- o:
	default:
	}
}

// deliver hands a committed result to a local waiter.
func (w *waiters) deliver(id int64, result []byte) { w.send(id, askOutcome{result: result}) }

// signal tells a waiter its message finished: with err (a dead letter) or,
// with nil, to read the durable row.
func (w *waiters) signal(id int64, err error) {
	if err != nil {
		w.send(id, askOutcome{err: err})
		return
	}
	w.send(id, askOutcome{reread: true})
}

// signalRef wakes every waiter on an actor (it was destroyed).
func (w *waiters) signalRef(ref actor.Ref) {
	w.mu.Lock()
	var ids []int64
	for id, wt := range w.m {
		if wt.ref == ref {
			ids = append(ids, id)
		}
	}
	w.mu.Unlock()
	for _, id := range ids {
		w.signal(id, nil)
	}
}
