// Package postgres is the PostgreSQL backend of the Ductus runtime, built on
// pgx/v5 and pgxpool.
//
// The adapter is shaped by round trips. Every transaction of the
// transaction map that needs no decision in Go between its statements is
// sent as one pgx batch: the statements are pipelined behind a single Sync,
// which PostgreSQL runs as one implicit transaction (all or nothing), so a
// Tell, a TellBatch over many actors, a claim, a take, a renew or release,
// and a whole fenced commit of K messages (staged effects, sends, reminders
// and broadcasts, the next take folded in, the NOTIFY of finished asks)
// each cost one round trip (TestRoundTrips counts them on the wire). Checks
// that must stop a pipelined transaction part-way (the fenced lease check,
// a full mailbox) raise an error of the adapter's own from SQL
// (ductus_raise, SQLSTATE DX001/DX002), which aborts the rest of the
// pipeline. Variable-length inputs travel as arrays (unnest), so every
// statement text is fixed and pgx prepares it once per connection
// (QueryExecModeCacheStatement); connections run generic plans (see Open).
//
// Claims range-scan the claim index (GREATEST(head_due, lease_expires), see
// the schema) and lock with FOR NO KEY UPDATE SKIP LOCKED, so concurrent
// claimers never wait for each other. Actors are always locked before the
// rows hanging off them, and multi-actor lockers lock in (type, id) order,
// so the runtime's own transactions do not deadlock; operator actions racing
// them may, and a deadlock is reported as transient. The hot tables are
// append-and-delete only: a message row is written once, its success is a
// row of ductus_results, its execution state is membership of the ready and
// claimed tables, and a busy actor's row changes only in columns no index
// covers (HOT updates).
//
// Times are timestamptz from the server's clock: now() (the transaction's
// start) where a statement picks due work or sets an expiry, because it is
// stable (it bounds an index range scan) and errs early; clock_timestamp()
// in the commit's fence, checked when the actor's lock is held.
//
// Cross-process wake-ups use LISTEN/NOTIFY (see [Backend.Listen]).
//
// Each application's tables live in its own schema (Config.Schema): every
// pooled connection starts with search_path set to it, so several
// applications can share one database.
package postgres

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"regexp"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/jackc/pgx/v5/stdlib"
	"github.com/uptrace/bun/dialect/pgdialect"

	"github.com/ductus/ductus/adapters/internal/readside"
	"github.com/ductus/ductus/integration/ixstore"
	"github.com/ductus/ductus/migrations"
	"github.com/ductus/ductus/runtime/store"
)

// Config opens a database.
type Config struct {
	// DSN is a pgx connection string: a URL
	// (postgres://user@host:5432/db?sslmode=disable) or key=value pairs.
	DSN string
	// Schema holds the runtime's tables (default "ductus"); it is created
	// if missing. Lower-case letters, digits and _.
	Schema string
	// MaxConns bounds the pool: this when set, else the DSN's
	// pool_max_conns, else 16. The LISTEN connection is extra.
	MaxConns int32
	// MinConns keeps this many connections open (default 0).
	MinConns int32
	// Pool, when set, adjusts the pool configuration after the adapter has
	// filled it in (tracers, dialers, TLS); it must not change the
	// statement mode or the search path.
	Pool func(*pgxpool.Config)
	// Logger receives the adapter's own lines: the schema opened, and the
	// LISTEN connection lost and back (default: discard). The runtime's
	// lines go to host.Config.Logger; pass the same logger to both.
	Logger *slog.Logger
}

// Backend is a store.Backend on one PostgreSQL schema.
type Backend struct {
	pool    *pgxpool.Pool
	schema  string
	channel string // the NOTIFY channel of this schema
	connCfg *pgx.ConnConfig
	log     *slog.Logger
	hub     *hub
	// keyRetries counts one-statement enqueues redone with locks first
	// because a concurrent enqueue used one of their keys.
	keyRetries atomic.Int64
	// pks holds the keys of actors this backend enqueued to, for the
	// plain-UPDATE Tell (plainHot).
	pks store.PKCache
	// readSide is the engine store's read side (bun, over database/sql on
	// connections of its own: see openReadSide).
	readSide *readside.Reader
	sqlDB    *sql.DB
}

