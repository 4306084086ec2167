package engine

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"sync"
	"time"

	"github.com/ductus/ductus/integration/access"
	"github.com/ductus/ductus/integration/api"
	"github.com/ductus/ductus/integration/console"
)

// serveAPI binds the operator API on api.listen (nothing when it is off)
// and serves it until ctx ends. A port that cannot be bound fails Run
// before any source accepts a message; a listener that fails later is
// sent to errc, which stops the engine like a failed source.
func (e *Engine) serveAPI(ctx context.Context, wg *sync.WaitGroup, errc chan<- error) error {
	addr := e.proj.Engine.API.Listen
	if addr == "" {
		return nil
	}
	streamsDone := make(chan struct{})
	h, err := api.New(api.Config{Engine: e, Access: e.access, Logger: e.log, StreamsDone: streamsDone, Console: console.Handler()})
	if err != nil {
		return err
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return fmt.Errorf("engine: the operator API cannot listen on %s (api.listen): %w", addr, err)
	}
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second, ReadTimeout: time.Minute, IdleTimeout: 2 * time.Minute}
	// Shutdown waits for requests to finish, and an event stream never
	// does: end the streams when it starts.
	srv.RegisterOnShutdown(func() { close(streamsDone) })
	e.mu.Lock()
	e.apiAddr = ln.Addr().String()
	e.mu.Unlock()
	e.log.Info("operator API listening", "addr", ln.Addr().String())
	wg.Add(2)
	go func() {
		defer wg.Done()
		if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			errc <- fmt.Errorf("operator API: %w", err)
		}
	}()
	go func() {
		defer wg.Done()
		<-ctx.Done()
		sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = srv.Shutdown(sctx)
	}()
	return nil
}

// APIAddr is the address the operator API listens on once Run has bound
// it ("" before, or when api.listen is off).
func (e *Engine) APIAddr() string {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.apiAddr
}

// Access is the engine's tokens and audit log (the CLI's token commands
// use it without the API).
func (e *Engine) Access() *access.Store { return e.access }
