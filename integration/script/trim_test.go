package script

import (
	"context"
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
	checked := w.scripts[h.current("i000")][0]
	if checked == nil {
		t.Fatal("the isolate that checked i000 does not keep its compiled script")
	}
	for i := range n {
		if res := mustCall(t, h, fmt.Sprintf("i%03d", i), "", text("x")); string(res.Output) != "x2000" {
			t.Fatalf("the first call of i%03d: %+v", i, res)
		}
	}
	if w.scripts[h.current("i000")][0] != checked {
		t.Error("the first call compiled i000 again on the isolate that checked it (v8go keeps every copy until the isolate goes)")
	}
	if len(w.bindings) != n {
		t.Errorf("after a call of each, the isolate holds %d contexts, want %d", len(w.bindings), n)
	}
	if bound := heap(); loaded*2 > bound {
		t.Errorf("the heap after the loads (%d bytes) is not under half the heap with every interface bound (%d)", loaded, bound)
	}
	t.Logf("heap: %d bytes after %d loads, %d with each bound", loaded, n, heap())
}

// A reload or an unload lets the isolate's compiled scripts of the old
// version go (from Go's side: v8go frees them with the isolate), and a
// Load that fails keeps none.
func TestCompiledScriptsFollowLoads(t *testing.T) {
	h := newTestHost(t, Config{Isolates: 1})
	w := h.workers[0]
	loadJS(t, h, "a", `function transform(m) { return m + "1"; }`)
	first := h.current("a")
	mustCall(t, h, "a", "", text("x"))
	loadJS(t, h, "a", `function transform(m) { return m + "2"; }`)
	if res := mustCall(t, h, "a", "", text("x")); string(res.Output) != "x2" {
		t.Fatalf("after the reload: %+v", res)
	}
	if _, ok := w.scripts[first]; ok {
		t.Error("the replaced version's compiled scripts are still kept")
	}
	if _, ok := w.scripts[h.current("a")]; !ok {
		t.Error("the current version's compiled scripts are not kept")
	}
	if err := h.Load(context.Background(), Interface{Name: "b", Functions: []string{"transform"}, Files: files(map[string]string{"transform.js": `function other() {}`})}); err == nil {
		t.Fatal("a Load without its transform function succeeded")
	}
	if err := h.Unload("a"); err != nil {
		t.Fatal(err)
	}
	loadJS(t, h, "c", `function transform(m) { return m; }`) // a Load sweeps first
	for l := range w.scripts {
		if l.name != "c" {
			t.Errorf("compiled scripts of %s are kept after it was unloaded or failed to load", l.name)
		}
	}
}