var (
	_ store.Backend   = (*Backend)(nil)
	_ store.Signaler  = (*Backend)(nil)
	_ ixstore.Backend = (*Backend)(nil)
)

var schemaName = regexp.MustCompile(`^[a-z_][a-z0-9_]{0,55}$`)

// Open connects, creates the schema if needed and applies the migrations.
func Open(ctx context.Context, cfg Config) (*Backend, error) {
	if cfg.DSN == "" {
		return nil, errors.New("postgres: Config.DSN is required")
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.Schema == "" {
		cfg.Schema = "ductus"
	}
	if !schemaName.MatchString(cfg.Schema) {
		return nil, fmt.Errorf("postgres: schema %q must be 1-56 lower-case letters, digits and _, starting with a letter or _", cfg.Schema)
	}
	pc, err := pgxpool.ParseConfig(cfg.DSN)
	if err != nil {
		return nil, fmt.Errorf("postgres: DSN: %w", err)
	}
	// pgxpool's own default (4, or the CPU count) is too few for a host's
	// workers; a pool_max_conns in the DSN is the operator's choice.
	if !dsnSetsMaxConns(cfg.DSN) {
		pc.MaxConns = 16
	}
	if cfg.MaxConns > 0 {
		pc.MaxConns = cfg.MaxConns
	}
	if cfg.MinConns > 0 {
		pc.MinConns = cfg.MinConns
	}
	// The search path travels in the startup message: no extra round trip
	// per connection, and every statement (ours and the caller's) resolves
	// in the application's schema first.
	cc := pc.ConnConfig
	cc.DefaultQueryExecMode = pgx.QueryExecModeCacheStatement
	cc.RuntimeParams["search_path"] = pgx.Identifier{cfg.Schema}.Sanitize() + ", public"
	// Generic plans: every statement of the adapter is planned once per
	// connection. Left to choose, PostgreSQL re-plans the enqueue and take
	// statements on every execution (their row estimates depend on array
	// and LIMIT parameters), and planning cost more than running them. The
	// statements whose best plan depends on their input size (a large
	// many-actor enqueue) or that a plan made on an empty table would ruin
	// (the ordered effects', see customPlan) ask for custom plans
	// themselves; the caller's own transactions and queries run with the
	// server's default.
	//
	// A generic plan is made again only when a table's statistics change,
	// so a plan made on a fresh database's empty tables stays until
	// autovacuum's first ANALYZE of each, and for good where autovacuum is
	// off. Such a plan joins a handful of keys to a table by hashing them
	// and scanning the whole table. So a statement that reads rows by keys
	// it is given does it in a LATERAL subquery (kept from being flattened
	// into a join by OFFSET 0), one index lookup a key, or repeats the keys
	// as "= ANY" on the table's key, which the planner serves by the index
	// at any size (TestGenericPlansFindRowsByKey).
	cc.RuntimeParams["plan_cache_mode"] = "force_generic_plan"
	if cc.RuntimeParams["application_name"] == "" {
		cc.RuntimeParams["application_name"] = "ductus"
	}
	if cfg.Pool != nil {
		cfg.Pool(pc)
	}
	pool, err := pgxpool.NewWithConfig(ctx, pc)
	if err != nil {
		return nil, fmt.Errorf("postgres: %w", err)
	}
	b := &Backend{pool: pool, schema: cfg.Schema, channel: "ductus_" + cfg.Schema, connCfg: cc.Copy(), log: cfg.Logger}
	b.hub = newHub(b)
	fsys, err := migrations.For("postgres")
	if err == nil {
		err = store.Migrate(ctx, migrator{b: b, table: "ductus_schema_migrations"}, fsys)
	}
	if err != nil {
		pool.Close()
		return nil, fmt.Errorf("postgres: schema %s: %w", cfg.Schema, err)
	}
	b.openReadSide()
	cfg.Logger.Info("postgres: opened", "schema", cfg.Schema, "max_conns", pc.MaxConns)
	return b, nil
}

// readSideConns bounds the read side's connections: operator pages, not
// the message path.
const readSideConns = 4

// openReadSide opens the read side's connections: the pool's settings
// (schema, timeouts) with the simple protocol. bun writes each statement
// with its values, so nearly every text is new; through the pool, pgx's
// statement cache would prepare each one (a round trip more) and evict
// the message path's prepared statements to make room.
func (b *Backend) openReadSide() {
	cc := b.connCfg.Copy()
	cc.DefaultQueryExecMode = pgx.QueryExecModeSimpleProtocol
	b.sqlDB = stdlib.OpenDB(*cc)
	b.sqlDB.SetMaxOpenConns(readSideConns)
	b.sqlDB.SetMaxIdleConns(readSideConns)
	b.sqlDB.SetConnMaxIdleTime(time.Minute)
	b.readSide = readside.New(b.sqlDB, pgdialect.New(), classify)
}

// Name implements store.Backend.
func (b *Backend) Name() string { return "postgres" }

// Schema is the schema the backend's tables live in.
func (b *Backend) Schema() string { return b.schema }

// Pool is the backend's connection pool (for the caller's own statements
// outside the runtime; statements run with the schema on the search path).
func (b *Backend) Pool() *pgxpool.Pool { return b.pool }

// Close implements store.Backend.
func (b *Backend) Close() error {
	b.hub.close()
	err := b.sqlDB.Close()
	b.pool.Close()
	return err
}

// Now implements store.Backend.
func (b *Backend) Now(ctx context.Context) (time.Time, error) {
	var t time.Time
	if err := b.pool.QueryRow(ctx, `SELECT now()`).Scan(&t); err != nil {
		return time.Time{}, classify("read the clock", err)
	}
	return t, nil
}

// Begin implements store.Backend: it takes a connection; BEGIN goes with
// the transaction's first statement (callerTx). Relaxed commits use
// synchronous_commit = off, set in the same round trip.
func (b *Backend) Begin(ctx context.Context, opts store.TxOptions) (store.Tx, error) {
	conn, err := b.pool.Acquire(ctx)
	if err != nil {
		return nil, classify("begin", err)
	}
	begin := openCaller
	if opts.Relaxed {
		begin = openCallerRelaxed
	}
	return &callerTx{conn: conn, begin: begin}, nil
}

// read runs a read-only query with ? placeholders on a pooled connection,
// outside any transaction, with the server's plan choice (the engine's
// reads, whose best plans depend on their input).
func (b *Backend) read(ctx context.Context, query string, args ...any) (*callerRows, error) {
	conn, err := b.pool.Acquire(ctx)
	if err != nil {
		return nil, classify("read query", err)
	}
	// The caller's query runs with the server's plan choice, in the same
	// round trip.
	var bt pgx.Batch
	bt.Queue(`SELECT set_config('plan_cache_mode', 'auto', true)`)
	bt.Queue(Rebind(query), args...)
	br := conn.SendBatch(ctx, &bt)
	if _, err := br.Exec(); err != nil {
		_ = br.Close()
		conn.Release()
		return nil, classify("read query", err)
	}
	rows, err := br.Query()
	if err != nil {
		_ = br.Close()
		conn.Release()
		return nil, classify("read query", err)
	}
	return &callerRows{rows: rows, done: func() { _ = br.Close(); conn.Release() }}, nil
}

// sender is what runs a batch: the pool (one implicit transaction per
// batch) or an open transaction.
type sender interface {
	SendBatch(ctx context.Context, b *pgx.Batch) pgx.BatchResults
}

// batch is a pgx.Batch whose statements carry their purpose, so an error
// names the statement that failed.
type batch struct {
	b     pgx.Batch
	ops   []string
	reads []func(pgx.BatchResults) error
}

// exec queues a statement whose result is only its success.
func (bt *batch) exec(op, sql string, args ...any) {
	bt.b.Queue(sql, args...)
	bt.ops = append(bt.ops, op)
	bt.reads = append(bt.reads, func(br pgx.BatchResults) error {
		_, err := br.Exec()
		return err
	})
}

// execN queues a statement and reports the rows it affected.
func (bt *batch) execN(op string, n *int64, sql string, args ...any) {
	bt.b.Queue(sql, args...)
	bt.ops = append(bt.ops, op)
	bt.reads = append(bt.reads, func(br pgx.BatchResults) error {
		tag, err := br.Exec()
		*n = tag.RowsAffected()
		return err
	})
}

// query queues a statement whose rows scan calls row by row.
func (bt *batch) query(op string, scan func(pgx.Rows) error, sql string, args ...any) {
	bt.b.Queue(sql, args...)
	bt.ops = append(bt.ops, op)
	bt.reads = append(bt.reads, func(br pgx.BatchResults) error {
		rows, err := br.Query()
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			if err := scan(rows); err != nil {
				return err
			}
		}
		return rows.Err()
	})
}

