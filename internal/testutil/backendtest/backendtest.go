// Package backendtest gives end-to-end tests (the engine's, realtime's) a
// database of each backend, named by where it is (a Spec) so that a test
// can open it here or hand it to a child process as JSON: a SQLite file in
// the test's temporary folder, a PostgreSQL schema of its own in the test
// binary's database, or a MySQL database of its own (MySQL has no schemas
// inside a database).
//
// It is apart from dbtest because it links the adapters, whose own tests
// use dbtest.
package backendtest

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

	"github.com/ductus/ductus/adapters/dburl"
	"github.com/ductus/ductus/adapters/postgres"
	"github.com/ductus/ductus/integration/ixstore"
	"github.com/ductus/ductus/internal/testdb"
	"github.com/ductus/ductus/internal/testutil"
	"github.com/ductus/ductus/internal/testutil/dbtest"
)

// prefix names the databases this package makes.
const prefix = "ductus_e2e_test_"

// Spec says where a test database is.
type Spec struct {
	Driver string `json:"driver"` // dburl's driver names: sqlite, postgres, mysql
	DSN    string `json:"dsn"`
	Schema string `json:"schema,omitempty"` // PostgreSQL only
}

// Open opens (and migrates the runtime's line of) the database s names.
func (s Spec) Open(ctx context.Context) (ixstore.Backend, error) {
	return dburl.Target{Driver: s.Driver, DSN: s.DSN}.OpenEngine(ctx, dburl.Options{
		Logger:   testutil.Logger(),
		Postgres: func(c *postgres.Config) { c.Schema = s.Schema },
	})
}

// OpenT opens the database, closed when the test ends.
func (s Spec) OpenT(t testing.TB) ixstore.Backend {
	t.Helper()
	be, err := s.Open(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { be.Close() })
	return be
}

// ForEach runs fn once per backend, as subtests named sqlite, postgres
// and mysql; a server that is off or unreachable skips its subtest (fails
// it under CI=true).
func ForEach(t *testing.T, fn func(t *testing.T, s Spec)) {
	t.Run("sqlite", func(t *testing.T) { fn(t, SQLite(t)) })
	t.Run("postgres", func(t *testing.T) { fn(t, Postgres(t)) })
	t.Run("mysql", func(t *testing.T) { fn(t, MySQL(t)) })
}

// SQLite names a database file in the test's temporary folder.
func SQLite(t testing.TB) Spec {
	return Spec{Driver: dburl.SQLite, DSN: filepath.Join(t.TempDir(), "test.db")}
}

// pg is the test binary's PostgreSQL database, made on first use (each
// test gets a schema of its own in it) and dropped by DropAll.
var pg struct {
	once sync.Once
	db   *testdb.Database
	err  error
}

// Postgres names a fresh schema in the test binary's database (the schema
// is created when it is first opened). Call DropAll from TestMain.
func Postgres(t testing.TB) Spec {
	t.Helper()
	srv := dbtest.Postgres(t)
	pg.once.Do(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		pg.db, pg.err = srv.Create(ctx, prefix)
	})
	if pg.err != nil {
		t.Fatal(pg.err)
	}
	return Spec{Driver: dburl.Postgres, DSN: pg.db.DSN, Schema: "t_" + randHex(6)}
}

// MySQL creates a fresh database, dropped when the test ends (the drop is
// registered before any OpenT's close, so it runs after it).
func MySQL(t testing.TB) Spec {
	t.Helper()
	db := dbtest.Database(t, dbtest.MySQL(t), prefix)
	return Spec{Driver: dburl.MySQL, DSN: db.DSN}
}

// DropAll drops the test binary's PostgreSQL database, if one was made;
// call it from TestMain after m.Run.
func DropAll() {
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
