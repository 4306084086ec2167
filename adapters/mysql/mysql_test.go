package mysql

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"io"
	"log/slog"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/go-sql-driver/mysql"

	"github.com/ductus/ductus/runtime/store"
	"github.com/ductus/ductus/runtime/store/storetest"
)

// The tests run against a real server: DUCTUS_TEST_MYSQL (a DSN without a
// database, e.g. "root@tcp(127.0.0.1:3306)/"), else the machine's local
// MariaDB. Every run creates its own databases (ductus_test_<random>) and
// drops them at the end.

var (
	serverOnce sync.Once
	serverDB   *sql.DB
	serverErr  error
)

func baseDSN() string {
	if dsn := os.Getenv("DUCTUS_TEST_MYSQL"); dsn != "" {
		return dsn
	}
	return "root@tcp(127.0.0.1:3306)/"
}

// admin returns a connection pool to the server (no database), or skips
// the test with one line saying how to enable it (fails under CI=true).
func admin(t testing.TB) *sql.DB {
	t.Helper()
	if baseDSN() == "off" {
		t.Skip("DUCTUS_TEST_MYSQL=off")
	}
	serverOnce.Do(func() {
		cfg, err := mysql.ParseDSN(baseDSN())
		if err != nil {
			serverErr = err
			return
		}
		cfg.DBName = ""
		cfg.Timeout = 3 * time.Second
		cfg.MultiStatements = true
		conn, err := mysql.NewConnector(cfg)
		if err != nil {
			serverErr = err
			return
		}
		db := sql.OpenDB(conn)
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if serverErr = db.PingContext(ctx); serverErr != nil {
			db.Close()
			return
		}
		serverDB = db
	})
	if serverErr != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("MySQL/MariaDB at %s is unreachable (CI=true): %v", baseDSN(), serverErr)
		}
		t.Skipf("MySQL/MariaDB unreachable (%v): set DUCTUS_TEST_MYSQL to a DSN such as root@tcp(127.0.0.1:3306)/ to run these tests", serverErr)
	}
	return serverDB
}

// newDatabase creates an empty database, dropped when t ends, and returns
// its DSN.
func newDatabase(t testing.TB) string {
	t.Helper()
	db := admin(t)
	var b [6]byte
	if _, err := rand.Read(b[:]); err != nil {
		t.Fatal(err)
	}
	name := "ductus_test_" + hex.EncodeToString(b[:])
	if _, err := db.Exec("CREATE DATABASE " + name + " CHARACTER SET utf8mb4"); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if _, err := db.Exec("DROP DATABASE IF EXISTS " + name); err != nil {
			t.Errorf("drop %s: %v", name, err)
		}
	})
	cfg, err := mysql.ParseDSN(baseDSN())
	if err != nil {
		t.Fatal(err)
	}
	cfg.DBName = name
	return cfg.FormatDSN()
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
