package engine

import (
	"database/sql"
	"os"
	"sync"
	"testing"
	"time"

	gomysql "github.com/go-sql-driver/mysql"

	"github.com/ductus/ductus/integration/ixstore"
)

var my struct {
	once  sync.Once
	admin *sql.DB
	cfg   *gomysql.Config
	err   error
}

func myAdminDSN() string {
	if v := os.Getenv("DUCTUS_TEST_MYSQL"); v != "" {
		return v
	}
	return "root@tcp(127.0.0.1:3306)/"
}

// mysqlBackend opens a fresh database (MySQL has no schemas inside one),
// dropped when the test ends.
func mysqlBackend(t *testing.T) ixstore.Backend { return mysqlSpec(t).openT(t) }

// mysqlSpec creates a fresh database, dropped when the test ends.
func mysqlSpec(t *testing.T) backendSpec {
	t.Helper()
	if myAdminDSN() == "off" {
		t.Skip("DUCTUS_TEST_MYSQL=off")
	}
	my.once.Do(func() {
		cfg, err := gomysql.ParseDSN(myAdminDSN())
		if err != nil {
			my.err = err
			return
		}
		cfg.DBName = ""
		cfg.Timeout = 3 * time.Second
		conn, err := gomysql.NewConnector(cfg)
		if err != nil {
			my.err = err
			return
		}
		db := sql.OpenDB(conn)
		if my.err = db.Ping(); my.err != nil {
			db.Close()
			return
		}
		my.admin, my.cfg = db, cfg
	})
	if my.err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("MySQL/MariaDB is not reachable (%v); CI requires it", my.err)
		}
		t.Skipf("MySQL/MariaDB is not reachable (%v): set DUCTUS_TEST_MYSQL to run the engine on it", my.err)
	}
	name := "ductus_engine_test_" + randHex(6)
	if _, err := my.admin.Exec("CREATE DATABASE " + name); err != nil {
		t.Fatal(err)
	}
	// Registered before any openT's close, so it runs after it.
	t.Cleanup(func() { my.admin.Exec("DROP DATABASE IF EXISTS " + name) })
	cfg := my.cfg.Clone()
	cfg.DBName = name
	return backendSpec{Driver: "mysql", DSN: cfg.FormatDSN()}
}
