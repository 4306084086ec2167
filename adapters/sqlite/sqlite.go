// Package sqlite is the embedded SQLite backend of the Ductus runtime,
// built on modernc.org/sqlite (pure Go, no cgo).
//
// SQLite serialises writers at the database file, so the adapter does the
// same in-process: every write transaction runs on one connection with
// BEGIN IMMEDIATE (taking the write lock at the start, so two writers never
// deadlock upgrading read locks), while reads use a separate pool that WAL
// lets run beside the writer. Several processes may share one database file;
// the busy timeout makes a writer wait for another process's transaction.
// There is no cross-process wake-up: other processes notice new work by
// polling.
//
// Times are integer microseconds since the Unix epoch from SQLite's clock
// (unixepoch('subsec'), millisecond resolution), computed inside each
// statement, so leases and due times follow the database's time as on the
// server backends.
package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	"modernc.org/sqlite"
	sqlite3 "modernc.org/sqlite/lib"

	"github.com/uptrace/bun/dialect/sqlitedialect"

	"github.com/ductus/ductus/adapters/internal/readside"
	"github.com/ductus/ductus/adapters/internal/sqlrow"
	"github.com/ductus/ductus/migrations"
	"github.com/ductus/ductus/runtime/store"
	"github.com/ductus/ductus/runtime/store/sqltx"
)

// now is SQLite's clock in microseconds; every statement that needs the
// time computes it inline.
const now = "CAST(unixepoch('subsec') * 1000000 AS INTEGER)"

// Config opens a database file.
type Config struct {
	// Path is the database file; its folder is created if missing.
	Path string
	// Synchronous is "normal" (the default: with WAL a commit survives a
	// process crash, and a power loss can lose only the last commits) or
	// "full" (every commit is fsynced).
	Synchronous string
	// BusyTimeout is how long a writer waits for another process's write
	// transaction (default 10s).
	BusyTimeout time.Duration
	// ReadConns bounds the read pool (default 4).
	ReadConns int
	// Statements, when set, counts every statement both pools send
	// (benchmarks report statements per turn from it).
	Statements *atomic.Int64
	// Logger receives the adapter's own lines: the database opened, and a
	// WAL checkpoint that keeps failing (default: discard). The runtime's
	// lines go to host.Config.Logger; pass the same logger to both.
	Logger *slog.Logger
}

// Backend is a store.Backend on one SQLite database file.
type Backend struct {
	w, r *sql.DB
	wr   *writer // the writer connection, held for the backend's life
	ckpt *sql.DB // the checkpointer's own connection
	log  *slog.Logger
	stop chan struct{} // ends the checkpointer
	done chan struct{}

	rmu   sync.Mutex
	reads map[string]*sql.Stmt // prepared statements of the read pool

	readSide *readside.Reader // the engine store's read side, on the read pool
}

var _ store.Backend = (*Backend)(nil)

