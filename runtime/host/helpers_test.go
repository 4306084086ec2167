package host

import (
	"context"
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/ductus/ductus/actor"
	"github.com/ductus/ductus/adapters/sqlite"
	"github.com/ductus/ductus/internal/testutil"
	"github.com/ductus/ductus/runtime/store"
)

// The host's own tests run on SQLite: they exercise the runtime's
// scheduling (cache, passes, shutdown, metrics), which is the same over
// every backend; behaviour that depends on the backend is in scenariotest.

func openSQLite(t *testing.T) store.Backend {
	t.Helper()
	b, err := sqlite.Open(context.Background(), sqlite.Config{Path: filepath.Join(t.TempDir(), "host.db")})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Close() })
	return b
}

// startHost starts a host over be; mod adjusts the config.
func startHost(t *testing.T, be store.Backend, reg *actor.Registry, mod ...func(*Config)) *Host {
	t.Helper()
	cfg := Config{Backend: be, Registry: reg, Workers: 2, LeaseTTL: 3 * time.Second, PollInterval: 20 * time.Millisecond,
		Retry: RetryPolicy{MaxAttempts: 3, Base: 10 * time.Millisecond, Max: 50 * time.Millisecond}}
	if os.Getenv("DUCTUS_TEST_LOG") != "" {
		cfg.Logger = slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug}))
	}
	for _, m := range mod {
		m(&cfg)
	}
	h, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := h.Start(testutil.Context(t)); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = h.Shutdown(context.Background()) })
	return h
}

// tally is the test actors' state.
type tally struct {
	N int `json:"n"`
}

// testHooks make a test type's handlers block or fail on demand.
type testHooks struct {
	mu      sync.Mutex
	failing int           // failures left for "flaky"
	gate    chan struct{} // "wait" blocks until closed (nil: never blocks)
	entered chan struct{} // "wait" signals its start
	work    time.Duration // "slow" sleeps this long
	sawErr  error         // the turn context's error "wait" saw
}

const tallyType = "hosttest.tally"

func tallyDef(hk *testHooks) *actor.Type[tally] {
	return &actor.Type[tally]{Name: tallyType, Messages: map[string]actor.Handler[tally]{
		"add": actor.Message(func(c *actor.Context, s *tally, n int) (int, error) { s.N += n; return s.N, nil }),
		"slow": actor.Message(func(c *actor.Context, s *tally, n int) (int, error) {
			time.Sleep(hk.work)
			s.N += n
			return s.N, nil
		}),
		"flaky": actor.Message(func(c *actor.Context, s *tally, _ struct{}) (any, error) {
			hk.mu.Lock()
			defer hk.mu.Unlock()
			if hk.failing > 0 {
				hk.failing--
				return nil, errors.New("not yet")
			}
			return nil, nil
		}),
		"poison": actor.Message(func(c *actor.Context, s *tally, _ struct{}) (any, error) {
			return nil, actor.Permanent(errors.New("poison"))
		}),
		"wait": actor.Message(func(c *actor.Context, s *tally, _ struct{}) (any, error) {
			hk.mu.Lock()
			gate, entered := hk.gate, hk.entered
			hk.mu.Unlock()
			if entered != nil {
				entered <- struct{}{}
			}
			select {
			case <-gate:
				return nil, nil
			case <-c.Done():
				hk.mu.Lock()
				hk.sawErr = c.Err()
				hk.mu.Unlock()
				return nil, c.Err()
			}
		}),
		"send": actor.Message(func(c *actor.Context, s *tally, to string) (any, error) {
			return nil, c.SendTo(tref(to), "add", 1)
		}),
	}}
}

func tallyRegistry(hk *testHooks) *actor.Registry {
	reg := actor.NewRegistry()
	reg.MustRegister(tallyDef(hk))
	return reg
}

func tref(id string) actor.Ref { return actor.Ref{Type: tallyType, ID: id} }

func actorInfo(t *testing.T, be store.Backend, r actor.Ref) *store.ActorInfo {
	t.Helper()
	info, err := be.ActorGet(testutil.Context(t), r)
	if err != nil {
		t.Fatalf("actor %s: %v", r, err)
	}
	return info
}

func messageState(t *testing.T, be store.Backend, id actor.MessageID) store.MessageState {
	t.Helper()
	st, err := be.MessageStatus(testutil.Context(t), []int64{int64(id)})
	if err != nil {
		t.Fatal(err)
	}
	return st[0].State
}

// metricValue sums a metric family's samples (counters, gauges, and a
// histogram's sample count) as h's private registry exports them.
func metricValue(t *testing.T, h *Host, name string) float64 {
	t.Helper()
	fams, err := h.Metrics().Gather()
	if err != nil {
		t.Fatal(err)
	}
	total := 0.0
	for _, f := range fams {
		if f.GetName() != name {
			continue
		}
		for _, m := range f.GetMetric() {
			total += m.GetCounter().GetValue() + m.GetGauge().GetValue() + float64(m.GetHistogram().GetSampleCount())
		}
	}
	return total
}
