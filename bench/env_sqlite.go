package main

import (
	"context"
	"database/sql"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/ductus/ductus/adapters/sqlite"
)

func init() {
	backends["sqlite"] = func(o options) (env, error) { return &sqliteEnv{sync: o.durability}, nil }
}

// sqliteEnv makes each scenario a fresh database file in a temporary
// folder, with WAL and the chosen synchronous mode.
type sqliteEnv struct{ sync string }

func (e *sqliteEnv) fresh(ctx context.Context) (string, func(), error) {
	dir, err := os.MkdirTemp("", "ductus-bench-sqlite")
	if err != nil {
		return "", nil, err
	}
	return filepath.Join(dir, "bench.db"), func() { os.RemoveAll(dir) }, nil
}

func (e *sqliteEnv) open(ctx context.Context, dsn string, count *counter) (backend, error) {
	return sqlite.Open(ctx, sqlite.Config{Path: dsn, Synchronous: e.sync, Statements: count})
}

// baseline is SQLite's durable-commit limit on this machine: one-row
// INSERT and COMMIT transactions through the same driver, WAL and
// synchronous mode as the adapter (writers serialise on the file, so more
// connections only queue).
func (e *sqliteEnv) baseline(ctx context.Context, dsn string, conns int, d time.Duration) (int, error) {
	sync := "NORMAL"
	if e.sync == "full" {
		sync = "FULL"
	}
	db, err := sql.Open("sqlite", "file:"+dsn+"?_pragma=journal_mode(WAL)&_pragma=synchronous("+sync+")&_pragma=busy_timeout(10000)&_txlock=immediate")
	if err != nil {
		return 0, err
	}
	defer db.Close()
	db.SetMaxOpenConns(conns)
	if _, err := db.ExecContext(ctx, `CREATE TABLE IF NOT EXISTS bench_baseline (id INTEGER PRIMARY KEY, v TEXT)`); err != nil {
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

// runBaseline runs commit on conns goroutines for d and counts successes.
func runBaseline(ctx context.Context, conns int, d time.Duration, commit func(context.Context) error) (int, error) {
	ctx, cancel := context.WithTimeout(ctx, d)
	defer cancel()
	var mu sync.Mutex
	total, firstErr := 0, error(nil)
	var wg sync.WaitGroup
	for i := 0; i < conns; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			n := 0
			for ctx.Err() == nil {
				if err := commit(ctx); err != nil {
					if ctx.Err() == nil {
						mu.Lock()
						firstErr = err
						mu.Unlock()
					}
					break
				}
				n++
			}
			mu.Lock()
			total += n
			mu.Unlock()
		}()
	}
	wg.Wait()
	return total, firstErr
}
