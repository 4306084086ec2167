// Package dbtest is internal/testdb for tests: it reaches the PostgreSQL and
// MySQL/MariaDB test servers once per test binary, skips a test with one
// line saying how to enable it when a server is off or unreachable (fails
// it under CI=true), and drops a test's databases when the test ends.
//
// It is a package of its own, not part of internal/testutil, because it
// links the database drivers: the runtime's conformance and scenario
// suites use testutil and must not link them.
package dbtest

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/ductus/ductus/internal/testdb"
)

// Time-outs for reaching a server and for making or dropping a database.
const (
	reachTimeout  = 10 * time.Second
	createTimeout = 30 * time.Second
	dropTimeout   = 30 * time.Second
)

// server reaches one server at most once per test binary: every test of a
// package shares its admin pool, and an unreachable server costs its
// time-out once, not once per test.
type server struct {
	once  sync.Once
	reach func(context.Context) (*testdb.Server, error)
	srv   *testdb.Server
	err   error
}

func (s *server) get(t testing.TB) *testdb.Server {
	t.Helper()
	s.once.Do(func() {
		ctx, cancel := context.WithTimeout(context.Background(), reachTimeout)
		defer cancel()
		s.srv, s.err = s.reach(ctx)
	})
	Check(t, s.err)
	return s.srv
}

// The servers, process-wide by nature: a test binary has one of each.
var (
	postgres = server{reach: testdb.Postgres}
	mysql    = server{reach: testdb.MySQL}
)

// Postgres returns the PostgreSQL test server, or skips t (fails it under
// CI=true) when there is none.
func Postgres(t testing.TB) *testdb.Server {
	t.Helper()
	return postgres.get(t)
}

// MySQL returns the MySQL/MariaDB test server, or skips t (fails it under
// CI=true) when there is none.
func MySQL(t testing.TB) *testdb.Server {
	t.Helper()
	return mysql.get(t)
}

// Check ends t for an error from internal/testdb: a skip with the error's
// one line for testdb.ErrUnavailable, a failure for anything else; nil does
// nothing.
func Check(t testing.TB, err error) {
	t.Helper()
	switch {
	case err == nil:
	case errors.Is(err, testdb.ErrUnavailable):
		t.Skip(err.Error())
	default:
		t.Fatal(err)
	}
}

// Database creates a throwaway database on srv, named prefix and random
// hex digits, and drops it when t ends (its cleanups run last first, so a
// backend opened on it afterwards is closed before the drop).
func Database(t testing.TB, srv *testdb.Server, prefix string) *testdb.Database {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), createTimeout)
	defer cancel()
	db, err := srv.Create(ctx, prefix)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), dropTimeout)
		defer cancel()
		if err := db.Drop(ctx); err != nil {
			t.Errorf("%v", err)
		}
	})
	return db
}
