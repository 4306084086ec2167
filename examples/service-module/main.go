// Command service is a small service on the Ductus runtime, written as a
// user of the library writes one: accounts take deposits, notify the owner
// through an effect and post to a ledger actor; main tells a batch of
// deposits, waits until everything is done and prints the balances.
//
//	go run . -db sqlite:/tmp/bank.db
//	go run . -db postgres://postgres@127.0.0.1:5432/postgres?sslmode=disable
//	go run . -db 'mysql://root@tcp(127.0.0.1:3306)/bank'
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"sync/atomic"
	"time"

	"github.com/ductus/ductus/actor"
	"github.com/ductus/ductus/adapters/dburl"
	"github.com/ductus/ductus/runtime/host"
)

// Account is an account's state.
type Account struct {
	Balance int `json:"balance"`
}

// registry defines the service's actor types.
func registry() *actor.Registry {
	reg := actor.NewRegistry()
	reg.MustRegister(&actor.Type[Account]{
		Name: "account",
		Messages: map[string]actor.Handler[Account]{
			"deposit": actor.Message(func(c *actor.Context, s *Account, amount int) (int, error) {
				if amount <= 0 {
					return 0, actor.Permanent(fmt.Errorf("deposit of %d: want a positive amount", amount))
				}
				s.Balance += amount
				if err := c.Emit("notify", map[string]any{"account": c.Ref().ID, "amount": amount}); err != nil {
					return 0, err
				}
				return s.Balance, c.SendTo(actor.Ref{Type: "ledger", ID: "main"}, "post", amount)
			}),
			"balance": actor.Query(func(c *actor.Context, s *Account, _ struct{}) (int, error) { return s.Balance, nil }),
		},
	})
	reg.MustRegister(&actor.Type[Account]{
		Name: "ledger",
		Messages: map[string]actor.Handler[Account]{
			"post": actor.Message(func(c *actor.Context, s *Account, amount int) (int, error) {
				s.Balance += amount
				return s.Balance, nil
			}),
			"balance": actor.Query(func(c *actor.Context, s *Account, _ struct{}) (int, error) { return s.Balance, nil }),
		},
	})
	return reg
}

func main() {
	db := flag.String("db", "", "database URL (default: a SQLite file in a temporary folder)")
	flag.Parse()
	if err := run(context.Background(), *db, os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "service:", err)
		os.Exit(1)
	}
}

// run opens the database, serves the actors, tells 40 deposits to four
// accounts, waits until nothing is left to run and prints the balances.
func run(ctx context.Context, dbURL string, out io.Writer) error {
	if dbURL == "" {
		dir, err := os.MkdirTemp("", "ductus-service")
		if err != nil {
			return err
		}
		defer os.RemoveAll(dir)
		dbURL = "sqlite:" + filepath.Join(dir, "service.db")
	}
	log := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	be, err := dburl.Open(ctx, dbURL, dburl.Options{Logger: log})
	if err != nil {
		return err
	}
	// Deferred first, so it runs last: Shutdown does not close the backend.
	defer be.Close()

	var notified atomic.Int64
	h, err := host.New(host.Config{
		Backend:  be,
		Registry: registry(),
		Logger:   log,
		Effects: map[string]host.Effect{
			"notify": {Handler: func(ctx context.Context, ec host.EffectContext, args json.RawMessage) (any, error) {
				notified.Add(1) // a real one would send ec.ID as the idempotency key
				return nil, nil
			}},
		},
	})
	if err != nil {
		return err
	}
	if err := h.Start(ctx); err != nil {
		return err
	}
	defer func() {
		sctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if err := h.Shutdown(sctx); err != nil {
			fmt.Fprintln(os.Stderr, "service: shutdown:", err)
		}
	}()

	accounts := []string{"ann", "bob", "cat", "dan"}
	var batch []actor.Envelope
	for i := range 40 {
		batch = append(batch, actor.Envelope{Ref: actor.Ref{Type: "account", ID: accounts[i%4]}, Message: "deposit", Args: i + 1})
	}
	if _, err := h.TellBatch(ctx, batch); err != nil {
		return err
	}
	// Bad input is refused before anything is written.
	if _, err := h.Tell(ctx, actor.Ref{Type: "account", ID: "ann"}, "withdraw", 5); !errors.Is(err, actor.ErrUnknownMessage) {
		return fmt.Errorf("an unknown message was not refused: %v", err)
	}
	if err := waitIdle(ctx, h, 60*time.Second); err != nil {
		return err
	}
	for _, id := range accounts {
		b, err := actor.AskAs[int](ctx, h, actor.Ref{Type: "account", ID: id}, "balance", nil)
		if err != nil {
			return err
		}
		fmt.Fprintf(out, "%s %d\n", id, b)
	}
	total, err := actor.AskAs[int](ctx, h, actor.Ref{Type: "ledger", ID: "main"}, "balance", nil)
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "ledger %d, notifications %d\n", total, notified.Load())
	return nil
}

// waitIdle waits until no message, effect or send is left to run.
func waitIdle(ctx context.Context, h *host.Host, within time.Duration) error {
	deadline := time.Now().Add(within)
	for {
		n, err := h.Backlog(ctx, host.BacklogQuery{})
		if err != nil {
			return err
		}
		if n.Idle() {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("still busy after %s: %+v", within, n)
		}
		time.Sleep(10 * time.Millisecond)
	}
}
