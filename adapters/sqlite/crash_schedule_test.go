package sqlite_test

import (
	"path/filepath"
	"testing"

	"github.com/ductus/ductus/runtime/crashtest"
)

// TestCrashSchedulers runs two scheduler processes over one database (one
// SIGKILLed midway): one mailbox row per reminder occurrence.
func TestCrashSchedulers(t *testing.T) {
	if testing.Short() {
		t.Skip("the crash test runs in full mode only")
	}
	crashtest.RunSchedulers(t, crashtest.Config{DSN: filepath.Join(t.TempDir(), "crash.db"), Open: openDSN})
}

// TestCrashStaleEffects SIGKILLs the processes that staged delayed
// effects: the effects run in a later generation and their handler sees
// them as stale.
func TestCrashStaleEffects(t *testing.T) {
	if testing.Short() {
		t.Skip("the crash test runs in full mode only")
	}
	crashtest.RunStaleEffects(t, crashtest.Config{DSN: filepath.Join(t.TempDir(), "crash.db"), Open: openDSN})
}