func (bt *batch) len() int { return len(bt.ops) }

// append moves other's statements to the end of bt.
func (bt *batch) append(other *batch) {
	bt.b.QueuedQueries = append(bt.b.QueuedQueries, other.b.QueuedQueries...)
	bt.ops = append(bt.ops, other.ops...)
	bt.reads = append(bt.reads, other.reads...)
}

// run sends the batch in one round trip and reads every result in order;
// the first failure is returned with its statement's purpose.
func (bt *batch) run(ctx context.Context, s sender) error {
	if len(bt.ops) == 0 {
		return nil
	}
	br := s.SendBatch(ctx, &bt.b)
	for i, read := range bt.reads {
		if err := read(br); err != nil {
			_ = br.Close()
			return classify(bt.ops[i], err)
		}
	}
	return classify(bt.ops[len(bt.ops)-1], br.Close())
}

// inTx runs fn in a transaction of its own (BEGIN is one round trip,
// COMMIT another): for the transactions that need a decision in Go between
// statements.
func (b *Backend) inTx(ctx context.Context, fn func(tx pgx.Tx) error) error {
	tx, err := b.pool.Begin(ctx)
	if err != nil {
		return classify("begin", err)
	}
	if err := fn(tx); err != nil {
		_ = tx.Rollback(context.Background())
		return err
	}
	if err := tx.Commit(ctx); err != nil {
		return classify("commit", err)
	}
	return nil
}

