// Command cart is a small web shop on the Ductus runtime and its realtime
// package: a cart actor per cart (add item, remove item, checkout, whose
// charge is an idempotent effect), HTTP handlers that Tell and Ask it, and
// a page whose item count and total update live in every open tab. It runs
// on the embedded SQLite backend:
//
//	go run ./examples/cart [-addr 127.0.0.1:8080] [-db path]
//
// and prints its address.
package main

import (
	"context"
	"crypto/rand"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"
	"time"

	"github.com/ductus/ductus/actor"
	"github.com/ductus/ductus/adapters/sqlite"
	"github.com/ductus/ductus/realtime"
	"github.com/ductus/ductus/runtime/host"
)

func main() {
	addr := flag.String("addr", "127.0.0.1:8080", "listen address (loopback by default; port 0 picks a free one)")
	db := flag.String("db", filepath.Join(os.TempDir(), "ductus-cart", "cart.db"), "SQLite database file (kept across restarts)")
	flag.Parse()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, *addr, *db); err != nil {
		fmt.Fprintln(os.Stderr, "cart:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, addr, dbPath string) error {
	log := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	if err := os.MkdirAll(filepath.Dir(dbPath), 0o755); err != nil {
		return err
	}
	be, err := sqlite.Open(ctx, sqlite.Config{Path: dbPath})
	if err != nil {
		return err
	}
	defer be.Close()
	reg := actor.NewRegistry()
	reg.MustRegister(cartType())
	pay := &payments{charges: map[string]string{}}
	h, err := host.New(host.Config{Backend: be, Registry: reg, Logger: log,
		Effects: map[string]host.Effect{"charge": {Handler: pay.charge}},
		// The demo has no accounts: every visitor may watch any cart. A
		// real shop checks the session's user against the cart here.
		Policies: actor.Policies{Subscription: func(ctx context.Context, req actor.Request) error { return nil }},
	})
	if err != nil {
		return err
	}
	if err := h.Start(ctx); err != nil {
		return err
	}
	defer h.Shutdown(context.Background())

	// A fresh signing key per run: pages fetch a new token when they
	// reconnect, so tokens need not outlive the process.
	key := make([]byte, 32)
	_, _ = rand.Read(key)
	keys := realtime.Keyring{Current: "k1", Keys: map[string][]byte{"k1": key}}
	rt, err := realtime.New(ctx, realtime.Config{Host: h, Keys: keys, Logger: log})
	if err != nil {
		return err
	}
	defer rt.Close()

	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return err
	}
	srv := &http.Server{Handler: newShop(h, keys, rt).routes(), ReadHeaderTimeout: 10 * time.Second}
	fmt.Printf("cart: listening on http://%s/\n", ln.Addr())
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	_ = rt.Close() // WebSockets are hijacked: Shutdown does not close them
	sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := srv.Shutdown(sctx); err != nil && !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}
