package postgres

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/ductus/ductus/actor"
	"github.com/ductus/ductus/internal/testdb"
	"github.com/ductus/ductus/internal/testutil"
	"github.com/ductus/ductus/runtime/crashtest"
	"github.com/ductus/ductus/runtime/scenariotest"
	"github.com/ductus/ductus/runtime/store"
	"github.com/ductus/ductus/runtime/store/storetest"
)

// Every test run makes its own database (ductus_test_<random>) on the
// server named by DUCTUS_TEST_POSTGRES (default: the local server) and
// drops it at the end; each test gets a fresh schema in it.
var (
	testDSN     string // the run's database
	skipReason  string // why the tests skip (no server)
	schemaCount atomic.Int64
)

func TestMain(m *testing.M) {
	if os.Getenv("DUCTUS_CRASHTEST_WORKER") == "1" {
		crashtest.Main(m, openCrash) // a re-executed worker process: runs and exits
	}
	os.Exit(runMain(m))
}

func runMain(m *testing.M) int {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	srv, err := testdb.Postgres(ctx)
	if errors.Is(err, testdb.ErrUnavailable) {
		skipReason = err.Error()
		fmt.Fprintln(os.Stderr, "postgres tests skipped: "+skipReason)
		return m.Run()
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "postgres: %v\n", err)
		return 1
	}
	defer srv.Close()
	db, err := srv.Create(ctx, "ductus_test_")
	if err != nil {
		fmt.Fprintf(os.Stderr, "postgres: %v\n", err)
		return 1
	}
	defer func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if err := db.Drop(ctx); err != nil {
			fmt.Fprintf(os.Stderr, "postgres: %v\n", err)
		}
	}()
	testDSN = db.DSN
	return m.Run()
}

func need(t *testing.T) {
	t.Helper()
	if skipReason != "" {
		t.Skip(skipReason)
	}
}

// newSchema returns a schema name unique to this run.
func newSchema() string { return fmt.Sprintf("t%d", schemaCount.Add(1)) }

// openSchema opens a backend on schema and closes it at the test's end.
func openSchema(t *testing.T, schema string, adjust func(*pgxpool.Config)) *Backend {
	t.Helper()
	need(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	b, err := Open(ctx, Config{DSN: testDSN, Schema: schema, MaxConns: 12, Pool: adjust})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Close() })
	return b
}

// open is the conformance suite's factory: a fresh schema per test,
// dropped after it.
func open(t *testing.T) store.Backend {
	schema := newSchema()
	b := openSchema(t, schema, nil)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if conn, err := pgx.Connect(ctx, testDSN); err == nil {
			_, _ = conn.Exec(ctx, "DROP SCHEMA "+schema+" CASCADE")
			conn.Close(ctx)
		}
	})
	return b
}

func TestConformance(t *testing.T) {
	need(t)
	storetest.Run(t, open)
}

func TestScenarios(t *testing.T) {
	need(t)
	scenariotest.Run(t, open)
}

// crashWorkerApp is the application_name of the crash test's worker
// processes, so the connection cutter picks their backends and never the
// test's own.
const crashWorkerApp = "ductus-crash-worker"

// openCrash opens a crash test's backend, in the test and in its worker
// processes, from "<schema>|<dsn>".
func openCrash(ctx context.Context, dsn string) (store.Backend, error) {
	schema, dsn, _ := strings.Cut(dsn, "|")
	var adjust func(*pgxpool.Config)
	if os.Getenv("DUCTUS_CRASHTEST_WORKER") == "1" {
		adjust = func(c *pgxpool.Config) { c.ConnConfig.RuntimeParams["application_name"] = crashWorkerApp }
	}
	return Open(ctx, Config{DSN: dsn, Schema: schema, MaxConns: 8, Pool: adjust})
}

// cutter is the crash tests' Postgres chaos: every 150ms it terminates one
// backend of a worker process that is running a statement or sits inside
// a transaction, preferring one whose transaction has written (holds a
// transaction ID: most often a pipelined commit).
type cutter struct {
	cuts, midTx atomic.Int64 // backends cut; of them, inside a writing transaction
}

func (c *cutter) run(ctx context.Context, _ func() []int) {
	conn, err := pgx.Connect(ctx, testDSN)
	if err != nil {
		return
	}
	defer conn.Close(context.Background())
	tick := time.NewTicker(150 * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		var cut, writing bool
		err := conn.QueryRow(ctx, `SELECT pg_terminate_backend(pid), backend_xid IS NOT NULL FROM pg_stat_activity
			WHERE datname = current_database() AND application_name = $1 AND pid <> pg_backend_pid()
				AND state IN ('active', 'idle in transaction')
			ORDER BY backend_xid IS NOT NULL DESC, random() LIMIT 1`, crashWorkerApp).Scan(&cut, &writing)
		if err == nil && cut {
			c.cuts.Add(1)
			if writing {
				c.midTx.Add(1)
			}
		}
	}
}

