// Package mysql is the MySQL / MariaDB backend of the Ductus runtime, on
// github.com/go-sql-driver/mysql through database/sql. It runs on MySQL 8.0.4+
// and MariaDB 10.6+ with InnoDB and writes only SQL both accept: no
// RETURNING, no partial or functional indexes, no LISTEN/NOTIFY.
//
// Why it is shaped this way:
//
//   - Round trips and statements, not rows, bound a transaction's cost on
//     a nearby server, so the adapter's own transactions send every
//     statement they can before they need an answer as one multi-statement
//     query (the driver interpolates the arguments with its escaping;
//     nothing is prepared). A Tell to a known actor, a take and a turn's
//     commit (with or without the next take) are one round trip each; a
//     claim is three (scan, lock, lease). The Tell, the most frequent, is
//     a stored procedure's CALL instead (see fast.go): as a batch, parsed
//     again on every call, it cost the server twice a bare commit. Caller
//     transactions (Begin) use a second pool without multi-statements, so
//     application SQL keeps the driver's defaults.
//   - Every adapter transaction is READ COMMITTED, set per transaction in
//     the same round trip as START TRANSACTION: InnoDB then takes record
//     locks only, and the reads inside INSERT ... SELECT and UPDATE ...
//     (SELECT) are consistent reads that lock nothing. Locking statements
//     address rows by primary key or an index-prefix equality, never a
//     secondary-index range, whose first record past the end (another
//     actor's row) InnoDB would lock.
//   - Claims follow the reference design's advice for InnoDB: a read-only
//     candidate scan over the head_due index, then SELECT ... FOR UPDATE
//     SKIP LOCKED by primary key on the chosen actors with the eligibility
//     checked again under the lock, so no lock ever spans an index range.
//   - Fencing opens a take or commit: a no-op UPDATE locks the actor row
//     by primary key until COMMIT, so nobody claims the actor in between,
//     then a query evaluates owner, generation and an unexpired lease under
//     that lock into @ductus_ok, which guards every later statement, so a
//     stale owner's batch writes nothing. (A query, not the UPDATE's row
//     count: MariaDB runs a dead client's batch on, and ROW_COUNT() then
//     reads -1; see turn.go.) A commit also requires its messages to be
//     claimed by its generation, so a commit retried after it landed is
//     refused.
//   - Without RETURNING, results come from SELECTs in the same batch
//     (LAST_INSERT_ID(), ROW_COUNT(), the rows just written) or, for a
//     Tell, from the OK packets' insert IDs.
//   - A deadlock or lock wait timeout in the adapter's own transaction
//     never reached COMMIT, so the transaction runs again (a few times)
//     before the error reaches the caller.
//   - Cross-process wake-ups poll a small signal table (see Listen); the
//     runtime's debounced work signals are written on their own, after
//     the enqueue committed (Notify).
//
// Times are DATETIME(6) in UTC, computed by the server (NOW(6)); every
// session's time_zone is '+00:00'.
package mysql

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"strings"
	"sync/atomic"
	"time"

	"github.com/go-sql-driver/mysql"
	"github.com/uptrace/bun/dialect/mysqldialect"

	"github.com/ductus/ductus/adapters/internal/readside"
	"github.com/ductus/ductus/adapters/internal/sqlrow"
	"github.com/ductus/ductus/integration/ixstore"
	"github.com/ductus/ductus/migrations"
	"github.com/ductus/ductus/runtime/store"
	"github.com/ductus/ductus/runtime/store/sqltx"
)

