package mysql

import (
	"context"
	"database/sql"
	"io"
	"log/slog"
	"testing"

	"github.com/ductus/ductus/internal/testutil"
	"github.com/ductus/ductus/internal/testutil/dbtest"
	"github.com/ductus/ductus/runtime/store"
	"github.com/ductus/ductus/runtime/store/storetest"
)

// The tests run against a real server: DUCTUS_TEST_MYSQL (a DSN without a
// database, e.g. "root@tcp(127.0.0.1:3306)/"), else the machine's local
// MariaDB. Every run creates its own databases (ductus_test_<random>) and
// drops them at the end.

// admin returns a connection pool to the server (no database), or skips
// the test with one line saying how to enable it (fails under CI=true).
func admin(t testing.TB) *sql.DB {
	t.Helper()
	return dbtest.MySQL(t).Admin()
}

// newDatabase creates an empty database, dropped when t ends, and returns
// its DSN.
func newDatabase(t testing.TB) string {
	t.Helper()
	return dbtest.Database(t, dbtest.MySQL(t), "ductus_test_").DSN
}

var quiet = slog.New(slog.NewTextHandler(io.Discard, nil))

// openBackend opens a backend on a fresh database.
func openBackend(t testing.TB, cfg Config) *Backend {
	t.Helper()
	if cfg.DSN == "" {
		cfg.DSN = newDatabase(t)
	}
	if cfg.Logger == nil {
		cfg.Logger = quiet
	}
	b, err := Open(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Close() })
	return b
}

func TestConformance(t *testing.T) {
	admin(t)
	storetest.Run(t, func(t *testing.T) store.Backend { return openBackend(t, Config{}) })
}

// A migration file interrupted after some of its statements ran (DDL
// commits each one on MySQL) is run again whole at the next start: every
// engine migration must apply again over its own result. Forgetting every
// recorded file and migrating again re-runs them all.
func TestEngineMigrationsRunAgain(t *testing.T) {
	ctx := testutil.Context(t)
	b := openBackend(t, Config{})
	ix := b.EngineStore()
	if err := ix.SchemaMigrate(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := b.db.ExecContext(ctx, "DELETE FROM "+engineMigrations); err != nil {
		t.Fatal(err)
	}
	if err := ix.SchemaMigrate(ctx); err != nil {
		t.Fatalf("the engine's migrations run again: %v", err)
	}
	var gone int
	if err := b.db.QueryRowContext(ctx, `SELECT COUNT(*) FROM information_schema.STATISTICS
		WHERE TABLE_SCHEMA = DATABASE() AND INDEX_NAME = 'ductus_ix_messages_interface'`).Scan(&gone); err != nil {
		t.Fatal(err)
	}
	if gone != 0 {
		t.Error("ductus_ix_messages_interface is back after the migrations ran again")
	}
}
