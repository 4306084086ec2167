package main

import (
	"context"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/ductus/ductus/adapters/postgres"
	"github.com/ductus/ductus/internal/testdb"
)

func init() {
	backends["postgres"] = func(o options) (env, error) {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		srv, err := testdb.Postgres(ctx)
		if err != nil {
			return nil, fmt.Errorf("postgres: %w", err)
		}
		return &postgresEnv{srv: srv}, nil
	}
}

// postgresEnv makes each scenario a fresh database on the server named by
// DUCTUS_TEST_POSTGRES (else the local one) and drops it afterwards.
type postgresEnv struct{ srv *testdb.Server }

func (e *postgresEnv) fresh(ctx context.Context) (string, func(), error) {
	db, err := e.srv.Create(ctx, "ductus_bench_")
	if err != nil {
		return "", nil, err
	}
	return db.DSN, func() { _ = db.Drop(context.Background()) }, nil
}

func (e *postgresEnv) open(ctx context.Context, dsn string, count *counter) (backend, error) {
	cfg := postgres.Config{DSN: dsn}
	if count != nil {
		cfg.Pool = func(pc *pgxpool.Config) { pc.ConnConfig.Tracer = &statementCounter{n: count} }
	}
	return postgres.Open(ctx, cfg)
}

// baseline is the server's durable-commit limit through the same pool: a
// one-row INSERT and COMMIT per transaction.
func (e *postgresEnv) baseline(ctx context.Context, dsn string, conns int, d time.Duration) (int, error) {
	pc, err := pgxpool.ParseConfig(dsn)
	if err != nil {
		return 0, err
	}
	pc.MaxConns = int32(max(conns, 1))
	pool, err := pgxpool.NewWithConfig(ctx, pc)
	if err != nil {
		return 0, err
	}
	defer pool.Close()
	if _, err := pool.Exec(ctx, `CREATE TABLE IF NOT EXISTS bench_baseline (id bigserial PRIMARY KEY, v text)`); err != nil {
		return 0, err
	}
	return runBaseline(ctx, conns, d, func(ctx context.Context) error {
		tx, err := pool.Begin(ctx)
		if err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, `INSERT INTO bench_baseline (v) VALUES ('x')`); err != nil {
			tx.Rollback(ctx)
			return err
		}
		return tx.Commit(ctx)
	})
}

// statementCounter counts every statement a pgx connection sends: single
// queries (QueryTracer) and each query of a batch (BatchTracer: pgx reports
// batched statements only there, so without it a turn sent as one batch
// would count as nothing).
type statementCounter struct{ n *atomic.Int64 }

func (s *statementCounter) TraceQueryStart(ctx context.Context, _ *pgx.Conn, _ pgx.TraceQueryStartData) context.Context {
	s.n.Add(1)
	return ctx
}

func (s *statementCounter) TraceQueryEnd(context.Context, *pgx.Conn, pgx.TraceQueryEndData) {}

func (s *statementCounter) TraceBatchStart(ctx context.Context, _ *pgx.Conn, _ pgx.TraceBatchStartData) context.Context {
	return ctx
}

func (s *statementCounter) TraceBatchQuery(context.Context, *pgx.Conn, pgx.TraceBatchQueryData) {
	s.n.Add(1)
}

func (s *statementCounter) TraceBatchEnd(context.Context, *pgx.Conn, pgx.TraceBatchEndData) {}
