package engine

import (
	"testing"

	"github.com/ductus/ductus/internal/testutil/dbtest"
	"github.com/ductus/ductus/runtime/store"
)

// mysqlBackend opens a fresh database (MySQL has no schemas inside one),
// dropped when the test ends.
func mysqlBackend(t *testing.T) store.Backend { return mysqlSpec(t).openT(t) }

// mysqlSpec creates a fresh database, dropped when the test ends (its
// cleanup is registered before any openT's close, so it runs after it).
func mysqlSpec(t *testing.T) backendSpec {
	t.Helper()
	db := dbtest.Database(t, dbtest.MySQL(t), "ductus_engine_test_")
	return backendSpec{Driver: "mysql", DSN: db.DSN}
}
