package testdb_test

import (
	"context"
	"database/sql"
	"errors"
	"strings"
	"testing"

	_ "github.com/go-sql-driver/mysql"
	_ "github.com/jackc/pgx/v5/stdlib"

	"github.com/ductus/ductus/internal/testdb"
	"github.com/ductus/ductus/internal/testutil"
	"github.com/ductus/ductus/internal/testutil/dbtest"
)

type server struct {
	name   string
	env    string
	closed string // a DSN on which nothing listens
	reach  func(context.Context) (*testdb.Server, error)
	get    func(testing.TB) *testdb.Server
	driver string // the database/sql driver that opens a Database's DSN
}

var servers = []server{
	{"postgres", testdb.PostgresEnv, "postgres://postgres@127.0.0.1:1/postgres?sslmode=disable", testdb.Postgres, dbtest.Postgres, "pgx"},
	{"mysql", testdb.MySQLEnv, "root@tcp(127.0.0.1:1)/", testdb.MySQL, dbtest.MySQL, "mysql"},
}

// TestUnavailable: "off" and an unreachable server are ErrUnavailable (a
// skip) whose one line says how to enable the tests; under CI=true an
// unreachable server is an error, "off" still a skip; a DSN that does not
// parse is an error naming the variable.
func TestUnavailable(t *testing.T) {
	for _, s := range servers {
		cases := []struct {
			name, value, ci string
			skip            bool
			want            string
		}{
			{"off", "off", "", true, s.env + "=off"},
			{"off in CI", "off", "true", true, s.env + "=off"},
			{"unreachable", s.closed, "", true, "set " + s.env + "="},
			{"unreachable in CI", s.closed, "true", false, "CI=true requires it"},
		}
		if s.name == "mysql" {
			cases = append(cases, struct {
				name, value, ci string
				skip            bool
				want            string
			}{"not a DSN", "root@127.0.0.1", "", false, s.env + " is not a MySQL DSN"})
		}
		for _, c := range cases {
			t.Run(s.name+"/"+c.name, func(t *testing.T) {
				t.Setenv(s.env, c.value)
				t.Setenv("CI", c.ci)
				srv, err := s.reach(testutil.Context(t))
				if err == nil {
					srv.Close()
					t.Fatalf("%s=%s reached a server", s.env, c.value)
				}
				if errors.Is(err, testdb.ErrUnavailable) != c.skip || !strings.Contains(err.Error(), c.want) {
					t.Errorf("err = %v; want unavailable=%v and …%s…", err, c.skip, c.want)
				}
				if strings.Contains(err.Error(), "\n") {
					t.Errorf("err spans lines: %q", err)
				}
			})
		}
	}
}

// TestCreateDrop makes a database, reaches it by its DSN, drops it, and
// finds it gone.
func TestCreateDrop(t *testing.T) {
	for _, s := range servers {
		t.Run(s.name, func(t *testing.T) {
			srv := s.get(t)
			db, err := srv.Create(testutil.Context(t), "ductus_testdb_")
			if err != nil {
				t.Fatal(err)
			}
			if !strings.HasPrefix(db.Name, "ductus_testdb_") || !strings.Contains(db.DSN, db.Name) {
				t.Errorf("database %q at %q: want the prefix and the name in the DSN", db.Name, db.DSN)
			}
			if err := ping(testutil.Context(t), s.driver, db.DSN); err != nil {
				t.Fatalf("reach the new database: %v", err)
			}
			if err := db.Drop(testutil.Context(t)); err != nil {
				t.Fatal(err)
			}
			if err := ping(testutil.Context(t), s.driver, db.DSN); err == nil {
				t.Error("the dropped database can still be reached")
			}
		})
	}
}

// TestCreateRefusesBadPrefix: the name is spliced into SQL, so a prefix
// that is not a plain identifier is refused before anything is sent.
func TestCreateRefusesBadPrefix(t *testing.T) {
	srv := dbtest.Postgres(t)
	for _, prefix := range []string{"", "x; DROP DATABASE postgres; --", "Upper_", "1x"} {
		if db, err := srv.Create(testutil.Context(t), prefix); err == nil {
			_ = db.Drop(testutil.Context(t))
			t.Errorf("prefix %q accepted", prefix)
		} else if !strings.Contains(err.Error(), "prefix") {
			t.Errorf("prefix %q: %v does not name the prefix", prefix, err)
		}
	}
}

func ping(ctx context.Context, driver, dsn string) error {
	db, err := sql.Open(driver, dsn)
	if err != nil {
		return err
	}
	defer db.Close()
	return db.PingContext(ctx)
}