// txn is one of the adapter's own transactions spanning several round
// trips on one connection. BEGIN travels in front of the first batch and
// COMMIT behind the last (commitWith), so a transaction of n decisions
// costs n round trips, not n+2.
type txn struct {
	conn      *pgxpool.Conn
	begun     bool
	committed bool
}

// SendBatch implements sender, opening the transaction with the first batch.
func (t *txn) SendBatch(ctx context.Context, b *pgx.Batch) pgx.BatchResults {
	if t.begun {
		return t.conn.SendBatch(ctx, b)
	}
	t.begun = true
	return sendOpening(ctx, t.conn, openTxn, b)
}

// commitWith runs bt with COMMIT appended (just COMMIT when bt is empty;
// nothing when nothing was sent).
func (t *txn) commitWith(ctx context.Context, bt *batch) error {
	if !t.begun && bt.len() == 0 {
		return nil
	}
	bt.exec("commit", "COMMIT")
	t.committed = true
	return bt.run(ctx, t)
}

// txn runs fn in a transaction on one pooled connection; fn ends it with
// commitWith, or it is committed (or rolled back on error) here.
func (b *Backend) txn(ctx context.Context, fn func(t *txn) error) error {
	conn, err := b.pool.Acquire(ctx)
	if err != nil {
		return classify("acquire a connection", err)
	}
	defer conn.Release()
	t := &txn{conn: conn}
	err = fn(t)
	if err == nil && t.begun && !t.committed {
		_, err = conn.Exec(ctx, "COMMIT")
		err = classify("commit", err)
	}
	if err != nil && inTransaction(conn) {
		_, _ = conn.Exec(context.Background(), "ROLLBACK")
	}
	return err
}

