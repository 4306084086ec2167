// Package testdb makes throwaway databases on the PostgreSQL and
// MySQL/MariaDB servers the tests and the benchmark harness run against:
// it reaches the server named by DUCTUS_TEST_POSTGRES or DUCTUS_TEST_MYSQL
// (else the machine's local one; "off" switches a server off), creates a
// randomly named database and drops it again.
//
// It does not import "testing", because the benchmark harness (a program)
// uses it too: an unusable server is an error wrapping ErrUnavailable,
// which a test turns into a skip (internal/testutil/dbtest does), except
// under CI=true, where an unreachable server is a plain error and so fails
// the run. A server switched off with "off" is ErrUnavailable even in CI:
// that is a choice, not an accident.
package testdb

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"errors"
	"fmt"
	"net/url"
	"os"
	"regexp"
	"time"

	"github.com/go-sql-driver/mysql"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/stdlib"
)

// The environment variables naming the servers, and their defaults.
const (
	PostgresEnv     = "DUCTUS_TEST_POSTGRES"
	MySQLEnv        = "DUCTUS_TEST_MYSQL"
	PostgresDefault = "postgres://postgres@127.0.0.1:5432/postgres?sslmode=disable"
	MySQLDefault    = "root@tcp(127.0.0.1:3306)/"
	// Off, as an environment variable's value, switches its server off.
	Off = "off"
)

// ErrUnavailable is wrapped by the error for a server that is switched off,
// or unreachable outside CI: the caller skips what needs it, and the error
// says in one line how to enable it.
var ErrUnavailable = errors.New("test database server unavailable")

// dialTimeout bounds connecting to the MySQL server, so an absent one
// answers in seconds rather than at the OS's TCP time-out.
const dialTimeout = 3 * time.Second

// Server is a reachable server on which throwaway databases are made. Its
// methods are safe for concurrent use.
type Server struct {
	name    string  // PostgreSQL or MySQL/MariaDB, for messages
	admin   *sql.DB // a connection pool to the server's admin database
	create  string  // CREATE DATABASE's options after the name
	dropFmt string  // DROP DATABASE with %s for the name
	dsnFor  func(db string) string
}

// Postgres reaches the PostgreSQL server named by DUCTUS_TEST_POSTGRES
// (a URL or key=value DSN), else PostgresDefault.
func Postgres(ctx context.Context) (*Server, error) {
	base := env(PostgresEnv, PostgresDefault)
	if base == Off {
		return nil, fmt.Errorf("%w: PostgreSQL tests are off (%s=off)", ErrUnavailable, PostgresEnv)
	}
	cfg, err := pgx.ParseConfig(base)
	if err != nil {
		return nil, fmt.Errorf("%s is not a PostgreSQL DSN: %w", PostgresEnv, err)
	}
	where := fmt.Sprintf("%s:%d", cfg.Host, cfg.Port)
	return reach(ctx, &Server{
		name:    "PostgreSQL",
		admin:   stdlib.OpenDB(*cfg),
		dropFmt: "DROP DATABASE IF EXISTS %s WITH (FORCE)",
		dsnFor:  func(db string) string { return withPostgresDatabase(base, db) },
	}, where, PostgresEnv, "postgres://user@host:5432/db")
}

// MySQL reaches the MySQL/MariaDB server named by DUCTUS_TEST_MYSQL (a
// go-sql-driver DSN without a database), else MySQLDefault.
func MySQL(ctx context.Context) (*Server, error) {
	base := env(MySQLEnv, MySQLDefault)
	if base == Off {
		return nil, fmt.Errorf("%w: MySQL/MariaDB tests are off (%s=off)", ErrUnavailable, MySQLEnv)
	}
	cfg, err := mysql.ParseDSN(base)
	if err != nil {
		return nil, fmt.Errorf("%s is not a MySQL DSN: %w", MySQLEnv, err)
	}
	admin := cfg.Clone()
	admin.DBName = ""
	admin.Timeout = dialTimeout
	conn, err := mysql.NewConnector(admin)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", MySQLEnv, err)
	}
	return reach(ctx, &Server{
		name:  "MySQL/MariaDB",
		admin: sql.OpenDB(conn),
		// The adapter's tables name their character set; the database's
		// default covers anything a test creates beside them.
		create:  " CHARACTER SET utf8mb4",
		dropFmt: "DROP DATABASE IF EXISTS %s",
		dsnFor: func(db string) string {
			c := cfg.Clone()
			c.DBName = db
			return c.FormatDSN()
		},
	}, cfg.Addr, MySQLEnv, "root@tcp(127.0.0.1:3306)/")
}

