package engine

import (
	"context"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ductus/ductus/integration/format"
	"github.com/ductus/ductus/integration/hl7"
	"github.com/ductus/ductus/integration/mllpnet"
	"github.com/ductus/ductus/runtime/host"
)

// request is one request a scriptedAPI received.
type request struct {
	Path   string
	Header http.Header
	Body   []byte
	Code   int // what it answered
	At     time.Time
}

// scriptedAPI is a real HTTP server whose answer to each request is
// decided by answer, given the body and how many times a request with the
// same Idempotency-Key came before (0 on the first).
type scriptedAPI struct {
	srv    *httptest.Server
	answer func(body []byte, seen int) int
	mu     sync.Mutex
	reqs   []request
	tries  map[string]int
}

func newScriptedAPI(t *testing.T, answer func(body []byte, seen int) int) *scriptedAPI {
	a := &scriptedAPI{answer: answer, tries: map[string]int{}}
	a.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		a.mu.Lock()
		key := r.Header.Get("Idempotency-Key")
		seen := a.tries[key]
		a.tries[key]++
		code := a.answer(b, seen)
		a.reqs = append(a.reqs, request{Path: r.URL.Path, Header: r.Header.Clone(), Body: b, Code: code, At: time.Now()})
		a.mu.Unlock()
		w.WriteHeader(code)
	}))
	t.Cleanup(a.srv.Close)
	return a
}

func (a *scriptedAPI) requests() []request {
	a.mu.Lock()
	defer a.mu.Unlock()
	return append([]request(nil), a.reqs...)
}

// accepted returns the bodies answered 2xx, in arrival order.
func (a *scriptedAPI) accepted() []request {
	var out []request
	for _, r := range a.requests() {
		if r.Code < 300 {
			out = append(out, r)
		}
	}
	return out
}

// emrStandIn is a real MLLP receiver that answers each message by its MRN
// (PID-3.1): decide returns "AA", "AE", "AR" or "" to never answer.
type emrStandIn struct {
	addr   string
	decide func(mrn string) string
	quit   chan struct{} // ends silent handlers
	mu     sync.Mutex
	got    []hl7Arrival // accepted (AA) messages, in arrival order

	inflight, maxInflight atomic.Int32 // messages being answered at once
}

type hl7Arrival struct{ MRN, ControlID string }

func newEMRStandIn(t *testing.T, decide func(mrn string) string) *emrStandIn {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := &emrStandIn{addr: ln.Addr().String(), decide: decide, quit: make(chan struct{})}
	srv, err := mllpnet.NewServer(mllpnet.HandlerFunc(func(ctx context.Context, _ mllpnet.ConnInfo, _ []byte, m *hl7.Message) []byte {
		mrn := m.Get("PID-3.1")
		n := s.inflight.Add(1)
		defer s.inflight.Add(-1)
		for {
			if old := s.maxInflight.Load(); n <= old || s.maxInflight.CompareAndSwap(old, n) {
				break
			}
		}
		code := s.decide(mrn)
		if code == "" {
			<-s.quit // silent until the test ends (the drain does not cancel handlers)
			return nil
		}
		if code == "AA" {
			s.mu.Lock()
			s.got = append(s.got, hl7Arrival{MRN: mrn, ControlID: m.ControlID()})
			s.mu.Unlock()
		}
		ack, err := hl7.BuildACK(m, code, "", hl7.ACKOptions{})
		if err != nil {
			return nil
		}
		return ack.Bytes()
	}), mllpnet.ServerOptions{})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { srv.Serve(ctx, ln); close(done) }()
	t.Cleanup(func() { close(s.quit); cancel(); <-done })
	return s
}

func (s *emrStandIn) arrivals() []hl7Arrival {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]hl7Arrival(nil), s.got...)
}

// keysOnOtherLanes returns n keys from candidates whose lanes (of
// partitions) differ from the lane of avoid.
func keysOnOtherLanes(t *testing.T, avoid string, partitions, n int, candidates func(i int) string) []string {
	t.Helper()
	var out []string
	for i := 0; len(out) < n && i < 10000; i++ {
		if k := candidates(i); format.Lane(k, partitions) != format.Lane(avoid, partitions) {
			out = append(out, k)
		}
	}
	if len(out) < n {
		t.Fatalf("found only %d keys off the lane of %q", len(out), avoid)
	}
	return out
}

// fastLaneRetry shortens the lane actors' retry back-off (a transient
// transform, a stopped interface) so tests wait less.
func fastLaneRetry(c *host.Config) {
	c.TypeRetry = map[string]host.RetryPolicy{
		laneType:     {MaxAttempts: 1 << 30, Base: 100 * time.Millisecond, Max: 400 * time.Millisecond},
		scheduleType: {MaxAttempts: 1 << 30, Base: 100 * time.Millisecond, Max: 400 * time.Millisecond},
	}
}
