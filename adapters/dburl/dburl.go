// Package dburl opens a runtime backend from a URL, so a service that runs
// on any of the three databases (and the integration engine) has one way to
// name its database in configuration:
//
//	sqlite:PATH                              SQLite file (sqlite://PATH and sqlite:///ABS/PATH too)
//	postgres://user:pass@host:5432/db?...    PostgreSQL (postgresql:// too); any pgx DSN parameter
//	mysql://user:pass@host:3306/db?...       MySQL or MariaDB
//	mysql://user:pass@tcp(host:3306)/db?...  the same, in go-sql-driver's DSN form
//
// Open passes Options' logger and pool size to the adapter, and each
// adapter's own Config can be adjusted further through its hook.
//
// Importing this package links all three drivers; a service that uses one
// backend can import that adapter alone.
package dburl

import (
	"context"
	"fmt"
	"log/slog"
	"net/url"
	"regexp"
	"strings"

	"github.com/ductus/ductus/adapters/mysql"
	"github.com/ductus/ductus/adapters/postgres"
	"github.com/ductus/ductus/adapters/sqlite"
	"github.com/ductus/ductus/integration/ixstore"
	"github.com/ductus/ductus/runtime/store"
)

// Drivers as Target.Driver names them (store.Backend.Name of the result).
const (
	SQLite   = "sqlite"
	Postgres = "postgres"
	MySQL    = "mysql"
)

// Target is a parsed URL: the driver and the DSN its adapter takes (a file
// path, a pgx connection string or a go-sql-driver DSN).
type Target struct {
	Driver string
	DSN    string
}

// Options configure Open.
type Options struct {
	// Logger is passed to the adapter's Config.Logger (default: discard).
	// Pass the host's logger too (host.Config.Logger): the adapter logs
	// its own lines only.
	Logger *slog.Logger
	// MaxConns bounds the adapter's pool: postgres.Config.MaxConns,
	// mysql.Config.MaxOpenConns, sqlite.Config.ReadConns (SQLite has one
	// writer connection whatever this says). 0 keeps the adapter's default.
	MaxConns int
	// The hooks adjust an adapter's Config after Open has filled it in
	// from the URL and the fields above (schema, busy timeout, pool
	// lifetime, TLS...). Only the hook of the URL's driver runs.
	SQLite   func(*sqlite.Config)
	Postgres func(*postgres.Config)
	MySQL    func(*mysql.Config)
}

// mysqlDSN matches go-sql-driver's own DSN form after "mysql://".
var mysqlDSN = regexp.MustCompile(`^(?:[^@/]*@)?(?:tcp|unix)\([^)]*\)/[^/?]*(?:\?.*)?$`)

