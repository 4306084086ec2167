package postgres

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/ductus/ductus/actor"
	"github.com/ductus/ductus/internal/testutil"
	"github.com/ductus/ductus/runtime/store"
)

func TestRebind(t *testing.T) {
	cases := []struct{ in, want string }{
		{"SELECT 1", "SELECT 1"},
		{"SELECT ? , ?", "SELECT $1 , $2"},
		{"INSERT INTO t (a, b) VALUES (?, ?) ON CONFLICT (a) DO UPDATE SET b = excluded.b", "INSERT INTO t (a, b) VALUES ($1, $2) ON CONFLICT (a) DO UPDATE SET b = excluded.b"},
		{"SELECT '?' , ?", "SELECT '?' , $1"},
		{"SELECT 'it''s ?' , ?", "SELECT 'it''s ?' , $1"},
		{`SELECT E'\'?' , ?`, `SELECT E'\'?' , $1`},
		{`SELECT "a?b" FROM t WHERE x = ?`, `SELECT "a?b" FROM t WHERE x = $1`},
		{"SELECT ? -- what?\n, ?", "SELECT $1 -- what?\n, $2"},
		{"SELECT /* a /* nested? */ still? */ ?", "SELECT /* a /* nested? */ still? */ $1"},
		{"SELECT $$ ? $$, $tag$ ? $tag$, ?", "SELECT $$ ? $$, $tag$ ? $tag$, $1"},
		{"SELECT $1, ?", "SELECT $1, $1"}, // a caller's own $n is left alone (mixing is the caller's error)
		{"SELECT 'unterminated ?", "SELECT 'unterminated ?"},
	}
	for _, c := range cases {
		if got := Rebind(c.in); got != c.want {
			t.Errorf("Rebind(%q) = %q, want %q", c.in, got, c.want)
		}
	}
}

func TestParseSignal(t *testing.T) {
	cases := []struct {
		in   string
		ok   bool
		work bool
		done []int64
	}{
		{"w", true, true, nil},
		{"w:42", true, true, nil},
		{"w:x", false, false, nil},
		{"d:1", true, false, []int64{1}},
		{"d:1,22,333", true, false, []int64{1, 22, 333}},
		{"d:", false, false, nil},
		{"d:1,x", false, false, nil},
		{"hello", false, false, nil},
	}
	for _, c := range cases {
		s, ok := parseSignal(c.in)
		if ok != c.ok || s.Work != c.work || len(s.Done) != len(c.done) {
			t.Errorf("parseSignal(%q) = %+v, %v", c.in, s, ok)
			continue
		}
		for i := range c.done {
			if s.Done[i] != c.done[i] {
				t.Errorf("parseSignal(%q) = %+v", c.in, s)
			}
		}
	}
	if s, _ := parseSignal("w:42"); len(s.PKs) != 1 || s.PKs[0] != 42 {
		t.Errorf("parseSignal(w:42) = %+v, want the actor 42 named", s)
	}
	ids := make([]int64, 3000)
	for i := range ids {
		ids[i] = 1_000_000_000_000 + int64(i)
	}
	var back []int64
	for _, s := range donePayloads(ids) {
		if len(s) > 8000 {
			t.Fatalf("payload of %d bytes passes NOTIFY's limit", len(s))
		}
		sig, ok := parseSignal(s)
		if !ok {
			t.Fatalf("payload %q does not parse", s[:20])
		}
		back = append(back, sig.Done...)
	}
	if len(back) != len(ids) || back[0] != ids[0] || back[len(back)-1] != ids[len(ids)-1] {
		t.Fatalf("round trip through payloads lost ids: %d of %d", len(back), len(ids))
	}
}

// scratch opens a backend on a fresh schema with a table t(id, v) of two
// rows, for provoking server errors.
func scratch(t *testing.T) (*Backend, string) {
	schema := newSchema()
	b := openSchema(t, schema, nil)
	if _, err := b.Pool().Exec(testutil.Context(t), `CREATE TABLE scratch (id int PRIMARY KEY, v int); INSERT INTO scratch VALUES (1, 0), (2, 0)`); err != nil {
		t.Fatal(err)
	}
	return b, schema
}

func begin(t *testing.T, b *Backend, opts pgx.TxOptions) pgx.Tx {
	t.Helper()
	tx, err := b.Pool().BeginTx(testutil.Context(t), opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = tx.Rollback(context.Background()) })
	return tx
}

