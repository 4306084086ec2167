package main

import (
	"context"
	"database/sql"
	"fmt"
	"log/slog"
	"time"

	_ "github.com/go-sql-driver/mysql" // the baseline's database/sql driver

	mysqladapter "github.com/ductus/ductus/adapters/mysql"
	"github.com/ductus/ductus/internal/testdb"
)

func init() {
	backends["mysql"] = func(o options) (env, error) {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		srv, err := testdb.MySQL(ctx)
		if err != nil {
			return nil, fmt.Errorf("mysql: %w", err)
		}
		return &mysqlEnv{srv: srv}, nil
	}
}

// mysqlEnv makes each scenario a fresh database on the server named by
// DUCTUS_TEST_MYSQL (else the local MariaDB) and drops it afterwards.
type mysqlEnv struct{ srv *testdb.Server }

func (e *mysqlEnv) fresh(ctx context.Context) (string, func(), error) {
	db, err := e.srv.Create(ctx, "ductus_bench_")
	if err != nil {
		return "", nil, err
	}
	return db.DSN, func() { _ = db.Drop(context.Background()) }, nil
}

func (e *mysqlEnv) open(ctx context.Context, dsn string, count *counter) (backend, error) {
	return mysqladapter.Open(ctx, mysqladapter.Config{DSN: dsn, Statements: count, Logger: slog.New(slog.DiscardHandler)})
}

// baseline is the server's durable-commit limit: a one-row INSERT and
// COMMIT per transaction over conns connections of the same driver.
func (e *mysqlEnv) baseline(ctx context.Context, dsn string, conns int, d time.Duration) (int, error) {
	db, err := sql.Open("mysql", dsn)
	if err != nil {
		return 0, err
	}
	defer db.Close()
	db.SetMaxOpenConns(max(conns, 1))
	db.SetMaxIdleConns(max(conns, 1))
	if _, err := db.ExecContext(ctx, `CREATE TABLE IF NOT EXISTS bench_baseline (id BIGINT AUTO_INCREMENT PRIMARY KEY, v VARCHAR(8)) ENGINE=InnoDB`); err != nil {
		return 0, err
	}
	return runBaseline(ctx, conns, d, func(ctx context.Context) error {
		tx, err := db.BeginTx(ctx, nil)
		if err != nil {
			return err
		}
		if _, err := tx.ExecContext(ctx, `INSERT INTO bench_baseline (v) VALUES ('x')`); err != nil {
			tx.Rollback()
			return err
		}
		return tx.Commit()
	})
}
