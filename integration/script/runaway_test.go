package script

import (
	"context"
	"errors"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"
)

const runawayJS = `
var calls = 0;
function transform(msg) { calls++; return "ok:" + msg; }
function spin() { for (;;) {} }
function spinCaught() { for (;;) { try { for (;;) {} } catch (e) {} finally { continue; } } }
function bomb() { const keep = []; for (;;) keep.push(new Array(100000).fill(keep.length)); }
function buffers() { const keep = []; for (;;) keep.push(new Uint8Array(4 << 20)); }
function strings() { const keep = []; let s = "x"; for (;;) { s = s + s.length; keep.push(s + "y".repeat(1000)); } }
`

func TestTimeoutStopsAnInfiniteLoop(t *testing.T) {
	h := newTestHost(t, Config{Isolates: 1})
	mustLoad(t, h, Interface{Name: "loop", Files: files(map[string]string{"transform.js": runawayJS}), Timeout: 200 * time.Millisecond})
	loadJS(t, h, "bystander", `var kept = "state"; function transform() { return kept; }`)
	mustCall(t, h, "bystander", "", text("x"))
	before := h.workers[0].iso

	for _, fn := range []string{"spin", "spinCaught"} {
		start := time.Now()
		res := mustCall(t, h, "loop", fn, text("x"))
		if res.Kind != KindRunaway || res.Cause != CauseTimeout || !strings.Contains(res.Reason, "timeout of 200ms") {
			t.Fatalf("%s: %+v", fn, res)
		}
		if d := time.Since(start); d > 3*time.Second {
			t.Errorf("%s: the loop ran %s past a 200ms timeout", fn, d)
		}
		// a success in between keeps the count from stopping the interface
		if res := mustCall(t, h, "loop", "", text("after")); res.Kind != KindOutput || string(res.Output) != "ok:after" {
			t.Fatalf("after %s: %+v", fn, res)
		}
	}
	if h.workers[0].iso == before {
		t.Error("the isolate was not replaced after a runaway")
	}
	// the other interface lost nothing but its context, rebuilt on demand
	if res := mustCall(t, h, "bystander", "", text("x")); string(res.Output) != "state" {
		t.Errorf("bystander: %+v", res)
	}
	if st, _ := h.Status("loop"); st.Stopped || st.Runaways != 0 {
		t.Errorf("status after recovering: %+v", st)
	}
}

func TestHeapCeilingStopsAllocationBombs(t *testing.T) {
	h := newTestHost(t, Config{Isolates: 1, HeapLimit: 64 << 20})
	mustLoad(t, h, Interface{Name: "bomb", Files: files(map[string]string{"transform.js": runawayJS}), Timeout: 30 * time.Second})
	for _, fn := range []string{"bomb", "buffers", "strings"} {
		t.Run(fn, func(t *testing.T) {
			res := mustCall(t, h, "bomb", fn, text("x"))
			if res.Kind != KindRunaway || res.Cause != CauseHeap || !strings.Contains(res.Reason, "ceiling of 64 MiB") {
				t.Fatalf("%s: %+v", fn, res)
			}
			if res := mustCall(t, h, "bomb", "", text("y")); string(res.Output) != "ok:y" {
				t.Fatalf("after %s: %+v", fn, res)
			}
		})
	}
}

// TestV8HeapLimitDoesNotKillTheProcess sets the ceiling above V8's own heap
// limit (about 1.4 GiB for v8go's default isolate), so only the
// near-heap-limit callback stands between the bomb and V8's fatal
// out-of-memory abort.
func TestV8HeapLimitDoesNotKillTheProcess(t *testing.T) {
	if testing.Short() {
		t.Skip("allocates about 2 GiB")
	}
	h := newTestHost(t, Config{Isolates: 1, HeapLimit: 64 << 30})
	mustLoad(t, h, Interface{Name: "bomb", Files: files(map[string]string{"transform.js": runawayJS}), Timeout: 2 * time.Minute})
	res := mustCall(t, h, "bomb", "bomb", text("x"))
	if res.Kind != KindRunaway || res.Cause != CauseHeap || !strings.Contains(res.Reason, "V8's own limit") {
		t.Fatalf("got %+v", res)
	}
	if res := mustCall(t, h, "bomb", "", text("y")); string(res.Output) != "ok:y" {
		t.Fatalf("after: %+v", res)
	}
}

func TestThreeRunawaysStopTheInterface(t *testing.T) {
	h := newTestHost(t, Config{Isolates: 2})
	// The budget also bounds the top-level code at each load: 50 ms was
	// overrun by the trivial top level on a loaded 2-core machine.
	spec := Interface{Name: "loop", Files: files(map[string]string{"transform.js": runawayJS}), Timeout: 250 * time.Millisecond}
	mustLoad(t, h, spec)
	loadJS(t, h, "other", `function transform() { return "fine"; }`)

	for i := 1; i <= MaxRunaways; i++ {
		res := mustCall(t, h, "loop", "spin", text("x"))
		if res.Kind != KindRunaway {
			t.Fatalf("runaway %d: %+v", i, res)
		}
		st, _ := h.Status("loop")
		if st.Runaways != i || st.Stopped != (i == MaxRunaways) {
			t.Fatalf("after runaway %d: %+v", i, st)
		}
	}
	_, err := h.Call(context.Background(), "loop", "", text("x"))
	if !errors.Is(err, ErrInterfaceStopped) || !strings.Contains(err.Error(), "3 in a row") {
		t.Fatalf("call to a stopped interface: %v", err)
	}
	if res := mustCall(t, h, "other", "", text("x")); string(res.Output) != "fine" {
		t.Errorf("other interface: %+v", res)
	}
	mustLoad(t, h, spec) // loading again restarts it
	if res := mustCall(t, h, "loop", "", text("x")); string(res.Output) != "ok:x" {
		t.Errorf("after reload: %+v", res)
	}
	if st, _ := h.Status("loop"); st.Stopped || st.Runaways != 0 {
		t.Errorf("status after reload: %+v", st)
	}
}

