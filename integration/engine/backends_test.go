package engine

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"net/url"
	"os"
	"sync"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/ductus/ductus/adapters/postgres"
	"github.com/ductus/ductus/runtime/store"
)

// The engine's end-to-end tests run on every backend this machine has:
// SQLite always, PostgreSQL and MySQL/MariaDB when reachable
// (DUCTUS_TEST_POSTGRES, DUCTUS_TEST_MYSQL, else the local servers; "off"
// skips one). With CI=true an unreachable server fails.

func forEachBackend(t *testing.T, fn func(t *testing.T, be store.Backend)) {
	t.Run("sqlite", func(t *testing.T) { fn(t, testBackend(t)) })
	t.Run("postgres", func(t *testing.T) { fn(t, postgresBackend(t)) })
	t.Run("mysql", func(t *testing.T) { fn(t, mysqlBackend(t)) })
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
func postgresBackend(t *testing.T) store.Backend {
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
	schema := "t_" + randHex(6)
	be, err := postgres.Open(context.Background(), postgres.Config{DSN: pg.dsn, Schema: schema})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { be.Close() })
	return be
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
