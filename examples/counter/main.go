// Command counter is the smallest program on the Ductus runtime: one actor
// type on the embedded SQLite backend, told and asked from main. Run it with
// `go run ./examples/counter`.
package main

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"time"

	"github.com/ductus/ductus/actor"
	"github.com/ductus/ductus/adapters/sqlite"
	"github.com/ductus/ductus/runtime/host"
)

// Counter is the actor's state, stored as JSON.
type Counter struct {
	Total int `json:"total"`
}

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "counter:", err)
		os.Exit(1)
	}
}

func run() error {
	ctx := context.Background()
	dir, err := os.MkdirTemp("", "ductus-counter")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	be, err := sqlite.Open(ctx, sqlite.Config{Path: filepath.Join(dir, "counter.db")})
	if err != nil {
		return err
	}
	defer be.Close()

	reg := actor.NewRegistry()
	reg.MustRegister(&actor.Type[Counter]{
		Name: "counter",
		Messages: map[string]actor.Handler[Counter]{
			"add": actor.Message(func(c *actor.Context, s *Counter, n int) (int, error) {
				s.Total += n
				return s.Total, nil
			}),
			"total": actor.Query(func(c *actor.Context, s *Counter, _ struct{}) (int, error) { return s.Total, nil }),
		},
	})
	h, err := host.New(host.Config{Backend: be, Registry: reg, Logger: slog.New(slog.NewTextHandler(os.Stderr, nil))})
	if err != nil {
		return err
	}
	if err := h.Start(ctx); err != nil {
		return err
	}
	defer h.Shutdown(ctx)

	ref := actor.Ref{Type: "counter", ID: "visits"}
	start := time.Now()
	for i := 0; i < 1000; i++ {
		if _, err := h.Tell(ctx, ref, "add", 1); err != nil {
			return err
		}
	}
	total, err := actor.AskAs[int](ctx, h, ref, "total", nil)
	if err != nil {
		return err
	}
	fmt.Printf("told 1000 increments and asked the total in %v: %d\n", time.Since(start).Round(time.Millisecond), total)
	return nil
}
