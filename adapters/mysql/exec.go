package mysql

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"io"
	"math/rand/v2"
	"net"
	"strings"
	"time"

	"github.com/go-sql-driver/mysql"

	"github.com/ductus/ductus/runtime/store"
	"github.com/ductus/ductus/runtime/store/sqltx"
)

// A transaction here is a short exchange of batches: a batch is every
// statement the adapter can write before it needs an answer from the
// server, sent as one multi-statement COM_QUERY (arguments interpolated by
// the driver, so nothing is prepared). A typical write transaction is two
// round trips: "lock and read" (START TRANSACTION folded in), then "write
// and COMMIT". Inside a caller's transaction (store.Tx from Begin, on a pool
// without multi-statements) the same statements go one by one.

// stmt is one statement of a batch.
type stmt struct {
	q    string
	args []any
	// scan reads the statement's result set; nil for statements that
	// return none.
	scan func(*sql.Rows) error
}

// batch is an ordered list of statements for one purpose.
type batch struct {
	op    string
	stmts []stmt
	// after runs once the batch has run successfully (results that need
	// several result sets, such as duplicates copying a first message's ID).
	after []func()
}

func newBatch(op string) *batch { return &batch{op: op} }

// exec adds a statement without a result set.
func (bt *batch) exec(q string, args ...any) { bt.stmts = append(bt.stmts, stmt{q: q, args: args}) }

// query adds a statement whose result set scan reads.
func (bt *batch) query(scan func(*sql.Rows) error, q string, args ...any) {
	bt.stmts = append(bt.stmts, stmt{q: q, args: args, scan: scan})
}

func (bt *batch) empty() bool { return len(bt.stmts) == 0 }

// size estimates a statement's bytes on the wire after interpolation.
func (s stmt) size() int {
	n := len(s.q) + 2
	for _, a := range s.args {
		switch v := a.(type) {
		case string:
			n += 2*len(v) + 3
		case []byte:
			n += 2*len(v) + 10
		default:
			n += 28
		}
	}
	return n
}

// session is one transaction: the adapter's own on a pooled connection, or
// the caller's.
type session struct {
	b    *Backend
	conn *sql.Conn // own transaction (multi-statements)
	tx   *sql.Tx   // the caller's transaction (one statement at a time)
	open bool      // START TRANSACTION sent and not yet ended
}

// Every adapter transaction is READ COMMITTED, set per transaction in the
// same round trip as START TRANSACTION: locking reads then take record
// locks only (no gap or next-key locks), and the non-locking reads inside
// INSERT ... SELECT and UPDATE ... (SELECT) are consistent reads that lock
// nothing.
var beginStmts = []stmt{{q: "SET TRANSACTION ISOLATION LEVEL READ COMMITTED"}, {q: "START TRANSACTION"}}

// run sends a batch (opening the transaction with the first one).
func (s *session) run(ctx context.Context, bt *batch) error {
	if bt.empty() {
		return nil
	}
	var err error
	if s.tx != nil {
		err = s.b.runSeq(ctx, s.tx, bt.op, bt.stmts)
	} else {
		stmts := bt.stmts
		if !s.open {
			stmts = append(append(make([]stmt, 0, len(stmts)+2), beginStmts...), stmts...)
			s.open = true
		}
		err = s.b.runMulti(ctx, s.conn, bt.op, stmts)
	}
	if err != nil {
		return err
	}
	for _, f := range bt.after {
		f()
	}
	return nil
}

// commit sends the batch with COMMIT at its end. Inside a caller's
// transaction the caller commits, so the batch runs as is.
func (s *session) commit(ctx context.Context, bt *batch) error {
	if s.tx != nil {
		return s.run(ctx, bt)
	}
	if bt.empty() && !s.open {
		return nil
	}
	bt.exec("COMMIT")
	if err := s.run(ctx, bt); err != nil {
		return err
	}
	s.open = false
	return nil
}

// rollback ends an open transaction. A connection that cannot roll back
// is discarded, so no transaction ever returns to the pool.
func (s *session) rollback(ctx context.Context) {
	if s.conn == nil || !s.open {
		return
	}
	s.open = false
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	s.b.roundTrips.Add(1)
	s.b.statements.Add(1)
	if _, err := s.conn.ExecContext(rctx, "ROLLBACK"); err != nil {
		_ = s.conn.Raw(func(any) error { return driver.ErrBadConn })
	}
}