// TestClassify provokes each failure for real and checks the one mapping
// function's verdict, and that the error names its statement.
func TestClassify(t *testing.T) {
	need(t)
	cases := []struct {
		name       string
		transient  bool
		rolledBack bool // the transaction certainly did not commit
		code       string
		provoke    func(t *testing.T, b *Backend) error
	}{
		{"deadlock", true, true, "40P01", func(t *testing.T, b *Backend) error {
			ctx := testutil.Context(t)
			tx1, tx2 := begin(t, b, pgx.TxOptions{}), begin(t, b, pgx.TxOptions{})
			if _, err := tx1.Exec(ctx, `UPDATE scratch SET v = 1 WHERE id = 1`); err != nil {
				t.Fatal(err)
			}
			if _, err := tx2.Exec(ctx, `UPDATE scratch SET v = 2 WHERE id = 2`); err != nil {
				t.Fatal(err)
			}
			type result struct {
				tx  pgx.Tx
				err error
			}
			results := make(chan result, 2)
			go func() { _, err := tx1.Exec(ctx, `UPDATE scratch SET v = 1 WHERE id = 2`); results <- result{tx1, err} }()
			time.Sleep(100 * time.Millisecond)
			go func() { _, err := tx2.Exec(ctx, `UPDATE scratch SET v = 2 WHERE id = 1`); results <- result{tx2, err} }()
			// The detector aborts one; once it is rolled back the other
			// gets its lock and finishes. Each is rolled back only after
			// its own statement returned.
			var failure error
			for i := 0; i < 2; i++ {
				r := <-results
				if r.err != nil {
					failure = r.err
				}
				_ = r.tx.Rollback(ctx)
			}
			return failure
		}},
		{"serialization failure", true, true, "40001", func(t *testing.T, b *Backend) error {
			ctx := testutil.Context(t)
			tx := begin(t, b, pgx.TxOptions{IsoLevel: pgx.RepeatableRead})
			var v int
			if err := tx.QueryRow(ctx, `SELECT v FROM scratch WHERE id = 1`).Scan(&v); err != nil {
				t.Fatal(err)
			}
			if _, err := b.Pool().Exec(ctx, `UPDATE scratch SET v = v + 1 WHERE id = 1`); err != nil {
				t.Fatal(err)
			}
			_, err := tx.Exec(ctx, `UPDATE scratch SET v = v + 1 WHERE id = 1`)
			return err
		}},
		{"lock timeout", true, true, "55P03", func(t *testing.T, b *Backend) error {
			ctx := testutil.Context(t)
			holder := begin(t, b, pgx.TxOptions{})
			if _, err := holder.Exec(ctx, `SELECT 1 FROM scratch WHERE id = 1 FOR UPDATE`); err != nil {
				t.Fatal(err)
			}
			tx := begin(t, b, pgx.TxOptions{})
			if _, err := tx.Exec(ctx, `SET LOCAL lock_timeout = '50ms'`); err != nil {
				t.Fatal(err)
			}
			_, err := tx.Exec(ctx, `UPDATE scratch SET v = 9 WHERE id = 1`)
			return err
		}},
		{"statement timeout", true, true, "57014", func(t *testing.T, b *Backend) error {
			tx := begin(t, b, pgx.TxOptions{})
			if _, err := tx.Exec(testutil.Context(t), `SET LOCAL statement_timeout = '20ms'`); err != nil {
				t.Fatal(err)
			}
			_, err := tx.Exec(testutil.Context(t), `SELECT pg_sleep(2)`)
			return err
		}},
		{"read-only server", true, true, "25006", func(t *testing.T, b *Backend) error {
			tx := begin(t, b, pgx.TxOptions{AccessMode: pgx.ReadOnly})
			_, err := tx.Exec(testutil.Context(t), `UPDATE scratch SET v = 3 WHERE id = 1`)
			return err
		}},
		{"backend terminated", true, false, "57P01", func(t *testing.T, b *Backend) error {
			ctx := testutil.Context(t)
			conn, err := b.Pool().Acquire(ctx)
			if err != nil {
				t.Fatal(err)
			}
			defer conn.Release()
			var pid int32
			if err := conn.QueryRow(ctx, `SELECT pg_backend_pid()`).Scan(&pid); err != nil {
				t.Fatal(err)
			}
			if _, err := b.Pool().Exec(ctx, `SELECT pg_terminate_backend($1)`, pid); err != nil {
				t.Fatal(err)
			}
			time.Sleep(50 * time.Millisecond)
			_, err = conn.Exec(ctx, `SELECT 1`)
			return err
		}},
		{"connection refused", true, true, "", func(t *testing.T, b *Backend) error {
			_, err := pgx.Connect(testutil.Context(t), "postgres://postgres@127.0.0.1:1/postgres?connect_timeout=2")
			return err
		}},
		{"unique violation", false, false, "23505", func(t *testing.T, b *Backend) error {
			_, err := b.Pool().Exec(testutil.Context(t), `INSERT INTO scratch VALUES (1, 0)`)
			return err
		}},
		{"syntax error", false, false, "42601", func(t *testing.T, b *Backend) error {
			_, err := b.Pool().Exec(testutil.Context(t), `SELEKT 1`)
			return err
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			b, _ := scratch(t)
			raw := c.provoke(t, b)
			if raw == nil {
				t.Fatal("the failure did not happen")
			}
			if c.code != "" && sqlState(raw) != c.code {
				t.Fatalf("SQLSTATE %q (%v), want %s", sqlState(raw), raw, c.code)
			}
			err := classify("provoke: "+c.name, raw)
			var se *store.Error
			if !errors.As(err, &se) || se.Op != "provoke: "+c.name || se.Backend != "postgres" {
				t.Fatalf("classified as %#v", err)
			}
			if store.IsTransient(err) != c.transient {
				t.Fatalf("IsTransient = %v, want %v (%v)", store.IsTransient(err), c.transient, err)
			}
			if store.IsRolledBack(err) != c.rolledBack {
				t.Fatalf("IsRolledBack = %v, want %v (%v)", store.IsRolledBack(err), c.rolledBack, err)
			}
			if !strings.Contains(err.Error(), "provoke: "+c.name) {
				t.Fatalf("the message does not name the statement: %v", err)
			}
		})
	}
}