// outerTx returns the adapter's side of a caller's store.Tx.
func outerTx(t store.Tx) (*callerTx, error) {
	ct, ok := t.(*callerTx)
	if !ok {
		return nil, errors.New("postgres: the transaction does not belong to this backend")
	}
	if ct.done {
		return nil, errEnded
	}
	return ct, nil
}

// The adapter's own SQLSTATEs, raised by ductus_raise.
const (
	codeLostActivation = "DX001"
	codeMailboxFull    = "DX002"
)

// classify is the adapter's one error-mapping function. Transient:
// serialization failures, deadlocks, lock and statement timeouts, a server
// shutting down or restarting, lost or refused connections, a read-only
// server after a failover, and a cached plan invalidated by a concurrent
// migration (pgx re-prepares it on the next try). Everything else is
// permanent. Either way the error names the statement's purpose, and a
// transient error says whether the transaction certainly rolled back
// (store.Error.RolledBack).
func classify(op string, err error) error {
	if err == nil {
		return nil
	}
	var se *store.Error
	if errors.As(err, &se) || errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return err
	}
	transient, rolledBack := kind(err)
	return &store.Error{Backend: "postgres", Op: op, Transient: transient, RolledBack: rolledBack, Err: err}
}

// kind reports whether err is transient and, if it is, whether nothing of
// the transaction persisted.
func kind(err error) (transient, rolledBack bool) {
	var pe *pgconn.PgError
	if errors.As(err, &pe) {
		switch pe.Code {
		// The server refused a statement, or the connection, and said so:
		// a pipelined transaction is aborted at its first error, so its
		// COMMIT (explicit or the implicit one at Sync) never takes effect.
		case "40001", // serialization_failure
			"40P01", // deadlock_detected
			"55P03", // lock_not_available (lock_timeout, NOWAIT)
			"57014", // query_canceled (statement_timeout)
			"25006", // read_only_sql_transaction (a standby after failover)
			"57P03", // cannot_connect_now
			"53300": // too_many_connections
			return true, true
		// The backend was terminated (pg_terminate_backend, a shutdown):
		// it may have died after its commit was durable and before the
		// answer was sent.
		case "57P01", // admin_shutdown
			"57P02": // crash_shutdown
			return true, false
		case "0A000": // feature_not_supported: only the stale cached plan is worth a retry
			return pe.Message == "cached plan must not change result type", true
		}
		if len(pe.Code) == 5 && pe.Code[:2] == "08" { // connection_exception class
			return true, false
		}
		return false, false
	}
	var ce *pgconn.ConnectError
	if errors.As(err, &ce) || pgconn.SafeToRetry(err) {
		return true, true // nothing was sent
	}
	var oe *net.OpError
	if errors.As(err, &oe) && oe.Op == "dial" {
		return true, true
	}
	// Below the protocol: a connection lost or timed out with the
	// statements on the wire. Their outcome is unknown.
	return pgconn.Timeout(err) || isConnLost(err), false
}

// isConnLost reports a connection that broke under a statement: the
// socket failed (reset, broken pipe, a network timeout), the server closed
// it mid-message (EOF), or pgx had already closed it after such a failure.
func isConnLost(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) || errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) ||
		errors.Is(err, net.ErrClosed) || errors.Is(err, pgconn.ErrConnClosed) ||
		errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.EPIPE)
}

