package engine

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"github.com/ductus/ductus/integration/ixstore"
	"github.com/ductus/ductus/internal/testutil"
	"net/url"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/ductus/ductus/adapters/mysql"
	"github.com/ductus/ductus/adapters/postgres"
	"github.com/ductus/ductus/adapters/sqlite"
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

var pg struct {
	once  sync.Once
	admin string
	db    string // the run's database, dropped by TestMain
	dsn   string
	err   error
}

func pgAdminDSN() string {
	if v := os.Getenv("DUCTUS_TEST_POSTGRES"); v != "" {
		return v
	}
	return "postgres://postgres@127.0.0.1:5432/postgres?sslmode=disable"
}

// postgresBackend opens a fresh schema in the run's database.
func postgresBackend(t *testing.T) ixstore.Backend { return postgresSpec(t).openT(t) }

// postgresSpec names a fresh schema in the run's database (created on
// first open).
func postgresSpec(t *testing.T) backendSpec {
	t.Helper()
	if pgAdminDSN() == "off" {
		t.Skip("DUCTUS_TEST_POSTGRES=off")
	}
	pg.once.Do(func() {
		pg.admin = pgAdminDSN()
		ctx := context.Background()
		conn, err := pgx.Connect(ctx, pg.admin)
		if err != nil {
			pg.err = err
			return
		}
		defer conn.Close(ctx)
		pg.db = "ductus_engine_test_" + randHex(6)
		if _, err := conn.Exec(ctx, "CREATE DATABASE "+pg.db); err != nil {
			pg.err = err
			return
		}
		u, err := url.Parse(pg.admin)
		if err != nil {
			pg.err = err
			return
		}
		u.Path = "/" + pg.db
		pg.dsn = u.String()
	})
	if pg.err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("PostgreSQL is not reachable (%v); CI requires it", pg.err)
		}
		t.Skipf("PostgreSQL is not reachable (%v): set DUCTUS_TEST_POSTGRES to run the engine on it", pg.err)
	}
	return backendSpec{Driver: "postgres", DSN: pg.dsn, Schema: "t_" + randHex(6)}
}

// dropTestDatabases removes the run's databases (called by TestMain).
func dropTestDatabases() {
	if pg.db == "" {
		return
	}
	ctx := context.Background()
	if conn, err := pgx.Connect(ctx, pg.admin); err == nil {
		_, _ = conn.Exec(ctx, "DROP DATABASE IF EXISTS "+pg.db+" WITH (FORCE)")
		conn.Close(ctx)
	}
}

func randHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}