// timeoutish has a Timeout method but is no network error.
type timeoutish struct{}

func (timeoutish) Error() string { return "the widget timed out waiting for EOF" }
func (timeoutish) Timeout() bool { return true }

// TestClassifyTyped checks the errors below the protocol by their types,
// not their text: a lost connection is transient with an unknown outcome,
// a failed dial is transient and sent nothing, and an error that merely
// mentions EOF or has a Timeout method is permanent.
func TestClassifyTyped(t *testing.T) {
	reset := &net.OpError{Op: "read", Net: "tcp", Err: syscall.ECONNRESET}
	cases := []struct {
		name                  string
		err                   error
		transient, rolledBack bool
	}{
		{"unexpected EOF", fmt.Errorf("failed to receive message: %w", io.ErrUnexpectedEOF), true, false},
		{"EOF", fmt.Errorf("receive message: %w", io.EOF), true, false},
		{"connection reset", reset, true, false},
		{"broken pipe", &net.OpError{Op: "write", Net: "tcp", Err: syscall.EPIPE}, true, false},
		{"closed socket", fmt.Errorf("read: %w", net.ErrClosed), true, false},
		{"conn closed after sending", fmt.Errorf("batch: %w", pgconn.ErrConnClosed), true, false},
		{"bare ECONNRESET", fmt.Errorf("read: %w", syscall.ECONNRESET), true, false},
		{"dial refused", &net.OpError{Op: "dial", Net: "tcp", Err: syscall.ECONNREFUSED}, true, true},
		{"admin shutdown", &pgconn.PgError{Code: "57P01"}, true, false},
		{"connection failure class", &pgconn.PgError{Code: "08006"}, true, false},
		{"serialization failure", &pgconn.PgError{Code: "40001"}, true, true},
		{"too many connections", &pgconn.PgError{Code: "53300"}, true, true},
		{"stale cached plan", &pgconn.PgError{Code: "0A000", Message: "cached plan must not change result type"}, true, true},
		{"other feature", &pgconn.PgError{Code: "0A000", Message: "something else"}, false, false},
		{"text mentioning EOF", errors.New("unexpected EOF in the JSON argument"), false, false},
		{"a Timeout method", timeoutish{}, false, false},
		{"plain", errors.New("boom"), false, false},
	}
	for _, c := range cases {
		err := classify("op", c.err)
		if store.IsTransient(err) != c.transient || store.IsRolledBack(err) != c.rolledBack {
			t.Errorf("%s: transient %v rolled back %v, want %v %v (%v)", c.name,
				store.IsTransient(err), store.IsRolledBack(err), c.transient, c.rolledBack, err)
		}
		if !errors.Is(err, c.err) {
			t.Errorf("%s: the cause is not wrapped: %v", c.name, err)
		}
	}
	for _, e := range []error{context.Canceled, fmt.Errorf("x: %w", context.DeadlineExceeded)} {
		if got := classify("op", e); got != e {
			t.Errorf("a context error was wrapped: %v", got)
		}
	}
}

