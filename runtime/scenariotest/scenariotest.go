// Package scenariotest is the runtime scenario suite: every behaviour of the
// runtime, driven through the public API (actor types, host.Host as the
// client, the operator calls), against a backend the caller supplies. Each
// adapter's tests run it unchanged, so a behaviour proven on SQLite is
// proven again on Postgres and MySQL rather than assumed.
package scenariotest

import (
	"context"
	"fmt"
	"sort"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ductus/ductus/internal/testutil"

	"github.com/ductus/ductus/actor"
	"github.com/ductus/ductus/runtime/host"
	"github.com/ductus/ductus/runtime/store"
)

// Factory returns a fresh, empty backend; it registers its cleanup with t.
// A scenario that needs two hosts on one database calls it once and shares
// the backend (or opens a second one with Reopen when the adapter gives one).
type Factory func(t *testing.T) store.Backend

// Run runs every scenario.
func Run(t *testing.T, newBackend Factory) {
	for _, name := range sortedNames() {
		fn := scenarios[name]
		t.Run(name, func(t *testing.T) { fn(t, newBackend(t)) })
	}
}

// RunConcurrent runs only the scenarios with concurrent writers (the MySQL
// deadlock hunt repeats them).
func RunConcurrent(t *testing.T, newBackend Factory) {
	for _, name := range sortedNames() {
		if concurrent[name] {
			fn := scenarios[name]
			t.Run(name, func(t *testing.T) { fn(t, newBackend(t)) })
		}
	}
}

var (
	scenarios  = map[string]func(*testing.T, store.Backend){}
	concurrent = map[string]bool{}
)

func scenario(name string, fn func(*testing.T, store.Backend)) { scenarios[name] = fn }

func sortedNames() []string {
	out := make([]string, 0, len(scenarios))
	for n := range scenarios {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

// newHost starts a host with test-friendly timings; mod adjusts the config.
func newHost(t *testing.T, be store.Backend, reg *actor.Registry, mod ...func(*host.Config)) *host.Host {
	t.Helper()
	cfg := host.Config{
		Backend: be, Registry: reg, Workers: 4, LeaseTTL: 3 * time.Second, PollInterval: 20 * time.Millisecond,
		Retry:  host.RetryPolicy{MaxAttempts: 3, Base: 20 * time.Millisecond, Max: 100 * time.Millisecond},
		Logger: testutil.Logger(),
	}
	for _, m := range mod {
		m(&cfg)
	}
	h, err := host.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := h.Start(testutil.Context(t)); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = h.Shutdown(context.Background()) })
	return h
}

// ledger is the test actors' state: a counter plus the sequence of every
// message applied, so order and exactly-once-per-commit can be checked.
type ledger struct {
	N       int     `json:"n"`
	Applied []int64 `json:"applied,omitempty"`
	Status  string  `json:"status,omitempty"`
}

type addArgs struct {
	N   int   `json:"n"`
	Tag int64 `json:"tag,omitempty"`
}

// hooks let a scenario make handlers misbehave.
type hooks struct {
	mu       sync.Mutex
	failures map[int64]int // tag -> attempts left to fail
	calls    atomic.Int64
}

func (h *hooks) failTag(tag int64, times int) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.failures == nil {
		h.failures = map[int64]int{}
	}
	h.failures[tag] = times
}

func (h *hooks) shouldFail(tag int64) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.failures[tag] > 0 {
		h.failures[tag]--
		return true
	}
	return false
}

const ledgerType = "scenario.ledger"

// ledgerDef is the workhorse type: add (records the tag), get (query),
// status (a query that illegally mutates), poison (always fails), panic.
func ledgerDef(hk *hooks) *actor.Type[ledger] {
	return &actor.Type[ledger]{
		Name: ledgerType,
		Messages: map[string]actor.Handler[ledger]{
			"add": actor.Message(func(c *actor.Context, s *ledger, a addArgs) (int, error) {
				hk.calls.Add(1)
				if a.Tag != 0 && hk.shouldFail(a.Tag) {
					s.N += 1000 // must be rolled back
					return 0, fmt.Errorf("tag %d told to fail", a.Tag)
				}
				s.N += a.N
				if a.Tag != 0 {
					s.Applied = append(s.Applied, a.Tag)
				}
				return s.N, nil
			}),
			"get": actor.Query(func(c *actor.Context, s *ledger, _ struct{}) (ledger, error) { return *s, nil }),
			"mutating_query": actor.Query(func(c *actor.Context, s *ledger, _ struct{}) (int, error) {
				s.N++
				return s.N, nil
			}),
			"set_status": actor.Message(func(c *actor.Context, s *ledger, st string) (string, error) {
				s.Status = st
				return st, nil
			}),
			"poison": actor.Message(func(c *actor.Context, s *ledger, _ struct{}) (any, error) {
				return nil, fmt.Errorf("poison pill")
			}),
			"panic": actor.Message(func(c *actor.Context, s *ledger, _ struct{}) (any, error) {
				panic("handler panicked on purpose")
			}),
		},
		Observables: map[string]func(*ledger) any{
			"count":  func(s *ledger) any { return s.N },
			"status": func(s *ledger) any { return s.Status },
		},
	}
}

func ledgerRegistry(hk *hooks, more ...actor.Definition) *actor.Registry {
	reg := actor.NewRegistry()
	reg.MustRegister(ledgerDef(hk))
	reg.MustRegister(more...)
	return reg
}

func lref(id string) actor.Ref { return actor.Ref{Type: ledgerType, ID: id} }

func getLedger(t *testing.T, c actor.Client, r actor.Ref) ledger {
	t.Helper()
	l, err := actor.AskAs[ledger](testutil.Context(t), c, r, "get", nil)
	if err != nil {
		t.Fatalf("ask get %s: %v", r, err)
	}
	return l
}
