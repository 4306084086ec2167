package mysql

import (
	"testing"

	"github.com/ductus/ductus/runtime/store"
	"github.com/ductus/ductus/runtime/wakeuptest"
)

// TestWakeups runs the cross-process wake-up suite on the signal table:
// processes with their own pools on one database, polling for work only
// every ten minutes, so each wake-up arrives at the signal poll's latency
// (Config.SignalPoll, 25 ms) or the test fails.
func TestWakeups(t *testing.T) {
	admin(t)
	wakeuptest.Run(t, func(t *testing.T) func(t *testing.T) store.Backend {
		dsn := newDatabase(t)
		return func(t *testing.T) store.Backend { return openBackend(t, Config{DSN: dsn}) }
	})
}