// Parse reads a database URL. Its errors never quote the URL, which usually
// holds a password.
func Parse(raw string) (Target, error) {
	switch {
	case raw == "":
		return Target{}, fmt.Errorf("dburl: the database URL is empty (want %s)", forms)
	case strings.HasPrefix(raw, "sqlite:"):
		p := strings.TrimPrefix(strings.TrimPrefix(raw, "sqlite:"), "//")
		if p == "" {
			return Target{}, fmt.Errorf("dburl: sqlite URL without a path (want sqlite:PATH, such as sqlite:data/app.db)")
		}
		return Target{Driver: SQLite, DSN: p}, nil
	case strings.HasPrefix(raw, "postgres://"), strings.HasPrefix(raw, "postgresql://"):
		u, err := url.Parse(raw)
		if err != nil {
			return Target{}, fmt.Errorf("dburl: not a valid postgres URL (%s)", redact(err))
		}
		if u.Host == "" && u.Query().Get("host") == "" {
			return Target{}, fmt.Errorf("dburl: the postgres URL names no host (want postgres://user:pass@host:5432/db)")
		}
		return Target{Driver: Postgres, DSN: raw}, nil
	case strings.HasPrefix(raw, "mysql://"):
		rest := strings.TrimPrefix(raw, "mysql://")
		if mysqlDSN.MatchString(rest) {
			return Target{Driver: MySQL, DSN: rest}, nil
		}
		u, err := url.Parse(raw)
		db := strings.Trim(u.Path, "/")
		if err != nil || u.Host == "" || db == "" || strings.Contains(db, "/") {
			return Target{}, fmt.Errorf("dburl: want mysql://user:pass@host:port/db or mysql://user:pass@tcp(host:port)/db")
		}
		host := u.Host
		if u.Port() == "" {
			host += ":3306"
		}
		dsn := ""
		if u.User != nil {
			dsn = u.User.Username()
			if p, ok := u.User.Password(); ok {
				dsn += ":" + p
			}
			dsn += "@"
		}
		dsn += "tcp(" + host + ")/" + db
		if u.RawQuery != "" {
			dsn += "?" + u.RawQuery
		}
		return Target{Driver: MySQL, DSN: dsn}, nil
	}
	scheme, _, _ := strings.Cut(raw, ":")
	if len(scheme) > 20 || strings.ContainsAny(scheme, "@/") {
		scheme = "?"
	}
	return Target{}, fmt.Errorf("dburl: unknown database scheme %q (want %s)", scheme, forms)
}

const forms = "sqlite:PATH, postgres://... or mysql://..."

// redact keeps url.Parse's reason but not the URL it quotes.
func redact(err error) string {
	if ue, ok := err.(*url.Error); ok {
		return ue.Err.Error()
	}
	return "bad URL"
}

// Open parses raw and opens (and migrates) the backend it names. Close the
// backend after the host's Shutdown: Shutdown does not close it.
func Open(ctx context.Context, raw string, o Options) (store.Backend, error) {
	t, err := Parse(raw)
	if err != nil {
		return nil, err
	}
	return t.Open(ctx, o)
}

// Open opens (and migrates) the backend t names.
func (t Target) Open(ctx context.Context, o Options) (store.Backend, error) {
	b, err := t.OpenEngine(ctx, o)
	if err != nil {
		return nil, err
	}
	return b, nil
}

// OpenEngine is Open for the integration engine: every adapter's backend
// also carries the engine's store (ixstore.Backend), and the engine opens
// its database through this. It migrates only the runtime's line; the
// engine applies its own.
func (t Target) OpenEngine(ctx context.Context, o Options) (ixstore.Backend, error) {
	if o.MaxConns < 0 {
		return nil, fmt.Errorf("dburl: Options.MaxConns %d is negative (0 keeps the adapter's default)", o.MaxConns)
	}
	switch t.Driver {
	case SQLite:
		c := sqlite.Config{Path: t.DSN, Logger: o.Logger, ReadConns: o.MaxConns}
		if o.SQLite != nil {
			o.SQLite(&c)
		}
		return nilIfErr(sqlite.Open(ctx, c))
	case Postgres:
		c := postgres.Config{DSN: t.DSN, Logger: o.Logger, MaxConns: int32(min(o.MaxConns, 1<<30))}
		if o.Postgres != nil {
			o.Postgres(&c)
		}
		return nilIfErr(postgres.Open(ctx, c))
	case MySQL:
		c := mysql.Config{DSN: t.DSN, Logger: o.Logger, MaxOpenConns: o.MaxConns}
		if o.MySQL != nil {
			o.MySQL(&c)
		}
		return nilIfErr(mysql.Open(ctx, c))
	}
	return nil, fmt.Errorf("dburl: unknown driver %q (want %q, %q or %q)", t.Driver, SQLite, Postgres, MySQL)
}

// nilIfErr keeps a typed nil *Backend out of the interface on failure.
func nilIfErr[B ixstore.Backend](b B, err error) (ixstore.Backend, error) {
	if err != nil {
		return nil, err
	}
	return b, nil
}
