package main

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"fmt"
	"log/slog"
	"os"
	"time"

	"github.com/go-sql-driver/mysql"

	mysqladapter "github.com/ductus/ductus/adapters/mysql"
)

func init() {
	backends["mysql"] = func(o options) (env, error) {
		dsn := os.Getenv("DUCTUS_TEST_MYSQL")
		if dsn == "" {
			dsn = "root@tcp(127.0.0.1:3306)/"
		}
		cfg, err := mysql.ParseDSN(dsn)
		if err != nil {
			return nil, fmt.Errorf("mysql: DUCTUS_TEST_MYSQL is not a DSN: %w", err)
		}
		return &mysqlEnv{admin: cfg}, nil
	}
}

// mysqlEnv makes each scenario a fresh database on the server named by
// DUCTUS_TEST_MYSQL (else the local MariaDB) and drops it afterwards.
type mysqlEnv struct{ admin *mysql.Config }

func (e *mysqlEnv) server(ctx context.Context) (*sql.DB, error) {
	cfg := e.admin.Clone()
	cfg.DBName = ""
	conn, err := mysql.NewConnector(cfg)
	if err != nil {
		return nil, err
	}
	db := sql.OpenDB(conn)
	if err := db.PingContext(ctx); err != nil {
		db.Close()
		return nil, fmt.Errorf("mysql: connect to %s: %w", cfg.Addr, err)
	}
	return db, nil
}

func (e *mysqlEnv) fresh(ctx context.Context) (string, func(), error) {
	b := make([]byte, 6)
	_, _ = rand.Read(b)
	name := "ductus_bench_" + hex.EncodeToString(b)
	db, err := e.server(ctx)
	if err != nil {
		return "", nil, err
	}
	defer db.Close()
	if _, err := db.ExecContext(ctx, "CREATE DATABASE "+name); err != nil {
		return "", nil, err
	}
	cfg := e.admin.Clone()
	cfg.DBName = name
	cleanup := func() {
		if db, err := e.server(context.Background()); err == nil {
			_, _ = db.Exec("DROP DATABASE IF EXISTS " + name)
			db.Close()
		}
	}
	return cfg.FormatDSN(), cleanup, nil
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
