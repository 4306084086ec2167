package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"log/slog"
	"strconv"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/riverqueue/river/riverdriver/riverpgxv5"
	"github.com/riverqueue/river/rivermigrate"
)

// dbPrefix starts the name of every database this peer makes, so a leftover
// from a killed run is easy to recognise and remove by hand.
const dbPrefix = "ductus_peer_river_"

// database is one run's own database on the server named by the DSN.
type database struct {
	dsn    string // the DSN given, pointing at the maintenance database
	name   string // the database this run created
	logger *slog.Logger
}

// createDatabase makes a fresh, uniquely named database for this run.
func createDatabase(ctx context.Context, dsn string, logger *slog.Logger) (*database, error) {
	var suffix [6]byte
	if _, err := rand.Read(suffix[:]); err != nil {
		return nil, fmt.Errorf("make database name: %w", err)
	}
	// Lower-case hex and a fixed prefix: a valid unquoted identifier, so no
	// quoting rules are involved in CREATE/DROP.
	db := &database{dsn: dsn, name: dbPrefix + hex.EncodeToString(suffix[:]), logger: logger}
	conn, err := connectAdmin(ctx, dsn)
	if err != nil {
		return nil, err
	}
	defer conn.Close(context.Background())
	if _, err := conn.Exec(ctx, "CREATE DATABASE "+db.name); err != nil {
		return nil, fmt.Errorf("create database %s: %w", db.name, err)
	}
	logger.Info("database created", "name", db.name)
	return db, nil
}

// connectAdmin opens one plain connection to the DSN's own database, for
// CREATE and DROP DATABASE which cannot run inside the database concerned.
func connectAdmin(ctx context.Context, dsn string) (*pgx.Conn, error) {
	cc, err := pgx.ParseConfig(dsn)
	if err != nil {
		return nil, fmt.Errorf("parse DSN: %w", err)
	}
	if cc.ConnectTimeout == 0 {
		cc.ConnectTimeout = 10 * time.Second
	}
	conn, err := pgx.ConnectConfig(ctx, cc)
	if err != nil {
		return nil, fmt.Errorf("connect to %s@%s:%d/%s: %w", cc.User, cc.Host, cc.Port, cc.Database, err)
	}
	return conn, nil
}

// drop removes the run's database, ending any session still in it.
func (db *database) drop(ctx context.Context) error {
	conn, err := connectAdmin(ctx, db.dsn)
	if err != nil {
		return fmt.Errorf("drop database %s: %w", db.name, err)
	}
	defer conn.Close(context.Background())
	// WITH (FORCE) (PostgreSQL 13+) so that a connection River left behind
	// after an interrupted run cannot keep the database alive.
	if _, err := conn.Exec(ctx, "DROP DATABASE IF EXISTS "+db.name+" WITH (FORCE)"); err != nil {
		return fmt.Errorf("drop database %s: %w", db.name, err)
	}
	db.logger.Info("database dropped", "name", db.name)
	return nil
}

// openPool opens the pool River runs on, configured as River's CLI configures
// the pool for `river bench` (cmd/river/rivercli/command.go, openPgxV5DBPool):
// pgxpool's defaults, with application_name, statement_timeout 10 s and
// idle_in_transaction_session_timeout 11 s when the DSN does not set them.
// maxConns > 0 overrides pgxpool's default pool size, for investigation.
func (db *database) openPool(ctx context.Context, maxConns int32) (*pgxpool.Pool, error) {
	pc, err := pgxpool.ParseConfig(db.dsn)
	if err != nil {
		return nil, fmt.Errorf("parse DSN: %w", err)
	}
	pc.ConnConfig.Database = db.name
	setIfUnset := func(name, val string) {
		if pc.ConnConfig.RuntimeParams[name] == "" {
			pc.ConnConfig.RuntimeParams[name] = val
		}
	}
	setIfUnset("application_name", "ductus river peer")
	setIfUnset("idle_in_transaction_session_timeout", strconv.Itoa(int((11 * time.Second).Milliseconds())))
	setIfUnset("statement_timeout", strconv.Itoa(int((10 * time.Second).Milliseconds())))
	if maxConns > 0 {
		pc.MaxConns = maxConns
	}
	pool, err := pgxpool.NewWithConfig(ctx, pc)
	if err != nil {
		return nil, fmt.Errorf("open pool on %s: %w", db.name, err)
	}
	if err := pool.Ping(ctx); err != nil {
		pool.Close()
		return nil, fmt.Errorf("ping %s: %w", db.name, err)
	}
	return pool, nil
}

// migrate raises River's schema in the run's database.
func migrate(ctx context.Context, pool *pgxpool.Pool, logger *slog.Logger) error {
	migrator, err := rivermigrate.New(riverpgxv5.New(pool), &rivermigrate.Config{Logger: quietLogger(logger)})
	if err != nil {
		return fmt.Errorf("river migrator: %w", err)
	}
	res, err := migrator.Migrate(ctx, rivermigrate.DirectionUp, nil)
	if err != nil {
		return fmt.Errorf("river migrate up: %w", err)
	}
	logger.Info("river schema migrated", "versions_applied", len(res.Versions))
	return nil
}

// quietLogger gives River a logger at warning level: River's info lines at
// benchmark rates would swamp the progress output (River's CLI defaults to
// warning level as well).
func quietLogger(logger *slog.Logger) *slog.Logger {
	return slog.New(levelHandler{min: slog.LevelWarn, Handler: logger.Handler()})
}

// levelHandler drops records below min and passes the rest on.
type levelHandler struct {
	min slog.Level
	slog.Handler
}

// Enabled reports whether level reaches min and the wrapped handler wants it.
func (h levelHandler) Enabled(ctx context.Context, level slog.Level) bool {
	return level >= h.min && h.Handler.Enabled(ctx, level)
}

// WithAttrs keeps the level filter on derived handlers.
func (h levelHandler) WithAttrs(attrs []slog.Attr) slog.Handler {
	return levelHandler{min: h.min, Handler: h.Handler.WithAttrs(attrs)}
}

// WithGroup keeps the level filter on derived handlers.
func (h levelHandler) WithGroup(name string) slog.Handler {
	return levelHandler{min: h.min, Handler: h.Handler.WithGroup(name)}
}
