package engine

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/ductus/ductus/integration/ixstore"

	"github.com/ductus/ductus/adapters/mysql"
	"github.com/ductus/ductus/adapters/postgres"
	"github.com/ductus/ductus/adapters/sqlite"
	"github.com/ductus/ductus/internal/testdb"
	"github.com/ductus/ductus/internal/testutil"
	"github.com/ductus/ductus/internal/testutil/dbtest"
)

// The engine's end-to-end tests run on every backend this machine has:
// SQLite always, PostgreSQL and MySQL/MariaDB when reachable
// (DUCTUS_TEST_POSTGRES, DUCTUS_TEST_MYSQL, else the local servers; "off"
// skips one). With CI=true an unreachable server fails.

func forEachBackend(t *testing.T, fn func(t *testing.T, be ixstore.Backend)) {
	forEachBackendSpec(t, func(t *testing.T, spec backendSpec) { fn(t, spec.openT(t)) })
}

// forEachBackendSpec runs fn once per backend with where its database is
// rather than an open backend: for tests that open it in other processes.
func forEachBackendSpec(t *testing.T, fn func(t *testing.T, spec backendSpec)) {
	t.Run("sqlite", func(t *testing.T) { fn(t, backendSpec{Driver: "sqlite", DSN: filepath.Join(t.TempDir(), "engine.db")}) })
	t.Run("postgres", func(t *testing.T) { fn(t, postgresSpec(t)) })
	t.Run("mysql", func(t *testing.T) { fn(t, mysqlSpec(t)) })
}

// backendSpec says where a test database is: a SQLite file, a PostgreSQL
// schema in the run's database, or a MySQL database of its own.
type backendSpec struct {
	Driver string `json:"driver"`
	DSN    string `json:"dsn"`
	Schema string `json:"schema,omitempty"`
}

func (s backendSpec) open(ctx context.Context) (ixstore.Backend, error) {
	switch s.Driver {
	case "sqlite":
		return sqlite.Open(ctx, sqlite.Config{Path: s.DSN})
	case "postgres":
		return postgres.Open(ctx, postgres.Config{DSN: s.DSN, Schema: s.Schema})
	case "mysql":
		return mysql.Open(ctx, mysql.Config{DSN: s.DSN, Logger: testutil.Logger()})
	}
	return nil, fmt.Errorf("unknown test backend %q", s.Driver)
}

// openT opens the backend, closed when the test ends.
func (s backendSpec) openT(t *testing.T) ixstore.Backend {
	t.Helper()
	be, err := s.open(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { be.Close() })
	return be
}

// pg is the run's PostgreSQL database, made on first use (each test gets
// a schema of its own in it) and dropped by TestMain.
var pg struct {
	once sync.Once
	db   *testdb.Database
	err  error
}

// postgresSpec names a fresh schema in the run's database (created on
// first open).
func postgresSpec(t *testing.T) backendSpec {
	t.Helper()
	srv := dbtest.Postgres(t)
	pg.once.Do(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		pg.db, pg.err = srv.Create(ctx, "ductus_engine_test_")
	})
	if pg.err != nil {
		t.Fatal(pg.err)
	}
	return backendSpec{Driver: "postgres", DSN: pg.db.DSN, Schema: "t_" + randHex(6)}
}

// mysqlSpec creates a fresh database (MySQL has no schemas inside one),
// dropped when the test ends (its cleanup is registered before any
// openT's close, so it runs after it).
func mysqlSpec(t *testing.T) backendSpec {
	t.Helper()
	db := dbtest.Database(t, dbtest.MySQL(t), "ductus_engine_test_")
	return backendSpec{Driver: "mysql", DSN: db.DSN}
}

// dropTestDatabases removes the run's databases (called by TestMain).
func dropTestDatabases() {
	if pg.db == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := pg.db.Drop(ctx); err != nil {
		fmt.Fprintln(os.Stderr, err)
	}
}

func randHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}
