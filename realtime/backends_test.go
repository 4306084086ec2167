package realtime

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	gomysql "github.com/go-sql-driver/mysql"
	"github.com/jackc/pgx/v5"

	"github.com/ductus/ductus/adapters/mysql"
	"github.com/ductus/ductus/adapters/postgres"
	"github.com/ductus/ductus/adapters/sqlite"
	"github.com/ductus/ductus/internal/testutil"
	"github.com/ductus/ductus/runtime/store"
)

// The protocol tests run on every backend this machine has: SQLite always,
// PostgreSQL and MySQL/MariaDB when reachable (DUCTUS_TEST_POSTGRES,
// DUCTUS_TEST_MYSQL, else the local servers; "off" skips one). With
// CI=true an unreachable server fails.

// dbSpec says where a test database is, so another process can open it.
type dbSpec struct {
	Driver string `json:"driver"`
	DSN    string `json:"dsn"`
	Schema string `json:"schema,omitempty"`
}

func (s dbSpec) open(ctx context.Context) (store.Backend, error) {
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

func (s dbSpec) openT(t *testing.T) store.Backend {
	t.Helper()
	be, err := s.open(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { be.Close() })
	return be
}

// forEachBackend runs fn on a fresh database of each backend.
func forEachBackend(t *testing.T, fn func(t *testing.T, spec dbSpec)) {
	t.Run("sqlite", func(t *testing.T) { fn(t, dbSpec{Driver: "sqlite", DSN: filepath.Join(t.TempDir(), "rt.db")}) })
	t.Run("postgres", func(t *testing.T) { fn(t, postgresSpec(t)) })
	t.Run("mysql", func(t *testing.T) { fn(t, mysqlSpec(t)) })
}

func unreachable(t *testing.T, what, env string, err error) {
	t.Helper()
	if os.Getenv("CI") == "true" {
		t.Fatalf("%s is not reachable (%v); CI requires it", what, err)
	}
	t.Skipf("%s is not reachable (%v): set %s to run these tests on it", what, err, env)
}

// postgresSpec is a fresh schema, dropped when the test ends.
func postgresSpec(t *testing.T) dbSpec {
	t.Helper()
	dsn := os.Getenv("DUCTUS_TEST_POSTGRES")
	if dsn == "off" {
		t.Skip("DUCTUS_TEST_POSTGRES=off")
	}
	if dsn == "" {
		dsn = "postgres://postgres@127.0.0.1:5432/postgres?sslmode=disable"
	}
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		unreachable(t, "PostgreSQL", "DUCTUS_TEST_POSTGRES", err)
	}
	conn.Close(ctx)
	schema := "rt_" + randHex(6)
	t.Cleanup(func() {
		if conn, err := pgx.Connect(ctx, dsn); err == nil {
			_, _ = conn.Exec(ctx, "DROP SCHEMA IF EXISTS "+schema+" CASCADE")
			conn.Close(ctx)
		}
	})
	return dbSpec{Driver: "postgres", DSN: dsn, Schema: schema}
}

// mysqlSpec is a fresh database, dropped when the test ends.
func mysqlSpec(t *testing.T) dbSpec {
	t.Helper()
	dsn := os.Getenv("DUCTUS_TEST_MYSQL")
	if dsn == "off" {
		t.Skip("DUCTUS_TEST_MYSQL=off")
	}
	if dsn == "" {
		dsn = "root@tcp(127.0.0.1:3306)/"
	}
	cfg, err := gomysql.ParseDSN(dsn)
	if err != nil {
		t.Fatalf("DUCTUS_TEST_MYSQL is not a DSN: %v", err)
	}
	admin := cfg.Clone()
	admin.DBName = ""
	db, err := sql.Open("mysql", admin.FormatDSN())
	if err == nil {
		err = db.Ping()
	}
	if err != nil {
		unreachable(t, "MySQL/MariaDB", "DUCTUS_TEST_MYSQL", err)
	}
	name := "rt_" + randHex(6)
	if _, err := db.Exec("CREATE DATABASE " + name); err != nil {
		db.Close()
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_, _ = db.Exec("DROP DATABASE IF EXISTS " + name)
		db.Close()
	})
	cfg.DBName = name
	return dbSpec{Driver: "mysql", DSN: cfg.FormatDSN()}
}

func randHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}