// Open opens (creating if needed) the database and applies the schema.
func Open(ctx context.Context, cfg Config) (*Backend, error) {
	if cfg.Path == "" {
		return nil, errors.New("sqlite: Config.Path is required")
	}
	sync := "NORMAL"
	switch cfg.Synchronous {
	case "", "normal":
	case "full":
		sync = "FULL"
	default:
		return nil, fmt.Errorf("sqlite: synchronous must be \"normal\" or \"full\", not %q", cfg.Synchronous)
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.BusyTimeout == 0 {
		cfg.BusyTimeout = 10 * time.Second
	}
	if cfg.ReadConns <= 0 {
		cfg.ReadConns = 4
	}
	if dir := filepath.Dir(cfg.Path); dir != "" {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return nil, fmt.Errorf("sqlite: %w", err)
		}
	}
	dsn := func(txlock string, extra ...string) string {
		q := url.Values{}
		for _, p := range append([]string{
			fmt.Sprintf("busy_timeout(%d)", cfg.BusyTimeout.Milliseconds()),
			"journal_mode(WAL)",
			"synchronous(" + sync + ")",
			"foreign_keys(1)",
		}, extra...) {
			q.Add("_pragma", p)
		}
		q.Set("_txlock", txlock)
		return "file:" + cfg.Path + "?" + q.Encode()
	}
	openDB := func(dsn string) (*sql.DB, error) {
		if cfg.Statements != nil {
			return sql.OpenDB(sqltx.CountingConnector(&sqlite.Driver{}, dsn, cfg.Statements)), nil
		}
		return sql.Open("sqlite", dsn)
	}
	// Commits never checkpoint (wal_autocheckpoint 0): a background
	// goroutine runs passive checkpoints instead, so the WAL's fsync and
	// copy-back stay off the commit path (they were the p99 of a turn).
	w, err := openDB(dsn("immediate", "wal_autocheckpoint(0)"))
	if err != nil {
		return nil, fmt.Errorf("sqlite: open %s: %w", cfg.Path, err)
	}
	w.SetMaxOpenConns(1)
	w.SetMaxIdleConns(1)
	w.SetConnMaxLifetime(0)
	w.SetConnMaxIdleTime(0)
	r, err := openDB(dsn("deferred", "query_only(1)"))
	if err != nil {
		w.Close()
		return nil, fmt.Errorf("sqlite: open %s: %w", cfg.Path, err)
	}
	r.SetMaxOpenConns(cfg.ReadConns)
	r.SetMaxIdleConns(cfg.ReadConns)
	ckpt, err := openDB(dsn("deferred", "wal_autocheckpoint(0)"))
	if err != nil {
		w.Close()
		r.Close()
		return nil, fmt.Errorf("sqlite: open %s: %w", cfg.Path, err)
	}
	ckpt.SetMaxOpenConns(1)
	conn, err := w.Conn(ctx)
	if err != nil {
		w.Close()
		r.Close()
		ckpt.Close()
		return nil, fmt.Errorf("sqlite: open %s: %w", cfg.Path, err)
	}
	b := &Backend{w: w, r: r, wr: &writer{conn: conn}, ckpt: ckpt, log: cfg.Logger, reads: map[string]*sql.Stmt{}, stop: make(chan struct{}), done: make(chan struct{}),
		readSide: readside.New(r, sqlitedialect.New(), classify)}
	fsys, err := migrations.For("sqlite")
	if err == nil {
		err = store.Migrate(ctx, migrator{b: b, table: "ductus_schema_migrations"}, fsys)
	}
	if err != nil {
		close(b.done)
		b.Close()
		return nil, fmt.Errorf("sqlite: %s: %w", cfg.Path, err)
	}
	go b.checkpointer()
	cfg.Logger.Info("sqlite: opened", "path", cfg.Path, "synchronous", sync, "busy_timeout", cfg.BusyTimeout, "read_conns", cfg.ReadConns)
	return b, nil
}

// checkpointer copies the WAL back into the database every 100ms with a
// passive checkpoint (which waits for nobody), and truncates the WAL when it
// has grown past 64 MiB and a truncating checkpoint can run.
func (b *Backend) checkpointer() {
	defer close(b.done)
	t := time.NewTicker(100 * time.Millisecond)
	defer t.Stop()
	failing := 0
	for {
		select {
		case <-b.stop:
			return
		case <-t.C:
		}
		var busy, logPages, done int
		if err := b.ckpt.QueryRow("PRAGMA wal_checkpoint(PASSIVE)").Scan(&busy, &logPages, &done); err != nil {
			// Once per streak: a checkpoint failing every 100ms would
			// drown the log, and the WAL only grows while it fails.
			if failing++; failing == 1 {
				b.log.Warn("sqlite: WAL checkpoint failed; the WAL grows until one succeeds", "err", err)
			}
			continue
		}
		if failing > 0 {
			b.log.Info("sqlite: WAL checkpoints succeed again", "failed", failing)
			failing = 0
		}
		if logPages > 16384 && done == logPages { // 64 MiB of 4 KiB pages, all copied back
			_, _ = b.ckpt.Exec("PRAGMA wal_checkpoint(TRUNCATE)")
		}
	}
}

// Name implements store.Backend.
func (b *Backend) Name() string { return "sqlite" }

// Close implements store.Backend.
func (b *Backend) Close() error {
	select {
	case <-b.stop:
		return nil // closed already
	default:
		close(b.stop)
	}
	<-b.done
	b.wr.mu.Lock()
	b.wr.cache.close()
	b.wr.conn.Close()
	b.wr.mu.Unlock()
	b.rmu.Lock()
	for _, s := range b.reads {
		s.Close()
	}
	b.reads = map[string]*sql.Stmt{}
	b.rmu.Unlock()
	_, _ = b.ckpt.Exec("PRAGMA wal_checkpoint(PASSIVE)")
	return errors.Join(b.w.Close(), b.r.Close(), b.ckpt.Close())
}

// Now implements store.Backend.
func (b *Backend) Now(ctx context.Context) (time.Time, error) {
	var us int64
	if err := b.r.QueryRowContext(ctx, "SELECT "+now).Scan(&us); err != nil {
		return time.Time{}, classify("read the clock", err)
	}
	return time.UnixMicro(us), nil
}

