package host_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/ductus/ductus/actor"
	"github.com/ductus/ductus/adapters/sqlite"
	"github.com/ductus/ductus/runtime/host"
)

// startHost is what a service's main does, on a temporary SQLite file:
// open the backend, start a host, and on the way out shut the host down
// *then* close the backend (Shutdown does not close it). cfg's Backend is
// filled in; the examples shorten the poll and retry timings.
func startHost(cfg host.Config) (h *host.Host, stop func()) {
	ctx := context.Background()
	dir, err := os.MkdirTemp("", "ductus-example")
	if err != nil {
		panic(err)
	}
	be, err := sqlite.Open(ctx, sqlite.Config{Path: filepath.Join(dir, "app.db")})
	if err != nil {
		panic(err)
	}
	cfg.Backend = be
	cfg.PollInterval = 10 * time.Millisecond
	if cfg.Retry == (host.RetryPolicy{}) {
		cfg.Retry = host.RetryPolicy{MaxAttempts: 3, Base: 10 * time.Millisecond, Max: 50 * time.Millisecond}
	}
	if h, err = host.New(cfg); err != nil {
		panic(err)
	}
	if err := h.Start(ctx); err != nil {
		panic(err)
	}
	return h, func() {
		if err := h.Shutdown(ctx); err != nil {
			fmt.Println("shutdown:", err)
		}
		be.Close()
		os.RemoveAll(dir)
	}
}

// waitIdle waits until nothing is left to run in the scope (what hosttest.WaitIdle
// does for tests).
func waitIdle(h *host.Host, q host.BacklogQuery) {
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		if n, err := h.Backlog(context.Background(), q); err == nil && n.Idle() {
			return
		}
		time.Sleep(5 * time.Millisecond)
	}
	fmt.Println("not idle after 30s")
}

// Counter is the state of the examples' counter type.
type Counter struct {
	Total int `json:"total"`
}

// counterType adds to a total and answers it.
func counterType() *actor.Type[Counter] {
	return &actor.Type[Counter]{
		Name: "counter",
		Messages: map[string]actor.Handler[Counter]{
			"add": actor.Message(func(c *actor.Context, s *Counter, n int) (int, error) {
				s.Total += n
				return s.Total, nil
			}),
			"total": actor.Query(func(c *actor.Context, s *Counter, _ struct{}) (int, error) { return s.Total, nil }),
		},
	}
}
