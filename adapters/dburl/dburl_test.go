package dburl

import (
	"bytes"
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"log/slog"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	gomysql "github.com/go-sql-driver/mysql"
	"github.com/jackc/pgx/v5"

	"github.com/ductus/ductus/adapters/postgres"
	"github.com/ductus/ductus/runtime/store"
)

func TestParse(t *testing.T) {
	cases := []struct {
		url  string
		want Target
		err  string // a fragment of the error; "" = no error
	}{
		{"sqlite:data/app.db", Target{SQLite, "data/app.db"}, ""},
		{"sqlite://data/app.db", Target{SQLite, "data/app.db"}, ""},
		{"sqlite:///var/lib/app.db", Target{SQLite, "/var/lib/app.db"}, ""},
		{"postgres://u:p@db:5432/app?sslmode=disable", Target{Postgres, "postgres://u:p@db:5432/app?sslmode=disable"}, ""},
		{"postgresql://u@db/app", Target{Postgres, "postgresql://u@db/app"}, ""},
		{"mysql://root:@tcp(127.0.0.1:3306)/app?parseTime=true", Target{MySQL, "root:@tcp(127.0.0.1:3306)/app?parseTime=true"}, ""},
		{"mysql://u:p@db/app", Target{MySQL, "u:p@tcp(db:3306)/app"}, ""},
		{"mysql://u:p@db:3307/app?tls=true", Target{MySQL, "u:p@tcp(db:3307)/app?tls=true"}, ""},
		{"", Target{}, "empty"},
		{"sqlite:", Target{}, "without a path"},
		{"postgres:///app", Target{}, "names no host"},
		{"mysql://u:secret@db", Target{}, "want mysql://"},
		{"mysql://u:secret@db/a/b", Target{}, "want mysql://"},
		{"redis://u:secret@db/0", Target{}, `unknown database scheme "redis"`},
		{"postgres://u:secret@db:port/app", Target{}, "not a valid postgres URL"},
	}
	for _, c := range cases {
		t.Run(c.url, func(t *testing.T) {
			got, err := Parse(c.url)
			if c.err != "" {
				if err == nil || !strings.Contains(err.Error(), c.err) {
					t.Fatalf("Parse = %+v, %v; want an error with %q", got, err, c.err)
				}
				if strings.Contains(err.Error(), "secret") {
					t.Fatalf("the error quotes the password: %v", err)
				}
				return
			}
			if err != nil || got != c.want {
				t.Fatalf("Parse = %+v, %v; want %+v", got, err, c.want)
			}
		})
	}
}

func TestOpenRejects(t *testing.T) {
	ctx := context.Background()
	if _, err := Open(ctx, "sqlite:"+filepath.Join(t.TempDir(), "x.db"), Options{MaxConns: -1}); err == nil || !strings.Contains(err.Error(), "MaxConns") {
		t.Fatalf("negative MaxConns: %v", err)
	}
	if _, err := (Target{Driver: "oracle", DSN: "x"}).Open(ctx, Options{}); err == nil || !strings.Contains(err.Error(), "oracle") {
		t.Fatalf("unknown driver: %v", err)
	}
}