// check fails the test unless the cutter cut worker connections, at least
// one of them inside a transaction that had written.
func (c *cutter) check(t *testing.T) {
	t.Helper()
	t.Logf("cut %d worker connections mid-statement, %d of them inside a writing transaction", c.cuts.Load(), c.midTx.Load())
	if c.cuts.Load() == 0 {
		t.Fatal("no worker connection was cut")
	}
	if c.midTx.Load() == 0 {
		t.Fatal("no worker connection was cut inside a writing transaction")
	}
}

// TestCrash runs the real-process crash test on PostgreSQL: workers
// SIGKILLed and restarted, paused past their lease, and (the Postgres
// addition) their connections cut mid-statement with pg_terminate_backend.
func TestCrash(t *testing.T) {
	need(t)
	if testing.Short() {
		t.Skip("the crash test runs in full mode only")
	}
	var c cutter
	crashtest.Run(t, crashtest.Config{DSN: "crash|" + testDSN, Open: openCrash, Chaos: c.run})
	c.check(t)
}

// TestCrashEffects SIGKILLs workers while their ordered effects post to
// an external record. (crashtest.RunEffects runs no Chaos, so no
// connections are cut here; TestCrash cuts them.)
func TestCrashEffects(t *testing.T) {
	need(t)
	if testing.Short() {
		t.Skip("the crash test runs in full mode only")
	}
	crashtest.RunEffects(t, crashtest.Config{DSN: "crash_effects|" + testDSN, Open: openCrash})
}

// TestTakeAsyncCommitStaysLocal: the take commits without waiting for its
// WAL flush, and that setting must end with the take's transaction: the
// next transaction on the same connection (a turn's commit, which must be
// durable before it returns) runs with synchronous_commit on.
func TestTakeAsyncCommitStaysLocal(t *testing.T) {
	b := openSchema(t, newSchema(), func(pc *pgxpool.Config) { pc.MaxConns, pc.MinConns = 1, 1 })
	ctx := testutil.Context(t)
	r := actor.Ref{Type: "async", ID: "x"}
	if _, err := b.MailboxEnqueue(ctx, nil, &store.MailboxEnqueueParams{Messages: []store.NewMessage{{Ref: r, Name: "m"}}}); err != nil {
		t.Fatal(err)
	}
	ls, err := b.LeaseClaim(ctx, &store.LeaseClaimParams{Owner: "w", TTL: time.Minute, Limit: 1, Types: []string{"async"}})
	if err != nil || len(ls) != 1 {
		t.Fatal(ls, err)
	}
	msgs, err := b.MessageTake(ctx, &store.MessageTakeParams{Owner: "w", Lease: ls[0].LeaseRef, Limit: 8})
	if err != nil || len(msgs) != 1 {
		t.Fatal(msgs, err)
	}
	var setting string
	if err := b.Pool().QueryRow(ctx, `SHOW synchronous_commit`).Scan(&setting); err != nil || setting != "on" {
		t.Fatalf("after a take the connection's synchronous_commit is %q (%v), want on", setting, err)
	}
}

// TestPoolSize: Config.MaxConns wins, then the DSN's pool_max_conns, then
// the adapter's default of 16.
func TestPoolSize(t *testing.T) {
	need(t)
	withParam := func(dsn, kv string) string {
		if strings.Contains(dsn, "://") {
			if strings.Contains(dsn, "?") {
				return dsn + "&" + kv
			}
			return dsn + "?" + kv
		}
		return dsn + " " + kv
	}
	cases := []struct {
		name string
		dsn  string
		max  int32
		want int32
	}{
		{"default", testDSN, 0, 16},
		{"from the DSN", withParam(testDSN, "pool_max_conns=3"), 0, 3},
		{"Config over the DSN", withParam(testDSN, "pool_max_conns=3"), 5, 5},
		{"Config alone", testDSN, 7, 7},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			ctx := testutil.Context(t)
			b, err := Open(ctx, Config{DSN: tc.dsn, Schema: newSchema(), MaxConns: tc.max})
			if err != nil {
				t.Fatal(err)
			}
			defer b.Close()
			if got := b.Pool().Config().MaxConns; got != tc.want {
				t.Errorf("MaxConns = %d, want %d", got, tc.want)
			}
		})
	}
}