// runMulti sends statements as multi-statement queries, as few as the
// server's max_allowed_packet allows.
func (b *Backend) runMulti(ctx context.Context, conn *sql.Conn, op string, stmts []stmt) error {
	for len(stmts) > 0 {
		n, size := 0, 0
		for n < len(stmts) && (n == 0 || size+stmts[n].size() <= b.maxBatch) {
			size += stmts[n].size()
			n++
		}
		if err := b.runChunk(ctx, conn, op, stmts[:n]); err != nil {
			return err
		}
		stmts = stmts[n:]
	}
	return nil
}

func (b *Backend) runChunk(ctx context.Context, conn *sql.Conn, op string, stmts []stmt) error {
	b.roundTrips.Add(1)
	b.statements.Add(int64(len(stmts)))
	var q strings.Builder
	var args []any
	scans := 0
	for i, s := range stmts {
		if i > 0 {
			q.WriteString(";\n")
		}
		q.WriteString(s.q)
		args = append(args, s.args...)
		if s.scan != nil {
			scans++
		}
	}
	if scans == 0 {
		_, err := conn.ExecContext(ctx, q.String(), args...)
		return classify(op, err)
	}
	rows, err := conn.QueryContext(ctx, q.String(), args...)
	if err != nil {
		return classify(op, err)
	}
	defer rows.Close()
	first := true
	for _, s := range stmts {
		if s.scan == nil {
			continue
		}
		if !first && !rows.NextResultSet() {
			if err := rows.Err(); err != nil {
				return classify(op, err)
			}
			return classify(op, errors.New("a result set is missing"))
		}
		first = false
		if err := s.scan(rows); err != nil {
			return classify(op, err)
		}
		if err := rows.Err(); err != nil {
			return classify(op, err)
		}
	}
	// Close reads the statements after the last result set (COMMIT among
	// them) and reports their errors.
	return classify(op, rows.Close())
}

// runSeq runs statements one by one in a caller's transaction.
func (b *Backend) runSeq(ctx context.Context, tx *sql.Tx, op string, stmts []stmt) error {
	for _, s := range stmts {
		b.roundTrips.Add(1)
		b.statements.Add(1)
		if s.scan == nil {
			if _, err := tx.ExecContext(ctx, s.q, s.args...); err != nil {
				return classify(op, err)
			}
			continue
		}
		rows, err := tx.QueryContext(ctx, s.q, s.args...)
		if err != nil {
			return classify(op, err)
		}
		err = s.scan(rows)
		if err == nil {
			err = rows.Err()
		}
		if cerr := rows.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			return classify(op, err)
		}
	}
	return nil
}

// maxTxnAttempts bounds the adapter's own retries of a transaction that a
// deadlock or lock wait timeout rolled back before COMMIT.
const maxTxnAttempts = 8

// txn runs fn in a transaction: the caller's (outer), used as is, or the
// adapter's own on a pooled connection. An own transaction that fails with
// a deadlock (1213) or a lock wait timeout (1205) never reached COMMIT, so
// nothing of it persisted and it is run again, a few times, before the
// error reaches the caller; a lost connection is left to the caller, since
// its COMMIT may have landed.
func (b *Backend) txn(ctx context.Context, outer store.Tx, fn func(s *session) error) error {
	if outer != nil {
		if t, ok := outer.(*sqltx.Tx); !ok || t.Name != "mysql" {
			return errors.New("mysql: the transaction does not belong to this backend")
		}
		return sqltx.Run(ctx, nil, nil, outer, classify, func(tx *sql.Tx) error {
			return fn(&session{b: b, tx: tx})
		})
	}
	delay := 2 * time.Millisecond
	for attempt := 1; ; attempt++ {
		err := b.txnOnce(ctx, fn)
		if err == nil || attempt == maxTxnAttempts || !(rolledBack(err) || errors.Is(err, errActorRace)) || ctx.Err() != nil {
			return err
		}
		b.retries.Add(1)
		b.log.Debug("mysql: the server rolled the transaction back; running it again", "attempt", attempt, "err", err)
		t := time.NewTimer(delay/2 + rand.N(delay))
		select {
		case <-ctx.Done():
			t.Stop()
			return errors.Join(err, ctx.Err())
		case <-t.C:
		}
		delay = min(delay*2, 200*time.Millisecond)
	}
}

