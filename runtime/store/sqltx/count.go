package sqltx

import (
	"context"
	"database/sql/driver"
	"sync/atomic"
)

// CountingConnector wraps a database/sql driver so every statement the
// pool sends (queries, executions, BEGIN and COMMIT/ROLLBACK) adds one to n.
// The benchmark harness uses it to report statements per turn honestly:
// counted at the driver, not estimated from the code.
func CountingConnector(drv driver.Driver, dsn string, n *atomic.Int64) driver.Connector {
	return &countingConnector{drv: drv, dsn: dsn, n: n}
}

type countingConnector struct {
	drv driver.Driver
	dsn string
	n   *atomic.Int64
}

func (c *countingConnector) Connect(context.Context) (driver.Conn, error) {
	conn, err := c.drv.Open(c.dsn)
	if err != nil {
		return nil, err
	}
	return &countingConn{Conn: conn, n: c.n}, nil
}

func (c *countingConnector) Driver() driver.Driver { return c.drv }

type countingConn struct {
	driver.Conn
	n *atomic.Int64
}

func (c *countingConn) ExecContext(ctx context.Context, q string, args []driver.NamedValue) (driver.Result, error) {
	e, ok := c.Conn.(driver.ExecerContext)
	if !ok {
		return nil, driver.ErrSkip
	}
	c.n.Add(1)
	return e.ExecContext(ctx, q, args)
}

func (c *countingConn) QueryContext(ctx context.Context, q string, args []driver.NamedValue) (driver.Rows, error) {
	qc, ok := c.Conn.(driver.QueryerContext)
	if !ok {
		return nil, driver.ErrSkip
	}
	c.n.Add(1)
	return qc.QueryContext(ctx, q, args)
}

func (c *countingConn) PrepareContext(ctx context.Context, q string) (driver.Stmt, error) {
	var s driver.Stmt
	var err error
	if p, ok := c.Conn.(driver.ConnPrepareContext); ok {
		s, err = p.PrepareContext(ctx, q)
	} else {
		s, err = c.Conn.Prepare(q)
	}
	if err != nil {
		return nil, err
	}
	return &countingStmt{Stmt: s, n: c.n}, nil
}

func (c *countingConn) BeginTx(ctx context.Context, opts driver.TxOptions) (driver.Tx, error) {
	var tx driver.Tx
	var err error
	if b, ok := c.Conn.(driver.ConnBeginTx); ok {
		tx, err = b.BeginTx(ctx, opts)
	} else {
		//lint:ignore SA1019 the fallback database/sql itself uses for a driver without BeginTx
		tx, err = c.Conn.Begin()
	}
	if err != nil {
		return nil, err
	}
	c.n.Add(1)
	return &countingTx{Tx: tx, n: c.n}, nil
}

func (c *countingConn) Ping(ctx context.Context) error {
	if p, ok := c.Conn.(driver.Pinger); ok {
		return p.Ping(ctx)
	}
	return nil
}

func (c *countingConn) ResetSession(ctx context.Context) error {
	if r, ok := c.Conn.(driver.SessionResetter); ok {
		return r.ResetSession(ctx)
	}
	return nil
}

func (c *countingConn) IsValid() bool {
	if v, ok := c.Conn.(driver.Validator); ok {
		return v.IsValid()
	}
	return true
}

func (c *countingConn) CheckNamedValue(nv *driver.NamedValue) error {
	if ch, ok := c.Conn.(driver.NamedValueChecker); ok {
		return ch.CheckNamedValue(nv)
	}
	return driver.ErrSkip
}

type countingStmt struct {
	driver.Stmt
	n *atomic.Int64
}

func (s *countingStmt) ExecContext(ctx context.Context, args []driver.NamedValue) (driver.Result, error) {
	s.n.Add(1)
	if e, ok := s.Stmt.(driver.StmtExecContext); ok {
		return e.ExecContext(ctx, args)
	}
	vals, err := values(args)
	if err != nil {
		return nil, err
	}
	//lint:ignore SA1019 the fallback for a driver without ExecContext, as in database/sql
	return s.Stmt.Exec(vals)
}

func (s *countingStmt) QueryContext(ctx context.Context, args []driver.NamedValue) (driver.Rows, error) {
	s.n.Add(1)
	if q, ok := s.Stmt.(driver.StmtQueryContext); ok {
		return q.QueryContext(ctx, args)
	}
	vals, err := values(args)
	if err != nil {
		return nil, err
	}
	//lint:ignore SA1019 the fallback for a driver without QueryContext, as in database/sql
	return s.Stmt.Query(vals)
}

func (s *countingStmt) CheckNamedValue(nv *driver.NamedValue) error {
	if ch, ok := s.Stmt.(driver.NamedValueChecker); ok {
		return ch.CheckNamedValue(nv)
	}
	return driver.ErrSkip
}

func values(args []driver.NamedValue) ([]driver.Value, error) {
	out := make([]driver.Value, len(args))
	for i, a := range args {
		out[i] = a.Value
	}
	return out, nil
}

type countingTx struct {
	driver.Tx
	n *atomic.Int64
}

func (t *countingTx) Commit() error {
	t.n.Add(1)
	return t.Tx.Commit()
}

func (t *countingTx) Rollback() error {
	t.n.Add(1)
	return t.Tx.Rollback()
}