// sqlState returns the SQLSTATE of a server error, or "".
func sqlState(err error) string {
	var pe *pgconn.PgError
	if errors.As(err, &pe) {
		return pe.Code
	}
	return ""
}

// pgDetail returns the DETAIL of a server error.
func pgDetail(err error) string {
	var pe *pgconn.PgError
	if errors.As(err, &pe) {
		return pe.Detail
	}
	return ""
}

// migrator applies one migration line, recorded in its own table (the
// runtime's ductus_schema_migrations, the engine's
// ductus_ix_schema_migrations).
type migrator struct {
	b     *Backend
	table string
}

// MigrationsApplied implements store.Migrator: it creates the schema and
// the bookkeeping table under the migration lock, so concurrent openers do
// not race on CREATE SCHEMA.
func (m migrator) MigrationsApplied(ctx context.Context) (map[int]bool, error) {
	out := map[int]bool{}
	err := m.b.inTx(ctx, func(tx pgx.Tx) error {
		if err := m.b.migrationLock(ctx, tx); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, `CREATE SCHEMA IF NOT EXISTS `+pgx.Identifier{m.b.schema}.Sanitize()); err != nil {
			return classify("create the schema", err)
		}
		if _, err := tx.Exec(ctx, `CREATE TABLE IF NOT EXISTS `+m.table+` (
			version integer PRIMARY KEY, name text NOT NULL, applied_at timestamptz NOT NULL DEFAULT now())`); err != nil {
			return classify("create the migrations table", err)
		}
		rows, err := tx.Query(ctx, `SELECT version FROM `+m.table)
		if err != nil {
			return classify("read applied migrations", err)
		}
		vs, err := pgx.CollectRows(rows, pgx.RowTo[int32])
		if err != nil {
			return classify("read applied migrations", err)
		}
		for _, v := range vs {
			out[int(v)] = true
		}
		return nil
	})
	return out, err
}

// MigrationApply implements store.Migrator: the file runs whole in one
// transaction (PostgreSQL's DDL is transactional) under a transaction-level
// advisory lock per schema, and is skipped if another process applied it
// while this one waited for the lock.
func (m migrator) MigrationApply(ctx context.Context, f store.MigrationFile) error {
	return m.b.inTx(ctx, func(tx pgx.Tx) error {
		if err := m.b.migrationLock(ctx, tx); err != nil {
			return err
		}
		var done bool
		if err := tx.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM `+m.table+` WHERE version = $1)`, f.Version).Scan(&done); err != nil {
			return classify("check "+f.Name, err)
		}
		if done {
			return nil
		}
		// No arguments: pgx sends it with the simple protocol, which runs
		// a file of many statements (and plpgsql bodies) as it is.
		if _, err := tx.Exec(ctx, f.SQL); err != nil {
			return classify("apply "+f.Name, err)
		}
		_, err := tx.Exec(ctx, `INSERT INTO `+m.table+` (version, name) VALUES ($1, $2)`, f.Version, f.Name)
		return classify("record "+f.Name, err)
	})
}

func (b *Backend) migrationLock(ctx context.Context, tx pgx.Tx) error {
	_, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock(hashtext('ductus.migrate'), hashtext($1))`, b.schema)
	return classify("take the migration lock", err)
}

func limitOr(n, def int) int {
	if n <= 0 {
		return def
	}
	return n
}

// micros is the SQL for a parameter of whole microseconds as an interval.
const us = ` * interval '1 microsecond'`

// dsnSetsMaxConns reports whether a DSN (URL or key=value) names
// pool_max_conns; pgxpool.ParseConfig has already checked its value.
func dsnSetsMaxConns(dsn string) bool {
	return strings.Contains(dsn, "pool_max_conns=")
}