func (b *Backend) txnOnce(ctx context.Context, fn func(s *session) error) error {
	conn, err := b.db.Conn(ctx)
	if err != nil {
		return classify("connect", err)
	}
	defer conn.Close()
	s := &session{b: b, conn: conn}
	err = fn(s)
	s.rollback(ctx)
	return err
}

// MySQL and MariaDB error numbers the adapter treats as transient, and
// whether each guarantees that the transaction did not commit: the server
// refused a statement (or the connection) and said so, before COMMIT ran.
// The others come from a connection that died or was killed with the
// statements on the wire, COMMIT perhaps among them: their outcome is
// unknown.
var transientCodes = map[uint16]struct {
	what       string
	rolledBack bool
}{
	1205: {"lock wait timeout", true},
	1213: {"deadlock", true},
	1290: {"server is read-only (failover)", true},
	1836: {"server is read-only (failover)", true},
	1792: {"read-only transaction (failover)", true},
	1040: {"too many connections", true},
	1047: {"node not ready (Galera)", true},
	1969: {"statement timeout (MariaDB max_statement_time)", true},
	3024: {"statement timeout (MySQL max_execution_time)", true},
	2006: {"server gone away", false},
	2013: {"lost connection during query", false},
	1927: {"connection killed", false},
	1317: {"query interrupted", false},
	1053: {"server shutdown in progress", false},
	1158: {"network read error", false},
	1159: {"network read timeout", false},
	1160: {"network write error", false},
	1161: {"network write timeout", false},
	4031: {"disconnected by the server for inactivity", false},
}

// classify is the adapter's one error-mapping function: the errors above
// and the driver's connection failures are transient; everything else is
// permanent. op names the statement's (or batch's) purpose.
func classify(op string, err error) error {
	if err == nil {
		return nil
	}
	var se *store.Error
	if errors.As(err, &se) || errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return err
	}
	transient, rolledBack := kind(err)
	return &store.Error{Backend: "mysql", Op: op, Transient: transient, RolledBack: rolledBack, Err: err}
}

// kind reports whether err is transient and, if it is, whether nothing of
// the transaction persisted.
func kind(err error) (transient, rolledBack bool) {
	var me *mysql.MySQLError
	if errors.As(err, &me) {
		c, ok := transientCodes[me.Number]
		return ok, ok && c.rolledBack
	}
	// database/sql's contract: a driver returns ErrBadConn only when the
	// server cannot have run the statement; a failed dial sent nothing.
	var oe *net.OpError
	if errors.Is(err, driver.ErrBadConn) || (errors.As(err, &oe) && oe.Op == "dial") {
		return true, true
	}
	var ne net.Error
	return errors.Is(err, mysql.ErrInvalidConn) || errors.Is(err, io.ErrUnexpectedEOF) ||
		errors.Is(err, io.EOF) || errors.As(err, &ne), false
}

// rolledBack reports a deadlock or lock wait timeout: the statement (or
// the whole transaction) was rolled back before COMMIT.
func rolledBack(err error) bool {
	var me *mysql.MySQLError
	return errors.As(err, &me) && (me.Number == 1213 || me.Number == 1205)
}

// isDuplicate reports a unique-key violation (1062).
func isDuplicate(err error) bool {
	var me *mysql.MySQLError
	return errors.As(err, &me) && me.Number == 1062
}

// Scanners for the common result shapes.

func scanExists(ok *bool) func(*sql.Rows) error {
	return func(rows *sql.Rows) error {
		for rows.Next() {
			*ok = true
		}
		return nil
	}
}

func scanInt(v *int64) func(*sql.Rows) error {
	return func(rows *sql.Rows) error {
		for rows.Next() {
			var n sql.NullInt64
			if err := rows.Scan(&n); err != nil {
				return err
			}
			*v = n.Int64
		}
		return nil
	}
}

func scanInts(into *[]int64) func(*sql.Rows) error {
	return func(rows *sql.Rows) error {
		for rows.Next() {
			var n int64
			if err := rows.Scan(&n); err != nil {
				return err
			}
			*into = append(*into, n)
		}
		return nil
	}
}
