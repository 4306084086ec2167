package engine

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ductus/ductus/integration/ixstore"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"

	"github.com/ductus/ductus/adapters/sqlite"
	"github.com/ductus/ductus/integration/config"
	"github.com/ductus/ductus/internal/testutil"
	"github.com/ductus/ductus/runtime/host"
)

// project writes files (path -> content) under a temp dir and loads it.
func project(t *testing.T, files map[string]string) *config.Project {
	t.Helper()
	dir := t.TempDir()
	for name, body := range files {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	proj, err := config.Load(dir, config.LoadOptions{})
	if err != nil {
		t.Fatalf("load the project: %v", err)
	}
	return proj
}

func testBackend(t *testing.T) ixstore.Backend {
	be, err := sqlite.Open(context.Background(), sqlite.Config{Path: filepath.Join(t.TempDir(), "engine.db")})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { be.Close() })
	return be
}

// running starts an engine on proj and stops it at the end of the test.
func running(t *testing.T, proj *config.Project, be ixstore.Backend) *Engine {
	t.Helper()
	return runningWith(t, proj, be, Options{})
}

// runningWith is running with options (the backend, a short poll interval
// and, unless the test brings its own to read, the logger are filled in).
func runningWith(t *testing.T, proj *config.Project, be ixstore.Backend, opts Options) *Engine {
	t.Helper()
	e, _ := startWith(t, proj, be, opts)
	return e
}

// startWith is runningWith that also returns the stop, for a test that
// stops the engine early (a restart); the stop runs once, at the latest
// when the test ends.
func startWith(t *testing.T, proj *config.Project, be ixstore.Backend, opts Options) (*Engine, func()) {
	t.Helper()
	opts.Backend = be
	if opts.Logger == nil {
		opts.Logger = testutil.Logger()
	}
	tune := opts.Host
	opts.Host = func(c *host.Config) {
		c.PollInterval = 20 * time.Millisecond
		if tune != nil {
			tune(c)
		}
	}
	e, err := New(context.Background(), proj, opts)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- e.Run(ctx) }()
	var once sync.Once
	stop := func() {
		once.Do(func() {
			cancel()
			if err := <-done; err != nil {
				t.Errorf("engine run: %v", err)
			}
			e.Close()
		})
	}
	t.Cleanup(stop)
	testutil.Eventually(t, 10*time.Second, "the engine to listen", func() bool { return e.started() })
	return e, stop
}

func (e *Engine) started() bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.listening
}

// receiver is a real HTTP server recording what arrives; it answers fail
// (e.g. 503) while set.
type receiver struct {
	srv  *httptest.Server
	mu   sync.Mutex
	got  [][]byte
	hdrs []http.Header
	fail atomic.Int32
}

func newReceiver(t *testing.T) *receiver {
	r := &receiver{}
	r.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		if code := r.fail.Load(); code != 0 {
			w.WriteHeader(int(code))
			return
		}
		b, _ := io.ReadAll(req.Body)
		r.mu.Lock()
		r.got = append(r.got, b)
		r.hdrs = append(r.hdrs, req.Header.Clone())
		r.mu.Unlock()
		w.WriteHeader(http.StatusOK)
	}))
	t.Cleanup(r.srv.Close)
	return r
}

func (r *receiver) bodies() [][]byte {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([][]byte(nil), r.got...)
}

func (r *receiver) count() int { return len(r.bodies()) }

func decodeAll[T any](t *testing.T, bodies [][]byte) []T {
	out := make([]T, len(bodies))
	for i, b := range bodies {
		if err := json.Unmarshal(b, &out[i]); err != nil {
			t.Fatalf("body %q: %v", b, err)
		}
	}
	return out
}

// counterValue reads a Prometheus counter.
func counterValue(t *testing.T, c prometheus.Counter) float64 {
	t.Helper()
	var m dto.Metric
	if err := c.Write(&m); err != nil {
		t.Fatal(err)
	}
	return m.GetCounter().GetValue()
}

// hostEffect is the effect context a retried effect would get.
func hostEffect() host.EffectContext { return host.EffectContext{ID: "test-effect", Attempt: 2} }