// TestOpenEveryBackend opens each backend from its URL and checks that the
// logger reached the adapter, the hook ran and the schema is usable.
func TestOpenEveryBackend(t *testing.T) {
	cases := []struct {
		name    string
		url     func(t *testing.T) string
		opts    func(o *Options)
		logLine string
		check   func(t *testing.T, b store.Backend)
	}{
		{name: SQLite, logLine: "sqlite: opened",
			url: func(t *testing.T) string { return "sqlite:" + filepath.Join(t.TempDir(), "app.db") },
			opts: func(o *Options) {
				o.MaxConns = 2
			}},
		{name: Postgres, logLine: "postgres: opened", url: postgresURL,
			opts: func(o *Options) {
				o.MaxConns = 3
				schema := "dburl_" + randomHex(t)
				o.Postgres = func(c *postgres.Config) { c.Schema = schema }
			},
			check: func(t *testing.T, b store.Backend) {
				pb := b.(*postgres.Backend)
				if got := pb.Pool().Config().MaxConns; got != 3 {
					t.Errorf("pool MaxConns = %d, want Options.MaxConns 3", got)
				}
				if !strings.HasPrefix(pb.Schema(), "dburl_") {
					t.Errorf("schema %q: the Postgres hook did not run", pb.Schema())
				}
				t.Cleanup(func() {
					ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
					defer cancel()
					_, _ = pb.Pool().Exec(ctx, "DROP SCHEMA "+pgx.Identifier{pb.Schema()}.Sanitize()+" CASCADE")
				})
			}},
		{name: MySQL, logLine: "mysql: connected", url: mysqlURL},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var buf bytes.Buffer
			o := Options{Logger: slog.New(slog.NewTextHandler(&buf, nil))}
			if c.opts != nil {
				c.opts(&o)
			}
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			b, err := Open(ctx, c.url(t), o)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { b.Close() })
			if c.check != nil {
				c.check(t, b) // its cleanups need b open: they run before the Close above
			}
			if b.Name() != c.name {
				t.Errorf("opened %q, want %q", b.Name(), c.name)
			}
			if !strings.Contains(buf.String(), c.logLine) {
				t.Errorf("the adapter did not log %q through Options.Logger; got %q", c.logLine, buf.String())
			}
			if n, err := b.BacklogCount(ctx, &store.BacklogCountParams{}); err != nil || !n.Idle() {
				t.Errorf("a fresh database's backlog = %+v, %v", n, err)
			}
		})
	}
}

func randomHex(t *testing.T) string {
	var b [5]byte
	if _, err := rand.Read(b[:]); err != nil {
		t.Fatal(err)
	}
	return hex.EncodeToString(b[:])
}

// unreachable skips the test with a line saying how to run it, or fails it
// under CI=true.
func unreachable(t *testing.T, what string, err error, how string) {
	t.Helper()
	if os.Getenv("CI") == "true" {
		t.Fatalf("%s unreachable (CI=true): %v", what, err)
	}
	t.Skipf("%s unreachable (%v): %s", what, err, how)
}

// postgresURL is the test server's URL (DUCTUS_TEST_POSTGRES).
func postgresURL(t *testing.T) string {
	base := os.Getenv("DUCTUS_TEST_POSTGRES")
	switch base {
	case "off":
		t.Skip("DUCTUS_TEST_POSTGRES=off")
	case "":
		base = "postgres://postgres@127.0.0.1:5432/postgres?sslmode=disable"
	}
	if u, err := url.Parse(base); err != nil || (u.Scheme != "postgres" && u.Scheme != "postgresql") {
		t.Skip("DUCTUS_TEST_POSTGRES is not a postgres:// URL; this test opens by URL")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, base)
	if err != nil {
		unreachable(t, "PostgreSQL", err, "set DUCTUS_TEST_POSTGRES=postgres://user@host:5432/db to run it")
	}
	conn.Close(ctx)
	return base
}

// mysqlURL creates a database on the test server (DUCTUS_TEST_MYSQL),
// dropped when t ends, and returns its mysql:// URL.
func mysqlURL(t *testing.T) string {
	base := os.Getenv("DUCTUS_TEST_MYSQL")
	switch base {
	case "off":
		t.Skip("DUCTUS_TEST_MYSQL=off")
	case "":
		base = "root@tcp(127.0.0.1:3306)/"
	}
	cfg, err := gomysql.ParseDSN(base)
	if err != nil {
		t.Fatalf("DUCTUS_TEST_MYSQL: %v", err)
	}
	db, err := sql.Open("mysql", base)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := db.PingContext(ctx); err != nil {
		unreachable(t, "MySQL/MariaDB", err, "set DUCTUS_TEST_MYSQL to a DSN such as root@tcp(127.0.0.1:3306)/ to run it")
	}
	name := "ductus_dburl_" + randomHex(t)
	if _, err := db.ExecContext(ctx, "CREATE DATABASE "+name+" CHARACTER SET utf8mb4"); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if _, err := db.Exec("DROP DATABASE IF EXISTS " + name); err != nil {
			t.Errorf("drop %s: %v", name, err)
		}
	})
	cfg.DBName = name
	return "mysql://" + cfg.FormatDSN()
}