// Config opens a MySQL or MariaDB database.
type Config struct {
	// DSN is a go-sql-driver DSN naming the database, e.g.
	// "ductus:secret@tcp(db:3306)/ductus?tls=true". Its parameters (TLS,
	// timeouts, charset...) are kept; the adapter adds parseTime, loc=UTC,
	// time_zone='+00:00' and, on its own pool, multi-statements,
	// interpolated arguments and CLIENT_FOUND_ROWS.
	DSN string
	// MaxOpenConns bounds the adapter's pool (default 16); MaxIdleConns
	// defaults to MaxOpenConns.
	MaxOpenConns int
	MaxIdleConns int
	// ConnMaxLifetime recycles connections (default 30 minutes; negative =
	// never), so a failover's new primary is picked up.
	ConnMaxLifetime time.Duration
	// CallerConns bounds the pool of caller transactions (Begin); default 4.
	CallerConns int
	// LockWaitTimeout is innodb_lock_wait_timeout for the adapter's
	// sessions, in whole seconds (default 10s).
	LockWaitTimeout time.Duration
	// IdleTxTimeout (MariaDB only: idle_transaction_timeout) ends an
	// adapter transaction left idle between its round trips, say by a
	// process stopped with SIGSTOP, so its row locks do not outlive it.
	// Default 10s; negative disables it. MySQL has no such setting.
	IdleTxTimeout time.Duration
	// SignalPoll is how often Listen polls the signal table (default 25ms,
	// at least 1ms).
	SignalPoll time.Duration
	// Logger receives the adapter's own lines (the server's flavor and
	// version at open, signal polls that fail, the driver's connection
	// errors); default: discard, as in the other adapters and the host.
	// The runtime's lines go to host.Config.Logger; pass the same logger
	// to both.
	Logger *slog.Logger
	// Statements, when set, counts every statement the backend sends:
	// each statement of a multi-statement query, and on the caller pool
	// each driver call (benchmarks report statements per turn from it).
	Statements *atomic.Int64
}

// Backend is a store.Backend on one MySQL or MariaDB database.
type Backend struct {
	db       *sql.DB // the adapter's own pool (multi-statements)
	caller   *sql.DB // caller transactions
	version  ServerVersion
	maxBatch int // bytes per multi-statement query
	poll     time.Duration
	log      *slog.Logger

	pks        store.PKCache
	roundTrips atomic.Int64
	retries    atomic.Int64
	statements *atomic.Int64

	readSide *readside.Reader // the engine store's read side, on db
}

var (
	_ store.Backend   = (*Backend)(nil)
	_ store.Signaler  = (*Backend)(nil)
	_ store.Notifier  = (*Backend)(nil)
	_ ixstore.Backend = (*Backend)(nil)
)

// Stats counts the round trips and statements the adapter has sent, and
// the transactions it ran again after a deadlock or lock wait timeout.
type Stats struct {
	RoundTrips int64
	Statements int64
	Retries    int64
}

// Stats returns the counters (benchmarks divide them by turns).
func (b *Backend) Stats() Stats {
	return Stats{RoundTrips: b.roundTrips.Load(), Statements: b.statements.Load(), Retries: b.retries.Load()}
}

// Version is the server's flavor and version, read at Open.
func (b *Backend) Version() ServerVersion { return b.version }

// Open connects, checks the server (version, InnoDB, binary log format),
// applies the schema and checks every table is InnoDB.
func Open(ctx context.Context, cfg Config) (*Backend, error) {
	if cfg.DSN == "" {
		return nil, errors.New("mysql: Config.DSN is required")
	}
	base, err := mysql.ParseDSN(cfg.DSN)
	if err != nil {
		return nil, fmt.Errorf("mysql: the DSN is malformed: %w", err)
	}
	if base.DBName == "" {
		return nil, errors.New("mysql: the DSN must name a database (user:pass@tcp(host:3306)/dbname)")
	}
	if cfg.MaxOpenConns <= 0 {
		cfg.MaxOpenConns = 16
	}
	if cfg.MaxIdleConns <= 0 {
		cfg.MaxIdleConns = cfg.MaxOpenConns
	}
	if cfg.ConnMaxLifetime == 0 {
		cfg.ConnMaxLifetime = 30 * time.Minute
	}
	if cfg.CallerConns <= 0 {
		cfg.CallerConns = 4
	}
	if cfg.LockWaitTimeout <= 0 {
		cfg.LockWaitTimeout = 10 * time.Second
	}
	if cfg.IdleTxTimeout == 0 {
		cfg.IdleTxTimeout = 10 * time.Second
	}
	if cfg.SignalPoll <= 0 {
		cfg.SignalPoll = 25 * time.Millisecond
	}
	cfg.SignalPoll = max(cfg.SignalPoll, time.Millisecond)
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}

	base.Logger = driverLog{cfg.Logger}
	own := ownConfig(base, cfg)
	probe, err := openPool(own, 1, 1, cfg.ConnMaxLifetime)
	if err != nil {
		return nil, err
	}
	v, maxPacket, err := checkServer(ctx, probe)
	probe.Close()
	if err != nil {
		return nil, err
	}
	if v.Flavor == FlavorMariaDB && cfg.IdleTxTimeout > 0 {
		own.Params["idle_transaction_timeout"] = fmt.Sprint(max(1, int(cfg.IdleTxTimeout/time.Second)))
	}
	db, err := openPool(own, cfg.MaxOpenConns, cfg.MaxIdleConns, cfg.ConnMaxLifetime)
	if err != nil {
		return nil, err
	}
	cc := callerConfig(base)
	var caller *sql.DB
	if cfg.Statements != nil {
		caller = sql.OpenDB(sqltx.CountingConnector(&mysql.MySQLDriver{}, cc.FormatDSN(), cfg.Statements))
		caller.SetMaxOpenConns(cfg.CallerConns)
		caller.SetMaxIdleConns(cfg.CallerConns)
		caller.SetConnMaxLifetime(max(cfg.ConnMaxLifetime, 0))
	} else if caller, err = openPool(cc, cfg.CallerConns, cfg.CallerConns, cfg.ConnMaxLifetime); err != nil {
		db.Close()
		return nil, err
	}
	b := &Backend{db: db, caller: caller, version: v, poll: cfg.SignalPoll, log: cfg.Logger,
		maxBatch: max(64<<10, min(maxPacket/2, 8<<20)), statements: cfg.Statements}
	if b.statements == nil {
		b.statements = new(atomic.Int64)
	}
	b.readSide = readside.New(db, mysqldialect.New(), classify)
	if err := b.migrate(ctx, migrations.For, runtimeMigrations); err != nil {
		b.Close()
		return nil, err
	}
	cfg.Logger.Info("mysql: connected", "flavor", v.Flavor, "version", fmt.Sprintf("%d.%d.%d", v.Major, v.Minor, v.Patch),
		"server", v.Raw, "database", base.DBName, "addr", base.Addr)
	return b, nil
}

