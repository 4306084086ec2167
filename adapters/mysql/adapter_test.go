package mysql

import (
	"bytes"
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-sql-driver/mysql"

	"github.com/ductus/ductus/actor"
	"github.com/ductus/ductus/runtime/store"
)

func TestParseVersion(t *testing.T) {
	cases := []struct {
		raw       string
		flavor    string
		v         [3]int
		supported bool
		bad       bool
	}{
		{raw: "10.11.19-MariaDB", flavor: FlavorMariaDB, v: [3]int{10, 11, 19}, supported: true},
		{raw: "10.11.19-MariaDB-0+deb12u1", flavor: FlavorMariaDB, v: [3]int{10, 11, 19}, supported: true},
		{raw: "5.5.5-10.11.2-MariaDB-log", flavor: FlavorMariaDB, v: [3]int{10, 11, 2}, supported: true},
		{raw: "10.6.0-MariaDB", flavor: FlavorMariaDB, v: [3]int{10, 6, 0}, supported: true},
		{raw: "11.4.2-MariaDB", flavor: FlavorMariaDB, v: [3]int{11, 4, 2}, supported: true},
		{raw: "10.5.2-MariaDB", flavor: FlavorMariaDB, v: [3]int{10, 5, 2}},
		{raw: "8.0.36", flavor: FlavorMySQL, v: [3]int{8, 0, 36}, supported: true},
		{raw: "8.0.4-rc-log", flavor: FlavorMySQL, v: [3]int{8, 0, 4}, supported: true}, // JSON_TABLE arrived
		{raw: "8.0.3-rc-log", flavor: FlavorMySQL, v: [3]int{8, 0, 3}},                  // SKIP LOCKED, no JSON_TABLE
		{raw: "8.0.0-dmr", flavor: FlavorMySQL, v: [3]int{8, 0, 0}},
		{raw: "8.0", flavor: FlavorMySQL, v: [3]int{8, 0, 0}},
		{raw: "8.0.36-0ubuntu0.22.04.1", flavor: FlavorMySQL, v: [3]int{8, 0, 36}, supported: true},
		{raw: "8.4.0", flavor: FlavorMySQL, v: [3]int{8, 4, 0}, supported: true},
		{raw: "9.1.0-commercial", flavor: FlavorMySQL, v: [3]int{9, 1, 0}, supported: true},
		{raw: "5.7.44", flavor: FlavorMySQL, v: [3]int{5, 7, 44}},
		{raw: "5.7.44-log", flavor: FlavorMySQL, v: [3]int{5, 7, 44}},
		{raw: "", bad: true},
		{raw: "banana", bad: true},
		{raw: "8", bad: true},
		{raw: "8.x.1", bad: true},
	}
	for _, c := range cases {
		t.Run(c.raw, func(t *testing.T) {
			v, err := ParseVersion(c.raw)
			if c.bad {
				if err == nil {
					t.Fatalf("ParseVersion(%q) = %v, want an error", c.raw, v)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if v.Flavor != c.flavor || [3]int{v.Major, v.Minor, v.Patch} != c.v {
				t.Fatalf("ParseVersion(%q) = %+v", c.raw, v)
			}
			err = v.Supported()
			if c.supported != (err == nil) {
				t.Fatalf("Supported(%s) = %v, want supported=%v", v, err, c.supported)
			}
			if err != nil && (!strings.Contains(err.Error(), fmt.Sprintf("%d.%d.%d", v.Major, v.Minor, v.Patch)) || !strings.Contains(err.Error(), "too old")) {
				t.Fatalf("the refusal %q does not name the version found", err)
			}
		})
	}
}

func TestOpenRefusesNonInnoDB(t *testing.T) {
	ctx := context.Background()
	t.Run("MyISAMTable", func(t *testing.T) {
		dsn := newDatabase(t)
		db, err := sql.Open("mysql", dsn)
		if err != nil {
			t.Fatal(err)
		}
		defer db.Close()
		if _, err := db.Exec(`CREATE TABLE ductus_actors (pk BIGINT PRIMARY KEY) ENGINE=MyISAM`); err != nil {
			t.Fatal(err)
		}
		_, err = Open(ctx, Config{DSN: dsn, Logger: quiet})
		if err == nil || !strings.Contains(err.Error(), "ductus_actors uses MyISAM") || !strings.Contains(err.Error(), "InnoDB") {
			t.Fatalf("Open = %v, want a refusal naming the MyISAM table", err)
		}
		// Nothing was applied on top of it.
		var n int
		if err := db.QueryRow(`SELECT COUNT(*) FROM information_schema.TABLES WHERE TABLE_SCHEMA = DATABASE() AND TABLE_NAME = 'ductus_messages'`).Scan(&n); err != nil || n != 0 {
			t.Fatalf("the schema was applied next to a MyISAM table: %d, %v", n, err)
		}
	})
	t.Run("DefaultEngine", func(t *testing.T) {
		_, err := Open(ctx, Config{DSN: newDatabase(t) + "?default_storage_engine=MyISAM", Logger: quiet})
		if err == nil || !strings.Contains(err.Error(), "default storage engine is MyISAM") {
			t.Fatalf("Open = %v, want a refusal naming the default engine", err)
		}
	})
	t.Run("BadDSN", func(t *testing.T) {
		for dsn, want := range map[string]string{
			"":                          "DSN is required",
			"root@tcp(127.0.0.1:3306)/": "must name a database",
			"root@tcp(127.0.0.1:3306)":  "malformed",
		} {
			if _, err := Open(ctx, Config{DSN: dsn, Logger: quiet}); err == nil || !strings.Contains(err.Error(), want) {
				t.Errorf("Open(%q) = %v, want %q", dsn, err, want)
			}
		}
	})
}

func TestOpenLogsServer(t *testing.T) {
	var buf bytes.Buffer
	b := openBackend(t, Config{Logger: slog.New(slog.NewTextHandler(&buf, nil))})
	var raw string
	if err := b.db.QueryRow(`SELECT VERSION()`).Scan(&raw); err != nil {
		t.Fatal(err)
	}
	want, err := ParseVersion(raw)
	if err != nil {
		t.Fatal(err)
	}
	if b.Version() != want {
		t.Fatalf("Version() = %+v, want %+v", b.Version(), want)
	}
	line := buf.String()
	if !strings.Contains(line, "flavor="+want.Flavor) || !strings.Contains(line, fmt.Sprintf("version=%d.%d.%d", want.Major, want.Minor, want.Patch)) {
		t.Fatalf("the open log %q does not name %s", line, want)
	}
	t.Logf("tested against %s (%s)", want, raw)
}

// TestSessionSettings checks what every adapter connection relies on.
func TestSessionSettings(t *testing.T) {
	b := openBackend(t, Config{})
	for _, db := range []*sql.DB{b.db, b.caller} {
		var tz, mode string
		if err := db.QueryRow(`SELECT @@session.time_zone, @@session.sql_mode`).Scan(&tz, &mode); err != nil {
			t.Fatal(err)
		}
		if tz != "+00:00" || !strings.Contains(mode, "STRICT_ALL_TABLES") {
			t.Fatalf("time_zone %q, sql_mode %q", tz, mode)
		}
	}
	now, err := b.Now(context.Background())
	if err != nil || now.Location() != time.UTC || time.Since(now).Abs() > time.Minute || now.Nanosecond()%1000 != 0 {
		t.Fatalf("Now = %v, %v (want UTC, microseconds, near the clock)", now, err)
	}
}

type netErr struct{}

func (netErr) Error() string   { return "read tcp: connection reset by peer" }
func (netErr) Timeout() bool   { return false }
func (netErr) Temporary() bool { return false }

var _ net.Error = netErr{}

func TestClassifyTable(t *testing.T) {
	cases := []struct {
		name       string
		err        error
		transient  bool
		rolledBack bool // the transaction certainly did not commit
	}{
		{"deadlock", &mysql.MySQLError{Number: 1213}, true, true},
		{"lock wait timeout", &mysql.MySQLError{Number: 1205}, true, true},
		{"read-only", &mysql.MySQLError{Number: 1290}, true, true},
		{"read-only 1836", &mysql.MySQLError{Number: 1836}, true, true},
		{"statement timeout", &mysql.MySQLError{Number: 1969}, true, true},
		{"too many connections", &mysql.MySQLError{Number: 1040}, true, true},
		{"gone away", &mysql.MySQLError{Number: 2006}, true, false},
		{"lost connection", &mysql.MySQLError{Number: 2013}, true, false},
		{"killed", &mysql.MySQLError{Number: 1927}, true, false},
		{"interrupted", &mysql.MySQLError{Number: 1317}, true, false},
		{"bad conn (nothing sent)", driver.ErrBadConn, true, true},
		{"dial refused", &net.OpError{Op: "dial", Net: "tcp", Err: errors.New("connection refused")}, true, true},
		{"invalid conn", mysql.ErrInvalidConn, true, false},
		{"wrapped invalid conn", fmt.Errorf("exec: %w", mysql.ErrInvalidConn), true, false},
		{"unexpected EOF", fmt.Errorf("read: %w", io.ErrUnexpectedEOF), true, false},
		{"network", netErr{}, true, false},
		{"duplicate key", &mysql.MySQLError{Number: 1062}, false, false},
		{"syntax", &mysql.MySQLError{Number: 1064}, false, false},
		{"data too long", &mysql.MySQLError{Number: 1406}, false, false},
		{"access denied", &mysql.MySQLError{Number: 1045}, false, false},
		{"plain", errors.New("boom"), false, false},
	}
	for _, c := range cases {
		err := classify("commit: write the turn", c.err)
		if store.IsTransient(err) != c.transient || store.IsRolledBack(err) != c.rolledBack {
			t.Errorf("%s: transient %v rolled back %v, want %v %v", c.name, store.IsTransient(err), store.IsRolledBack(err), c.transient, c.rolledBack)
		}
		var se *store.Error
		if !errors.As(err, &se) || se.Op != "commit: write the turn" || se.Backend != "mysql" || !errors.Is(err, c.err) {
			t.Errorf("%s: %v is not a store.Error naming the statement's purpose and wrapping the cause", c.name, err)
		}
	}
	if err := classify("x", context.Canceled); err != context.Canceled {
		t.Errorf("a cancelled context was wrapped: %v", err)
	}
	if classify("x", nil) != nil {
		t.Error("classify(nil) != nil")
	}
}

// rawDB opens a plain pool on the backend's database, for the sessions
// that provoke lock conflicts against it.
func rawDB(t *testing.T, dsn string) *sql.DB {
	t.Helper()
	db, err := sql.Open("mysql", dsn)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

// TestRealDeadlockAndLockWait provokes a real deadlock (1213) and a real
// lock wait timeout (1205) and checks both classify as transient.
func TestRealDeadlockAndLockWait(t *testing.T) {
	dsn := newDatabase(t)
	openBackend(t, Config{DSN: dsn})
	db := rawDB(t, dsn)
	ctx := context.Background()
	if _, err := db.Exec(`CREATE TABLE dl (id INT PRIMARY KEY, v INT) ENGINE=InnoDB`); err != nil {
		t.Fatal(err)
	}
	if _, err := db.Exec(`INSERT INTO dl VALUES (1, 0), (2, 0)`); err != nil {
		t.Fatal(err)
	}
	t.Run("Deadlock", func(t *testing.T) {
		c1, _ := db.Conn(ctx)
		c2, _ := db.Conn(ctx)
		defer c1.Close()
		defer c2.Close()
		for _, c := range []*sql.Conn{c1, c2} {
			if _, err := c.ExecContext(ctx, "START TRANSACTION"); err != nil {
				t.Fatal(err)
			}
		}
		c1.ExecContext(ctx, "UPDATE dl SET v = 1 WHERE id = 1")
		c2.ExecContext(ctx, "UPDATE dl SET v = 1 WHERE id = 2")
		errs := make(chan error, 2)
		go func() { _, err := c1.ExecContext(ctx, "UPDATE dl SET v = 2 WHERE id = 2"); errs <- err }()
		time.Sleep(100 * time.Millisecond)
		go func() { _, err := c2.ExecContext(ctx, "UPDATE dl SET v = 2 WHERE id = 1"); errs <- err }()
		var deadlock error
		for i := 0; i < 2; i++ {
			if err := <-errs; err != nil {
				deadlock = err
				// The victim's transaction is rolled back: the other goes on.
			}
		}
		c1.ExecContext(ctx, "ROLLBACK")
		c2.ExecContext(ctx, "ROLLBACK")
		var me *mysql.MySQLError
		if !errors.As(deadlock, &me) || me.Number != 1213 {
			t.Fatalf("no deadlock: %v", deadlock)
		}
		if err := classify("test", deadlock); !store.IsTransient(err) || !rolledBack(err) || !store.IsRolledBack(err) {
			t.Fatalf("a deadlock is not transient and rolled back: %v", err)
		}
	})
	t.Run("LockWaitTimeout", func(t *testing.T) {
		c1, _ := db.Conn(ctx)
		c2, _ := db.Conn(ctx)
		defer c1.Close()
		defer c2.Close()
		c1.ExecContext(ctx, "START TRANSACTION")
		c1.ExecContext(ctx, "UPDATE dl SET v = 3 WHERE id = 1")
		c2.ExecContext(ctx, "SET SESSION innodb_lock_wait_timeout = 1")
		_, err := c2.ExecContext(ctx, "UPDATE dl SET v = 4 WHERE id = 1")
		c1.ExecContext(ctx, "ROLLBACK")
		var me *mysql.MySQLError
		if !errors.As(err, &me) || me.Number != 1205 {
			t.Fatalf("no lock wait timeout: %v", err)
		}
		if err := classify("test", err); !store.IsTransient(err) || !store.IsRolledBack(err) {
			t.Fatalf("a lock wait timeout is not transient and rolled back: %v", err)
		}
	})
}

// TestLockWaitRetriedInside holds an actor's row lock past the adapter's
// lock wait timeout: the enqueue's own transaction times out (1205), is
// rolled back and run again, and succeeds once the lock is gone, so no
// error reaches the caller.
func TestLockWaitRetriedInside(t *testing.T) {
	dsn := newDatabase(t)
	b := openBackend(t, Config{DSN: dsn, LockWaitTimeout: time.Second})
	ctx := context.Background()
	r := actor.Ref{Type: "t", ID: "held"}
	if _, err := b.MailboxEnqueue(ctx, nil, &store.MailboxEnqueueParams{Messages: []store.NewMessage{{Ref: r, Name: "m", Args: []byte(`1`)}}}); err != nil {
		t.Fatal(err)
	}
	db := rawDB(t, dsn)
	c, _ := db.Conn(ctx)
	defer c.Close()
	c.ExecContext(ctx, "START TRANSACTION")
	if _, err := c.ExecContext(ctx, "SELECT pk FROM ductus_actors WHERE type = 't' AND id = 'held' FOR UPDATE"); err != nil {
		t.Fatal(err)
	}
	release := time.AfterFunc(1500*time.Millisecond, func() { c.ExecContext(ctx, "ROLLBACK") })
	defer release.Stop()
	res, err := b.MailboxEnqueue(ctx, nil, &store.MailboxEnqueueParams{Messages: []store.NewMessage{{Ref: r, Name: "m", Args: []byte(`2`)}}})
	if err != nil || res[0].Seq != 2 {
		t.Fatalf("enqueue behind a held lock = %+v, %v (want seq 2 after the adapter's retry)", res, err)
	}
}

// TestKilledMidCommit kills the connection of a fenced commit while it
// waits inside its transaction (KILL CONNECTION from another session): the
// error is transient, nothing of the turn is written, and the same lease
// commits the turn afterwards.
func TestKilledMidCommit(t *testing.T) {
	for _, kill := range []string{"KILL CONNECTION", "KILL QUERY"} {
		t.Run(strings.ReplaceAll(kill, " ", ""), func(t *testing.T) {
			dsn := newDatabase(t)
			b := openBackend(t, Config{DSN: dsn})
			ctx := context.Background()
			r := actor.Ref{Type: "t", ID: "x"}
			res, err := b.MailboxEnqueue(ctx, nil, &store.MailboxEnqueueParams{Messages: []store.NewMessage{{Ref: r, Name: "m", Args: []byte(`1`)}}})
			if err != nil {
				t.Fatal(err)
			}
			ls, err := b.LeaseClaim(ctx, &store.LeaseClaimParams{Owner: "w", TTL: time.Minute, Limit: 1, Types: []string{"t"}})
			if err != nil || len(ls) != 1 {
				t.Fatal(ls, err)
			}
			msgs, err := b.MessageTake(ctx, &store.MessageTakeParams{Owner: "w", Lease: ls[0].LeaseRef, Limit: 1})
			if err != nil || len(msgs) != 1 {
				t.Fatal(msgs, err)
			}
			// Another session inserts the effect UUID the turn stages, without
			// committing: the turn's INSERT waits for it inside the commit
			// transaction, after the fenced update.
			db := rawDB(t, dsn)
			blocker, _ := db.Conn(ctx)
			defer blocker.Close()
			blocker.ExecContext(ctx, "START TRANSACTION")
			if _, err := blocker.ExecContext(ctx, `INSERT INTO ductus_effects (uuid, actor_pk, name, args, ordered, generation, message_id, due_at, created_at)
				VALUES ('fx-1', 0, 'fx', '{}', 0, 0, 0, NOW(6), NOW(6))`); err != nil {
				t.Fatal(err)
			}
			done := make(chan error, 1)
			go func() {
				_, err := b.TurnCommit(ctx, &store.TurnCommitParams{Owner: "w", Lease: ls[0].LeaseRef, State: []byte(`{"v":1}`), StateVersion: 1,
					Completed: []store.Completion{{MessageID: msgs[0].ID, Attempt: 1, Result: []byte(`"ok"`)}},
					Effects:   []store.NewEffect{{UUID: "fx-1", Name: "fx", Args: []byte(`{}`), MessageID: msgs[0].ID}}})
				done <- err
			}()
			var blockerID int64
			if err := blocker.QueryRowContext(ctx, "SELECT CONNECTION_ID()").Scan(&blockerID); err != nil {
				t.Fatal(err)
			}
			var id int64
			var state string
			deadline := time.Now().Add(5 * time.Second)
			for id == 0 && time.Now().Before(deadline) {
				// The commit's connection, in its effect insert (waiting for the
				// blocker's row lock).
				db.QueryRow(`SELECT ID, COALESCE(STATE, '') FROM information_schema.PROCESSLIST
					WHERE DB = DATABASE() AND COMMAND = 'Query' AND ID NOT IN (CONNECTION_ID(), ?) AND INFO LIKE 'INSERT INTO ductus_effects%'`,
					blockerID).Scan(&id, &state)
				time.Sleep(5 * time.Millisecond)
			}
			if id == 0 {
				t.Fatal("the commit never reached its effect insert")
			}
			if _, err := db.Exec(fmt.Sprintf("%s %d", kill, id)); err != nil {
				t.Fatal(err)
			}
			err = <-done
			blocker.ExecContext(ctx, "ROLLBACK")
			if err == nil || !store.IsTransient(err) || store.IsRolledBack(err) {
				t.Fatalf("commit on a killed connection (%d, %q) = %v, want a transient error of unknown outcome", id, state, err)
			}
			t.Logf("%s: %v", kill, err)
			if st, _ := b.MessageStatus(ctx, []int64{res[0].MessageID}); st[0].State != store.MessagePending {
				t.Fatalf("the killed commit completed the message: %+v", st)
			}
			if a, _ := b.ActorGet(ctx, r); a.State != nil || a.Unfinished != 1 {
				t.Fatalf("the killed commit changed the actor: %+v", a)
			}
			if fx, _ := b.EffectList(ctx, &store.EffectListParams{State: store.EffectPending}); len(fx) != 0 {
				t.Fatalf("the killed commit staged effects: %+v", fx)
			}
			// The lease still holds: the commit goes through now.
			if _, err := b.TurnCommit(ctx, &store.TurnCommitParams{Owner: "w", Lease: ls[0].LeaseRef, State: []byte(`{"v":1}`), StateVersion: 1,
				Completed: []store.Completion{{MessageID: msgs[0].ID, Attempt: 1, Result: []byte(`"ok"`)}},
				Effects:   []store.NewEffect{{UUID: "fx-1", Name: "fx", Args: []byte(`{}`), MessageID: msgs[0].ID}}}); err != nil {
				t.Fatal(err)
			}
			if st, _ := b.MessageStatus(ctx, []int64{res[0].MessageID}); st[0].State != store.MessageCompleted {
				t.Fatalf("after the retry: %+v", st)
			}
		})
	}
}

// TestConcurrentCreatesNoErrors has goroutines enqueue batches over the
// same new actors at once, without retrying: the adapter resolves the
// creation races (duplicate keys) and deadlocks itself.
func TestConcurrentCreatesNoErrors(t *testing.T) {
	b := openBackend(t, Config{})
	ctx := context.Background()
	const goroutines, actors = 8, 20
	var wg sync.WaitGroup
	errs := make(chan error, goroutines*2)
	for g := 0; g < goroutines; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var batch []store.NewMessage
			for i := 0; i < actors; i++ {
				id := (i*7 + g) % actors
				batch = append(batch, store.NewMessage{Ref: actor.Ref{Type: "t", ID: fmt.Sprint("a", id)}, Name: "m", Args: []byte(`1`)})
			}
			if _, err := b.MailboxEnqueue(ctx, nil, &store.MailboxEnqueueParams{Messages: batch}); err != nil {
				errs <- err
			}
			// And single Tells (the fast path) racing the creation too.
			one := store.NewMessage{Ref: actor.Ref{Type: "t", ID: "solo"}, Name: "m", Args: []byte(`1`)}
			if _, err := b.MailboxEnqueue(ctx, nil, &store.MailboxEnqueueParams{Messages: []store.NewMessage{one}}); err != nil {
				errs <- err
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatalf("a concurrent enqueue failed: %v", err)
	}
	for i := 0; i < actors; i++ {
		if a, err := b.ActorGet(ctx, actor.Ref{Type: "t", ID: fmt.Sprint("a", i)}); err != nil || a.Unfinished != goroutines {
			t.Fatalf("actor a%d = %+v, %v", i, a, err)
		}
	}
	if a, err := b.ActorGet(ctx, actor.Ref{Type: "t", ID: "solo"}); err != nil || a.Unfinished != goroutines {
		t.Fatalf("solo = %+v, %v", a, err)
	}
}

// TestMigrationsRerunAndConcurrentOpen: processes opening one database at
// once apply the schema once (a named lock), and a file interrupted after
// its statements but before it was recorded applies again cleanly.
func TestMigrationsRerunAndConcurrentOpen(t *testing.T) {
	dsn := newDatabase(t)
	ctx := context.Background()
	var wg sync.WaitGroup
	errs := make(chan error, 4)
	for i := 0; i < 4; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			b, err := Open(ctx, Config{DSN: dsn, Logger: quiet})
			if err != nil {
				errs <- err
				return
			}
			b.Close()
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatalf("concurrent open: %v", err)
	}
	db := rawDB(t, dsn)
	if _, err := db.Exec(`DELETE FROM ductus_schema_migrations`); err != nil {
		t.Fatal(err)
	}
	b := openBackend(t, Config{DSN: dsn})
	var n int
	if err := db.QueryRow(`SELECT COUNT(*) FROM ductus_schema_migrations`).Scan(&n); err != nil || n < 2 {
		t.Fatalf("migrations recorded after the re-run: %d, %v", n, err)
	}
	if _, err := b.MailboxEnqueue(ctx, nil, &store.MailboxEnqueueParams{Messages: []store.NewMessage{{Ref: actor.Ref{Type: "t", ID: "x"}, Name: "m", Args: []byte(`1`)}}}); err != nil {
		t.Fatal(err)
	}
}