// reach pings s's server and returns s, or the error that says why it
// cannot be used: ErrUnavailable outside CI, a plain error under CI=true.
func reach(ctx context.Context, s *Server, where, envName, example string) (*Server, error) {
	s.admin.SetMaxIdleConns(1)
	if err := s.admin.PingContext(ctx); err != nil {
		s.admin.Close()
		if os.Getenv("CI") == "true" {
			return nil, fmt.Errorf("%s at %s is unreachable and CI=true requires it: %w", s.name, where, err)
		}
		return nil, fmt.Errorf("%w: %s at %s is unreachable (%v): set %s=%s to run these tests, or %s=off to skip them without trying",
			ErrUnavailable, s.name, where, err, envName, example, envName)
	}
	return s, nil
}

func env(name, def string) string {
	if v := os.Getenv(name); v != "" {
		return v
	}
	return def
}

// Admin is a connection pool to the server itself (no database of its
// own), for tests that watch or disturb other sessions.
func (s *Server) Admin() *sql.DB { return s.admin }

// Close closes the admin pool; the databases made stay until dropped.
func (s *Server) Close() error { return s.admin.Close() }

// Database is a throwaway database on a Server.
type Database struct {
	// Name is the database's name: the prefix given to Create and 12
	// random hex digits.
	Name string
	// DSN reaches the database with the server's credentials, in the form
	// the adapter's Config.DSN takes.
	DSN string
	srv *Server
}

// validPrefix keeps names safe to splice into CREATE and DROP statements,
// which take no placeholders for a database's name.
var validPrefix = regexp.MustCompile(`^[a-z][a-z0-9_]*$`)

// Create makes an empty database named prefix and 12 random hex digits.
func (s *Server) Create(ctx context.Context, prefix string) (*Database, error) {
	if !validPrefix.MatchString(prefix) {
		return nil, fmt.Errorf("testdb: database name prefix %q: want lower-case letters, digits and _, starting with a letter", prefix)
	}
	var b [6]byte
	if _, err := rand.Read(b[:]); err != nil {
		return nil, fmt.Errorf("testdb: random database name: %w", err)
	}
	name := prefix + hex.EncodeToString(b[:])
	if _, err := s.admin.ExecContext(ctx, "CREATE DATABASE "+name+s.create); err != nil {
		return nil, fmt.Errorf("%s: create the test database %s: %w", s.name, name, err)
	}
	return &Database{Name: name, DSN: s.dsnFor(name), srv: s}, nil
}

// Drop drops the database, ending its sessions on PostgreSQL (WITH FORCE)
// so a connection a test leaked cannot keep it.
func (d *Database) Drop(ctx context.Context) error {
	if _, err := d.srv.admin.ExecContext(ctx, fmt.Sprintf(d.srv.dropFmt, d.Name)); err != nil {
		return fmt.Errorf("%s: drop the test database %s: %w", d.srv.name, d.Name, err)
	}
	return nil
}

// withPostgresDatabase points a PostgreSQL DSN (URL or key=value) at
// another database.
func withPostgresDatabase(dsn, db string) string {
	if u, err := url.Parse(dsn); err == nil && (u.Scheme == "postgres" || u.Scheme == "postgresql") {
		u.Path = "/" + db
		return u.String()
	}
	return dsn + " dbname=" + db
}