// TestErrorsNameTheirStatement: a permanent failure inside a backend call
// names the statement's purpose, and a deadlock between the backend's own
// callers is reported as transient.
func TestErrorsNameTheirStatement(t *testing.T) {
	need(t)
	b := openSchema(t, newSchema(), nil)
	ctx := testutil.Context(t)
	_, err := b.MailboxEnqueue(ctx, nil, &store.MailboxEnqueueParams{Messages: []store.NewMessage{{Ref: actor.Ref{Type: "a", ID: "x"}, Name: "m", Args: []byte(`{"unterminated`)}}})
	var se *store.Error
	if !errors.As(err, &se) || se.Transient || !strings.HasPrefix(se.Op, "enqueue:") || sqlState(err) != "22P02" {
		t.Fatalf("enqueue of malformed JSON: %#v", err)
	}
	if _, err := b.MailboxEnqueue(ctx, nil, &store.MailboxEnqueueParams{Messages: []store.NewMessage{{Ref: actor.Ref{Type: "a", ID: "bad\xff"}, Name: "m"}}}); !errors.Is(err, actor.ErrInvalidID) {
		t.Fatalf("an ID that is not UTF-8: %v", err)
	}
	if _, err := b.ActorGet(ctx, actor.Ref{Type: "a", ID: "nul\x00"}); !errors.Is(err, actor.ErrNotFound) {
		t.Fatalf("ActorGet of an unstorable ID: %v", err)
	}
}