// ownConfig is the adapter's pool: the user's DSN plus what the adapter's
// SQL relies on.
func ownConfig(base *mysql.Config, cfg Config) *mysql.Config {
	c := base.Clone()
	c.ParseTime = true
	c.Loc = time.UTC
	c.MultiStatements = true
	c.InterpolateParams = true
	c.ClientFoundRows = true
	c.MaxAllowedPacket = 0 // read the server's, so interpolation never exceeds it
	c.Apply(mysql.TimeTruncate(time.Microsecond))
	if c.Params == nil {
		c.Params = map[string]string{}
	}
	c.Params["time_zone"] = "'+00:00'"
	c.Params["sql_mode"] = "'STRICT_ALL_TABLES,ERROR_FOR_DIVISION_BY_ZERO,NO_ENGINE_SUBSTITUTION'"
	c.Params["innodb_lock_wait_timeout"] = fmt.Sprint(max(1, int(cfg.LockWaitTimeout/time.Second)))
	return c
}

// callerConfig is the pool of caller transactions: the user's DSN with UTC
// times (the enqueue statements compute due times with NOW(6)) and strict
// mode added to the session's own sql_mode unless the DSN sets one.
// Parameters are interpolated by the driver, as on the adapter's own pool:
// otherwise every statement with arguments is a Prepare and an Execute,
// two round trips, and the engine's intake (seven statements in a caller
// transaction) spent most of its time waiting on them. The own pool's
// connector already refuses a DSN whose collation makes interpolation
// unsafe, and the server's max_allowed_packet is read at connect, so a
// statement too large to interpolate is prepared instead.
func callerConfig(base *mysql.Config) *mysql.Config {
	c := base.Clone()
	c.ParseTime = true
	c.Loc = time.UTC
	c.InterpolateParams = true
	c.MaxAllowedPacket = 0
	c.Apply(mysql.TimeTruncate(time.Microsecond))
	if c.Params == nil {
		c.Params = map[string]string{}
	}
	c.Params["time_zone"] = "'+00:00'"
	if _, ok := c.Params["sql_mode"]; !ok {
		c.Params["sql_mode"] = "CONCAT(@@sql_mode, ',STRICT_ALL_TABLES')"
	}
	return c
}

func openPool(c *mysql.Config, open, idle int, life time.Duration) (*sql.DB, error) {
	conn, err := mysql.NewConnector(c)
	if err != nil {
		return nil, fmt.Errorf("mysql: %w", err)
	}
	db := sql.OpenDB(conn)
	db.SetMaxOpenConns(open)
	db.SetMaxIdleConns(idle)
	if life > 0 {
		db.SetConnMaxLifetime(life)
	}
	return db, nil
}

