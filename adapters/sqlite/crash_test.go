package sqlite_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/ductus/ductus/adapters/sqlite"
	"github.com/ductus/ductus/runtime/crashtest"
	"github.com/ductus/ductus/runtime/store"
)

func openDSN(ctx context.Context, dsn string) (store.Backend, error) {
	return sqlite.Open(ctx, sqlite.Config{Path: dsn})
}

func TestMain(m *testing.M) { crashtest.Main(m, openDSN) }

// TestCrash runs the real-process crash test: 4 workers, 200 counters,
// 20,000 increments, SIGKILLs and pauses past the lease.
func TestCrash(t *testing.T) {
	if testing.Short() {
		t.Skip("the crash test runs in full mode only")
	}
	_ = os.Getenv
	crashtest.Run(t, crashtest.Config{DSN: filepath.Join(t.TempDir(), "crash.db"), Open: openDSN})
}

// TestCrashEffects SIGKILLs workers while their ordered effects post to an
// external record.
func TestCrashEffects(t *testing.T) {
	if testing.Short() {
		t.Skip("the crash test runs in full mode only")
	}
	crashtest.RunEffects(t, crashtest.Config{DSN: filepath.Join(t.TempDir(), "crash.db"), Open: openDSN})
}
