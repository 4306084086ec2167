package config

import (
	"log/slog"
	"net/url"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
	"time"
)

// Defaults of ductus.yaml.
const (
	DefaultPartitions    = 64
	DefaultScriptTimeout = 5 * time.Second
	DefaultHeapMB        = 256
	DefaultAPIListen     = "127.0.0.1:7700"
	// MaxPartitions bounds lanes per interface: each lane of each destination
	// is an actor, so the product is what the runtime schedules.
	MaxPartitions = 1024
)

// readEngine reads ductus.yaml's keys other than secrets (read first by
// the loader, since every other value may use it). It also returns the line
// of api.listen, for the listener clash check.
func readEngine(o *obj, dir string) (Engine, int) {
	e := Engine{}
	e.Database = readDatabase(o, dir)
	e.Partitions = o.integer("partitions", DefaultPartitions, 1, MaxPartitions)
	e.Durability = Durability(o.enum("durability", string(DurabilityStrict), string(DurabilityStrict), string(DurabilityRelaxed)))

	s := o.child("script")
	e.Script.Timeout = s.duration("timeout", DefaultScriptTimeout, time.Millisecond)
	e.Script.HeapMB = s.integer("heap_mb", DefaultHeapMB, 16, 65536)
	e.Script.Isolates = s.integer("isolates", 0, 0, 1024)
	if e.Script.Isolates == 0 {
		e.Script.Isolates = runtime.NumCPU()
	}
	s.finish(nil)

	rt := o.child("runtime")
	e.Runtime.Workers = rt.integer("workers", 0, 1, 256) // unset: 0, the runtime's own default
	rt.finish(nil)

	a := o.child("api")
	apiLine := a.line
	if e, ok := a.get("listen"); ok {
		apiLine = e.val.Line
	}
	listen := a.str("listen", DefaultAPIListen)
	if listen != "off" {
		if _, msg := parseListen(listen); msg != "" {
			a.problem("listen", "%s, or off", msg)
		} else {
			e.API.Listen = listen
		}
	}
	a.finish(nil)

	l := o.child("log")
	switch l.enum("level", "info", "debug", "info", "warn", "error") {
	case "debug":
		e.Log.Level = slog.LevelDebug
	case "warn":
		e.Log.Level = slog.LevelWarn
	case "error":
		e.Log.Level = slog.LevelError
	default:
		e.Log.Level = slog.LevelInfo
	}
	e.Log.Format = LogFormat(l.enum("format", string(LogText), string(LogText), string(LogJSON)))
	l.finish(nil)
	return e, apiLine
}

var mysqlDSN = regexp.MustCompile(`^(?:[^@/]*@)?(?:tcp|unix)\([^)]*\)/[^/?]*(?:\?.*)?$`)

// readDatabase reads the database URL. Its value is never echoed in a
// problem: it usually holds a password.
func readDatabase(o *obj, dir string) Database {
	embedded := Database{Driver: DriverSQLite, DSN: filepath.Join(dir, ".ductus", "ductus.db"), Embedded: true}
	t, ok := o.scalar("database")
	if !ok || t.value == "" {
		return embedded
	}
	v := t.value
	switch {
	case strings.HasPrefix(v, "sqlite:"):
		p := strings.TrimPrefix(strings.TrimPrefix(v, "sqlite:"), "//")
		if p == "" {
			o.problem("database", "want sqlite:PATH, such as sqlite:data/ductus.db (relative to the project)")
			return embedded
		}
		if p != ":memory:" && !filepath.IsAbs(p) {
			p = filepath.Join(dir, filepath.FromSlash(p))
		}
		return Database{Driver: DriverSQLite, DSN: p}
	case strings.HasPrefix(v, "postgres://"), strings.HasPrefix(v, "postgresql://"):
		if _, err := url.Parse(v); err != nil {
			o.problem("database", "not a valid postgres:// URL (%s)", redactURLError(err))
			return embedded
		}
		return Database{Driver: DriverPostgres, DSN: v}
	case strings.HasPrefix(v, "mysql://"):
		rest := strings.TrimPrefix(v, "mysql://")
		if mysqlDSN.MatchString(rest) {
			return Database{Driver: DriverMySQL, DSN: rest}
		}
		// Also take the URL form mysql://user:pass@host:port/db?params.
		u, err := url.Parse(v)
		if err != nil || u.Host == "" || strings.Trim(u.Path, "/") == "" || strings.Contains(strings.Trim(u.Path, "/"), "/") {
			o.problem("database", "want mysql://user:pass@tcp(host:port)/db or mysql://user:pass@host:port/db")
			return embedded
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
		dsn += "tcp(" + host + ")/" + strings.Trim(u.Path, "/")
		if u.RawQuery != "" {
			dsn += "?" + u.RawQuery
		}
		return Database{Driver: DriverMySQL, DSN: dsn}
	}
	o.problem("database", `want "" (embedded SQLite), sqlite:PATH, postgres://... or mysql://...`)
	return embedded
}

// redactURLError keeps url.Parse's reason but not the URL it quotes.
func redactURLError(err error) string {
	if ue, ok := err.(*url.Error); ok {
		return ue.Err.Error()
	}
	return "bad URL"
}