func TestRunawayInTopLevelCode(t *testing.T) {
	h := newTestHost(t, Config{Isolates: 1})
	err := h.Load(context.Background(), Interface{Name: "hang", Files: files(map[string]string{"transform.js": "for (;;) {}"}), Timeout: 50 * time.Millisecond})
	var le *LoadError
	if !errors.As(err, &le) || !strings.Contains(le.Message, "top-level code was stopped: the script ran past its timeout") {
		t.Fatalf("got %v", err)
	}
	loadJS(t, h, "next", `function transform() { return "ok"; }`)
	if res := mustCall(t, h, "next", "", text("x")); string(res.Output) != "ok" {
		t.Errorf("next: %+v", res)
	}
}

func TestCancelledContextStopsACall(t *testing.T) {
	h := newTestHost(t, Config{Isolates: 1})
	mustLoad(t, h, Interface{Name: "loop", Files: files(map[string]string{"transform.js": runawayJS}), Timeout: time.Minute})
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	_, err := h.Call(ctx, "loop", "spin", text("x"))
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("got %v", err)
	}
	if st, _ := h.Status("loop"); st.Runaways != 0 {
		t.Errorf("a cancelled call counted as a runaway: %+v", st)
	}
	if res := mustCall(t, h, "loop", "", text("x")); string(res.Output) != "ok:x" {
		t.Errorf("after cancel: %+v", res)
	}
	// waiting for an isolate honours the context too
	busy, stopBusy := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		h.Call(busy, "loop", "spin", text("x"))
	}()
	time.Sleep(50 * time.Millisecond)
	short, cancel2 := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel2()
	if _, err := h.Call(short, "loop", "", text("x")); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("waiting for a busy pool: %v", err)
	}
	stopBusy()
	<-done
}

func TestCloseStopsRunningCallsAndLeaksNothing(t *testing.T) {
	runtime.GC()
	baseline := runtime.NumGoroutine()
	h, err := NewHost(Config{Isolates: 2})
	if err != nil {
		t.Fatal(err)
	}
	mustLoad(t, h, Interface{Name: "loop", Files: files(map[string]string{"transform.js": runawayJS}), Timeout: time.Minute})
	mustCall(t, h, "loop", "", text("x"))
	var wg sync.WaitGroup
	errs := make([]error, 3)
	for i := range errs {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			_, errs[i] = h.Call(context.Background(), "loop", "spin", text("x"))
		}(i)
	}
	time.Sleep(100 * time.Millisecond) // two spinning, one waiting for an isolate
	start := time.Now()
	if err := h.Close(); err != nil {
		t.Fatal(err)
	}
	wg.Wait()
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("Close took %s", d)
	}
	for i, err := range errs {
		if !errors.Is(err, ErrClosed) {
			t.Errorf("call %d: %v, want ErrClosed", i, err)
		}
	}
	if _, err := h.Call(context.Background(), "loop", "", text("x")); !errors.Is(err, ErrClosed) {
		t.Errorf("call after Close: %v", err)
	}
	if err := h.Load(context.Background(), Interface{Name: "x", Files: files(map[string]string{"transform.js": ""})}); !errors.Is(err, ErrClosed) {
		t.Errorf("Load after Close: %v", err)
	}
	h.Close() // twice is fine
	deadline := time.Now().Add(5 * time.Second)
	for runtime.NumGoroutine() > baseline && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if n := runtime.NumGoroutine(); n > baseline {
		buf := make([]byte, 1<<16)
		t.Errorf("%d goroutines after Close, %d before:\n%s", n, baseline, buf[:runtime.Stack(buf, true)])
	}
}

// State kept between calls fills the isolate's heap without any one call
// running away: the call that finds it full is retried on a fresh isolate
// (transient), not blamed.
func TestHeapFullOfKeptStateIsTransient(t *testing.T) {
	h := newTestHost(t, Config{Isolates: 1, HeapLimit: 64 << 20})
	loadJS(t, h, "hoarder", `const kept = []; function transform() { kept.push(new Array(1 << 20).fill(kept.length)); return String(kept.length); }`)
	loadJS(t, h, "innocent", `function transform() { return "fine"; }`)
	var transient Result
	for i := 0; i < 100 && transient.Kind == 0; i++ {
		res := mustCall(t, h, "hoarder", "", text("x"))
		switch res.Kind {
		case KindOutput:
		case KindTransient:
			transient = res
		default:
			t.Fatalf("call %d: %+v", i, res)
		}
	}
	if !strings.Contains(transient.Reason, "before this call started") {
		t.Fatalf("never stopped, or stopped with %+v", transient)
	}
	if st, _ := h.Status("hoarder"); st.Runaways != 0 {
		t.Errorf("kept state counted as a runaway: %+v", st)
	}
	// the fresh isolate starts over
	if res := mustCall(t, h, "hoarder", "", text("x")); string(res.Output) != "1" {
		t.Errorf("after replacement: %+v", res)
	}
	if res := mustCall(t, h, "innocent", "", text("x")); string(res.Output) != "fine" {
		t.Errorf("innocent: %+v", res)
	}
}
