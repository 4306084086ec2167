package script

import (
	"fmt"
	"testing"
)

// A Load checks an interface in a context of its own and then lets the
// context go, and the worker gives closed contexts' memory back every
// trimAfter of them: a start of many interfaces holds no context per
// interface. Each isolate binds an interface on its first call.
func TestLoadKeepsNoContext(t *testing.T) {
	h := newTestHost(t, Config{Isolates: 1})
	n := 2*trimAfter + 5
	for i := range n {
		// top-level code that leaves something in its context
		loadJS(t, h, fmt.Sprintf("i%03d", i), `const table = Array.from({length: 2000}, (_, i) => "row " + i); function transform(m) { return m + table.length; }`)
	}
	w := h.workers[0]
	heap := func() uint64 { return w.iso.GetHeapStatistics().TotalHeapSize } // idle: nothing runs in the isolate
	loaded := heap()
	if len(w.bindings) != 0 {
		t.Errorf("after %d loads the isolate holds %d contexts, want none", n, len(w.bindings))
	}
	if w.closed != n%trimAfter {
		t.Errorf("%d contexts closed since the last trim after %d loads, want %d (a trim every %d)", w.closed, n, n%trimAfter, trimAfter)
	}
	for i := range n {
		if res := mustCall(t, h, fmt.Sprintf("i%03d", i), "", text("x")); string(res.Output) != "x2000" {
			t.Fatalf("the first call of i%03d: %+v", i, res)
		}
	}
	if len(w.bindings) != n {
		t.Errorf("after a call of each, the isolate holds %d contexts, want %d", len(w.bindings), n)
	}
	if bound := heap(); loaded*2 > bound {
		t.Errorf("the heap after the loads (%d bytes) is not under half the heap with every interface bound (%d)", loaded, bound)
	}
	t.Logf("heap: %d bytes after %d loads, %d with each bound", loaded, n, heap())
}
