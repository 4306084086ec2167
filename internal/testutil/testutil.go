// Package testutil holds the few helpers every test suite of the module
// needs alike (the runtime's conformance and scenario suites, the host's
// tests, the engine's and the binary's), so they wait and log one way.
package testutil

import (
	"context"
	"log/slog"
	"os"
	"testing"
	"time"
)

// contextTimeout bounds a test's context: generous, so a loaded machine
// never trips it, and only there so a hung call ends the test with a
// context error rather than at go test's -timeout.
const contextTimeout = 2 * time.Minute

// Context returns a context for t's calls, cancelled when t ends or when
// contextTimeout passes.
func Context(t testing.TB) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), contextTimeout)
	t.Cleanup(cancel)
	return ctx
}

// Eventually polls cond every 10 ms until it holds, failing the test when
// d passes first. It bounds a wait for something that must happen; it is
// never a measure of speed.
func Eventually(t testing.TB, d time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %s waiting for %s", d, what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// Logger is a debug logger on stderr when DUCTUS_TEST_LOG is set, else one
// that discards: tests are quiet unless someone is looking.
func Logger() *slog.Logger {
	if os.Getenv("DUCTUS_TEST_LOG") != "" {
		return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug}))
	}
	return slog.New(slog.DiscardHandler)
}