// Begin implements store.Backend. SQLite has no per-transaction
// durability switch, so Relaxed changes nothing here. The transaction holds
// the writer until Commit or Rollback: always call one of them.
func (b *Backend) Begin(ctx context.Context, _ store.TxOptions) (store.Tx, error) {
	tx, err := b.wr.begin(ctx)
	if err != nil {
		return nil, err
	}
	return &callerTx{tx: tx}, nil
}

// exec runs a statement in tx.
func (b *Backend) exec(ctx context.Context, tx *wtx, op, query string, args ...any) (int64, error) {
	res, err := tx.ExecContext(ctx, query, args...)
	if err != nil {
		return 0, classify(op, err)
	}
	return res.RowsAffected()
}

// query runs a query in tx.
func (b *Backend) query(ctx context.Context, tx *wtx, op, query string, args ...any) (*sql.Rows, error) {
	rows, err := tx.QueryContext(ctx, query, args...)
	if err != nil {
		return nil, classify(op, err)
	}
	return rows, nil
}

// read runs a query on the read pool with a statement prepared once.
func (b *Backend) read(ctx context.Context, query string, args ...any) (*sql.Rows, error) {
	b.rmu.Lock()
	s, ok := b.reads[query]
	if !ok {
		var err error
		if s, err = b.r.PrepareContext(ctx, query); err != nil {
			b.rmu.Unlock()
			return nil, err
		}
		if len(b.reads) < 256 {
			b.reads[query] = s
		}
	}
	b.rmu.Unlock()
	return s.QueryContext(ctx, args...)
}

// classify is the adapter's one error-mapping function: SQLITE_BUSY and
// SQLITE_LOCKED (another writer holds the file past the busy timeout) are
// transient; everything else is permanent. A transient failure always
// rolled its transaction back (store.Error.RolledBack): the database is a
// local file, so no answer is ever lost on the way, and a COMMIT that
// fails is rolled back by the writer before the error is returned.
func classify(op string, err error) error {
	if err == nil {
		return nil
	}
	var se *store.Error
	if errors.As(err, &se) || errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return err
	}
	transient := false
	var e *sqlite.Error
	if errors.As(err, &e) {
		switch e.Code() & 0xff {
		case sqlite3.SQLITE_BUSY, sqlite3.SQLITE_LOCKED:
			transient = true
		}
	}
	return &store.Error{Backend: "sqlite", Op: op, Transient: transient, RolledBack: transient, Err: err}
}

// migrator applies one migration line, recorded in its own table (the
// runtime's ductus_schema_migrations, the engine's
// ductus_ix_schema_migrations).
type migrator struct {
	b     *Backend
	table string
}

// MigrationsApplied implements store.Migrator.
func (m migrator) MigrationsApplied(ctx context.Context) (map[int]bool, error) {
	if err := m.b.write(ctx, nil, func(tx *wtx) error {
		_, err := tx.ExecContext(ctx, `CREATE TABLE IF NOT EXISTS `+m.table+` (
			version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at INTEGER NOT NULL)`)
		return err
	}); err != nil {
		return nil, classify("create the migrations table", err)
	}
	rows, err := m.b.r.QueryContext(ctx, "SELECT version FROM "+m.table)
	if err != nil {
		return nil, classify("read applied migrations", err)
	}
	defer rows.Close()
	out, err := sqlrow.Versions(rows)
	return out, classify("read applied migrations", err)
}

// MigrationApply implements store.Migrator: SQLite runs DDL in a
// transaction, so a file applies whole or not at all.
func (m migrator) MigrationApply(ctx context.Context, f store.MigrationFile) error {
	return m.b.write(ctx, nil, func(tx *wtx) error {
		for _, s := range store.SplitStatements(f.SQL) {
			if _, err := tx.ExecContext(ctx, s); err != nil {
				return classify("apply "+f.Name, err)
			}
		}
		_, err := tx.ExecContext(ctx, "INSERT INTO "+m.table+" (version, name, applied_at) VALUES (?, ?, "+now+")", f.Version, f.Name)
		return classify("record "+f.Name, err)
	})
}

func micros(t sql.NullInt64) time.Time {
	if !t.Valid {
		return time.Time{}
	}
	return time.UnixMicro(t.Int64)
}

func nullTime(t time.Time) any {
	if t.IsZero() {
		return nil
	}
	return t.UnixMicro()
}