// TestKilledCommitChangesNothing cuts a fenced commit's connection while
// the commit is inside its transaction (it holds the actor's lock and waits
// on a row another transaction is writing): the commit reports a
// transient error, nothing of it is visible, and retrying it succeeds.
func TestKilledCommitChangesNothing(t *testing.T) {
	need(t)
	schema := newSchema()
	b := openSchema(t, schema, nil)
	ctx := testutil.Context(t)
	res, err := b.MailboxEnqueue(ctx, nil, &store.MailboxEnqueueParams{Messages: []store.NewMessage{
		{Ref: actor.Ref{Type: "k", ID: "x"}, Name: "m", Args: []byte(`1`)}, {Ref: actor.Ref{Type: "k", ID: "x"}, Name: "m", Args: []byte(`2`)}}})
	if err != nil {
		t.Fatal(err)
	}
	ls, err := b.LeaseClaim(ctx, &store.LeaseClaimParams{Owner: "w", TTL: time.Minute, Limit: 1, Types: []string{"k"}})
	if err != nil || len(ls) != 1 {
		t.Fatal(ls, err)
	}
	msgs, err := b.MessageTake(ctx, &store.MessageTakeParams{Owner: "w", Lease: ls[0].LeaseRef, Limit: 10})
	if err != nil || len(msgs) != 2 {
		t.Fatal(msgs, err)
	}
	blocker := begin(t, b, pgx.TxOptions{})
	// An uncommitted result row for the second message: the commit's
	// insert of its own waits on it, inside the commit's transaction.
	if _, err := blocker.Exec(ctx, `INSERT INTO ductus_results (message_id, attempt, completed_at) VALUES ($1, 1, now())`, res[1].MessageID); err != nil {
		t.Fatal(err)
	}
	p := &store.TurnCommitParams{Owner: "w", Lease: ls[0].LeaseRef, State: []byte(`{"n":2}`), StateVersion: 1,
		Completed: []store.Completion{{MessageID: msgs[0].ID, Attempt: 1, Result: []byte(`1`)}, {MessageID: msgs[1].ID, Attempt: 1, Result: []byte(`2`)}},
		Effects:   []store.NewEffect{{UUID: "e1", Name: "fx", Args: []byte(`{}`), MessageID: msgs[0].ID}}}
	done := make(chan error, 1)
	var blockerPID int32
	if err := blocker.QueryRow(ctx, `SELECT pg_backend_pid()`).Scan(&blockerPID); err != nil {
		t.Fatal(err)
	}
	go func() { _, err := b.TurnCommit(ctx, p); done <- err }()
	// The waiter is found from outside the blocker's transaction: a
	// backend reads pg_stat_activity once per transaction, so polling it
	// inside one saw the same snapshot forever, and under load, where the
	// first look came before the commit waited, it never saw the commit.
	var pid int32
	deadline := time.Now().Add(30 * time.Second)
	for pid == 0 {
		if time.Now().After(deadline) {
			t.Fatal("the commit never waited on the held row")
		}
		time.Sleep(20 * time.Millisecond)
		_ = b.Pool().QueryRow(ctx, `SELECT pid FROM pg_stat_activity
			WHERE datname = current_database() AND $1::int = ANY (pg_blocking_pids(pid)) LIMIT 1`, blockerPID).Scan(&pid)
	}
	if _, err := blocker.Exec(ctx, `SELECT pg_terminate_backend($1)`, pid); err != nil {
		t.Fatal(err)
	}
	err = <-done
	if err == nil || !store.IsTransient(err) {
		t.Fatalf("a commit whose connection was cut: %v, want a transient error", err)
	}
	if store.IsRolledBack(err) {
		t.Fatalf("a commit whose connection was cut is reported as certainly rolled back: %v", err)
	}
	if err := blocker.Rollback(ctx); err != nil {
		t.Fatal(err)
	}
	for _, r := range res {
		if st, _ := b.MessageStatus(ctx, []int64{r.MessageID}); st[0].State != store.MessagePending {
			t.Fatalf("message %d is %s after the cut commit", r.MessageID, st[0].State)
		}
	}
	a, err := b.ActorGet(ctx, actor.Ref{Type: "k", ID: "x"})
	if err != nil || a.State != nil || a.Unfinished != 2 {
		t.Fatalf("actor after the cut commit = %+v, %v", a, err)
	}
	if fx, _ := b.EffectList(ctx, &store.EffectListParams{State: store.EffectPending}); len(fx) != 0 {
		t.Fatalf("the cut commit staged effects: %+v", fx)
	}
	// The lease still holds: the same commit, retried, goes through once.
	if err := store.Retry(ctx, 5, func() error { _, err := b.TurnCommit(ctx, p); return err }); err != nil {
		t.Fatal(err)
	}
	a, _ = b.ActorGet(ctx, actor.Ref{Type: "k", ID: "x"})
	fx, _ := b.EffectList(ctx, &store.EffectListParams{State: store.EffectPending})
	if string(a.State) != `{"n":2}` || a.Unfinished != 0 || len(fx) != 1 {
		t.Fatalf("after the retried commit: actor %+v, effects %d", a, len(fx))
	}
}

// TestConcurrentOpen: several processes opening one new schema at once
// apply each migration exactly once (the advisory lock serialises them).
func TestConcurrentOpen(t *testing.T) {
	need(t)
	schema := newSchema()
	var wg sync.WaitGroup
	errs := make(chan error, 4)
	for i := 0; i < 4; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			b, err := Open(testutil.Context(t), Config{DSN: testDSN, Schema: schema, MaxConns: 2})
			if err == nil {
				b.Close()
			}
			errs <- err
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	b := openSchema(t, schema, nil)
	var n, distinct int
	if err := b.Pool().QueryRow(testutil.Context(t), `SELECT count(*), count(DISTINCT version) FROM ductus_schema_migrations`).Scan(&n, &distinct); err != nil {
		t.Fatal(err)
	}
	if n != distinct || n < 2 {
		t.Fatalf("migrations recorded %d times for %d versions", n, distinct)
	}
	if _, err := Open(testutil.Context(t), Config{DSN: testDSN, Schema: "Bad-Name"}); err == nil {
		t.Fatal("a schema name needing quotes was accepted")
	}
}