// checkServer reads the version and settings the adapter depends on and
// refuses a server it cannot run on, naming what it found.
func checkServer(ctx context.Context, db *sql.DB) (ServerVersion, int, error) {
	var raw, engine, binlogFormat string
	var logBin, maxPacket int64
	err := db.QueryRowContext(ctx, `SELECT VERSION(), @@default_storage_engine, @@log_bin, @@binlog_format, @@max_allowed_packet`).
		Scan(&raw, &engine, &logBin, &binlogFormat, &maxPacket)
	if err != nil {
		return ServerVersion{}, 0, classify("connect and read the server's version", err)
	}
	v, err := ParseVersion(raw)
	if err != nil {
		return v, 0, err
	}
	if err := v.Supported(); err != nil {
		return v, 0, err
	}
	if !strings.EqualFold(engine, "InnoDB") {
		return v, 0, fmt.Errorf("mysql: the default storage engine is %s; Ductus needs InnoDB (transactions, row locks): set default_storage_engine=InnoDB", engine)
	}
	if logBin == 1 && strings.EqualFold(binlogFormat, "STATEMENT") {
		return v, 0, errors.New("mysql: binlog_format is STATEMENT, under which InnoDB refuses writes at READ COMMITTED; use ROW or MIXED")
	}
	return v, int(maxPacket), nil
}

// Name implements store.Backend.
func (b *Backend) Name() string { return "mysql" }

// Close implements store.Backend.
func (b *Backend) Close() error { return errors.Join(b.db.Close(), b.caller.Close()) }

// Now implements store.Backend.
func (b *Backend) Now(ctx context.Context) (time.Time, error) {
	var t time.Time
	b.roundTrips.Add(1)
	b.statements.Add(1)
	if err := b.db.QueryRowContext(ctx, "SELECT NOW(6)").Scan(&t); err != nil {
		return time.Time{}, classify("read the clock", err)
	}
	return t, nil
}

// Begin implements store.Backend: a READ COMMITTED transaction on the
// caller pool (one statement per round trip, the driver's defaults). MySQL
// has no per-transaction durability switch (innodb_flush_log_at_trx_commit
// is global only), so Relaxed changes nothing here.
func (b *Backend) Begin(ctx context.Context, _ store.TxOptions) (store.Tx, error) {
	tx, err := b.caller.BeginTx(ctx, &sql.TxOptions{Isolation: sql.LevelReadCommitted})
	if err != nil {
		return nil, classify("begin", err)
	}
	return &sqltx.Tx{Tx: tx, Name: "mysql", Classify: classify}, nil
}

// The tables recording each migration line's applied versions.
const (
	runtimeMigrations = "ductus_schema_migrations"
	engineMigrations  = "ductus_ix_schema_migrations"
)

// migrate applies one line of the embedded schema (line returns its files,
// table records them) under a named lock (so processes starting together
// do not race), then checks every ductus_ table is InnoDB. MySQL commits
// DDL implicitly, so files are written to be re-run.
func (b *Backend) migrate(ctx context.Context, line func(backend string) (fs.FS, error), table string) error {
	conn, err := b.caller.Conn(ctx)
	if err != nil {
		return classify("connect", err)
	}
	defer conn.Close()
	if err := checkEngines(ctx, conn); err != nil {
		return err
	}
	var got sql.NullInt64
	if err := conn.QueryRowContext(ctx, "SELECT GET_LOCK(CONCAT('ductus_migrate.', DATABASE()), 60)").Scan(&got); err != nil {
		return classify("lock the schema for migration", err)
	}
	if got.Int64 != 1 {
		return errors.New("mysql: another process held the migration lock for 60s")
	}
	defer conn.ExecContext(context.WithoutCancel(ctx), "SELECT RELEASE_LOCK(CONCAT('ductus_migrate.', DATABASE()))")
	fsys, err := line("mysql")
	if err != nil {
		return fmt.Errorf("mysql: %w", err)
	}
	if err := store.Migrate(ctx, migrator{conn: conn, table: table}, fsys); err != nil {
		return fmt.Errorf("mysql: %w", err)
	}
	return checkEngines(ctx, conn)
}

func checkEngines(ctx context.Context, conn *sql.Conn) error {
	rows, err := conn.QueryContext(ctx, `SELECT TABLE_NAME, COALESCE(ENGINE, '') FROM information_schema.TABLES
		WHERE TABLE_SCHEMA = DATABASE() AND TABLE_NAME LIKE 'ductus\_%' AND TABLE_TYPE = 'BASE TABLE'`)
	if err != nil {
		return classify("check the tables' storage engine", err)
	}
	defer rows.Close()
	var bad []string
	for rows.Next() {
		var name, engine string
		if err := rows.Scan(&name, &engine); err != nil {
			return classify("check the tables' storage engine", err)
		}
		if !strings.EqualFold(engine, "InnoDB") {
			bad = append(bad, fmt.Sprintf("%s uses %s", name, engine))
		}
	}
	if err := rows.Err(); err != nil {
		return classify("check the tables' storage engine", err)
	}
	if len(bad) > 0 {
		return fmt.Errorf("mysql: Ductus needs InnoDB tables, but %s (convert with ALTER TABLE ... ENGINE=InnoDB)", strings.Join(bad, ", "))
	}
	return nil
}

// migrator applies migration files on one connection, recording them in
// table.
type migrator struct {
	conn  *sql.Conn
	table string
}

// MigrationsApplied implements store.Migrator.
func (m migrator) MigrationsApplied(ctx context.Context) (map[int]bool, error) {
	if _, err := m.conn.ExecContext(ctx, `CREATE TABLE IF NOT EXISTS `+m.table+` (
		version INT NOT NULL PRIMARY KEY, name VARCHAR(255) NOT NULL, applied_at DATETIME(6) NOT NULL) ENGINE=InnoDB`); err != nil {
		return nil, classify("create the migrations table", err)
	}
	rows, err := m.conn.QueryContext(ctx, "SELECT version FROM "+m.table)
	if err != nil {
		return nil, classify("read applied migrations", err)
	}
	defer rows.Close()
	out, err := sqlrow.Versions(rows)
	return out, classify("read applied migrations", err)
}

// MigrationApply implements store.Migrator, statement by statement: DDL
// commits implicitly on MySQL, so the files are written to be re-run
// (IF NOT EXISTS) and an index or procedure that exists already is skipped.
func (m migrator) MigrationApply(ctx context.Context, f store.MigrationFile) error {
	for i, s := range store.SplitStatements(f.SQL) {
		if _, err := m.conn.ExecContext(ctx, s); err != nil {
			if existedBefore(err, s) {
				continue // applied before the file was recorded
			}
			return classify(fmt.Sprintf("apply %s statement %d", f.Name, i+1), err)
		}
	}
	_, err := m.conn.ExecContext(ctx, "INSERT INTO "+m.table+" (version, name, applied_at) VALUES (?, ?, UTC_TIMESTAMP(6))", f.Version, f.Name)
	return classify("record "+f.Name, err)
}

// driverLog routes the driver's own messages (a connection that broke,
// say; the error also reaches the caller) to the backend's logger.
type driverLog struct{ l *slog.Logger }

func (d driverLog) Print(v ...any) { d.l.Warn("mysql: driver: " + fmt.Sprint(v...)) }

// alreadyExists maps the statements MySQL cannot write IF NOT EXISTS or
// IF EXISTS (CREATE INDEX; CREATE PROCEDURE before 8.0.29; DROP INDEX,
// which only MariaDB can write IF EXISTS) to the error each raises when it
// ran before: its object exists, or is gone.
var alreadyExists = map[string]uint16{"CREATE INDEX": 1061, "CREATE PROCEDURE": 1304, "DROP INDEX": 1091}

// existedBefore reports whether statement s failed only because it ran
// before (what it creates exists, what it drops is gone): a file
// interrupted after it ran is run again.
func existedBefore(err error, s string) bool {
	var me *mysql.MySQLError
	if !errors.As(err, &me) {
		return false
	}
	head := strings.ToUpper(withoutComments(s))
	for prefix, code := range alreadyExists {
		if me.Number == code && strings.HasPrefix(head, prefix) {
			return true
		}
	}
	return false
}

// withoutComments drops the comment lines a statement of a migration file
// opens with.
func withoutComments(s string) string {
	for {
		s = strings.TrimSpace(s)
		if !strings.HasPrefix(s, "--") {
			return s
		}
		i := strings.IndexByte(s, '\n')
		if i < 0 {
			return ""
		}
		s = s[i+1:]
	}
}

// Exec runs one statement of the caller's own on the caller pool, outside
// any transaction, and returns the rows it affected: for tools and tests
// that change the database on purpose (a test that takes a table away).
// The runtime and the engine never call it.
func (b *Backend) Exec(ctx context.Context, query string, args ...any) (int64, error) {
	res, err := b.caller.ExecContext(ctx, query, args...)
	if err != nil {
		return 0, classify("caller statement", err)
	}
	return res.RowsAffected()
}
