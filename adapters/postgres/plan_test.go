package postgres

import (
	"context"
	"fmt"
	"net"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/ductus/ductus/actor"
	"github.com/ductus/ductus/internal/testutil"
	"github.com/ductus/ductus/runtime/store"
)

// explain returns the plan the adapter's connections run query with: the
// generic plan of the prepared statement (connections force generic
// plans), shown by EXPLAIN EXECUTE with the given SQL literals, or with
// NULL for every parameter when literals is empty (a generic plan does not
// depend on them).
func explain(t *testing.T, b *Backend, query, literals string) string {
	t.Helper()
	ctx := testutil.Context(t)
	conn, err := b.Pool().Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Release()
	if _, err := conn.Exec(ctx, "PREPARE ductus_explain AS "+query); err != nil {
		t.Fatal(err)
	}
	defer conn.Exec(context.Background(), "DEALLOCATE ductus_explain")
	if literals == "" {
		var n int
		if err := conn.QueryRow(ctx, `SELECT cardinality(parameter_types) FROM pg_prepared_statements WHERE name = 'ductus_explain'`).Scan(&n); err != nil {
			t.Fatal(err)
		}
		literals = strings.TrimSuffix(strings.Repeat("NULL,", n), ",")
	}
	rows, err := conn.Query(ctx, "EXPLAIN EXECUTE ductus_explain("+literals+")")
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var sb strings.Builder
	for rows.Next() {
		var line string
		if err := rows.Scan(&line); err != nil {
			t.Fatal(err)
		}
		sb.WriteString(line + "\n")
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return sb.String()
}

// TestQueueReadIsIndexRangeScan builds a delivered history of 100,000
// messages behind a hot actor (and 20,000 ready or claimed messages over
// 2,000 other actors), then checks that the take and the claim are index range scans:
// completed messages are in neither the ready nor the claimed table, so
// the queue read touches K rows whatever the history.
func TestQueueReadIsIndexRangeScan(t *testing.T) {
	need(t)
	if testing.Short() {
		t.Skip("builds a 100,000-message history")
	}
	b := openSchema(t, newSchema(), nil)
	ctx := testutil.Context(t)
	hot := actor.Ref{Type: "plan", ID: "hot"}
	// The history, written directly: completed messages 1..100000 (the
	// finished messages are a prefix of the sequence, as the runtime
	// leaves them).
	if _, err := b.Pool().Exec(ctx, `
		INSERT INTO ductus_actors (type, id, next_seq) VALUES ('plan', 'hot', 100001);
		INSERT INTO ductus_messages (actor_pk, seq, name, args, enqueued_at, available_at, attempts)
		SELECT a.pk, g, 'm', '{}', now(), now(), 1 FROM ductus_actors a, generate_series(1, 100000) g WHERE a.type = 'plan';
		INSERT INTO ductus_results (message_id, attempt, completed_at, result)
		SELECT m.id, 1, now(), 'null' FROM ductus_messages m JOIN ductus_actors a ON a.pk = m.actor_pk WHERE a.type = 'plan'`); err != nil {
		t.Fatal(err)
	}
	var others []store.NewMessage
	for i := 0; i < 20000; i++ {
		others = append(others, store.NewMessage{Ref: actor.Ref{Type: "plan.other", ID: fmt.Sprintf("o%04d", i%2000)}, Name: "m"})
	}
	if _, err := b.MailboxEnqueue(ctx, nil, &store.MailboxEnqueueParams{Messages: others}); err != nil {
		t.Fatal(err)
	}
	var hotMsgs []store.NewMessage
	for i := 0; i < 50; i++ {
		hotMsgs = append(hotMsgs, store.NewMessage{Ref: hot, Name: "m"})
	}
	if _, err := b.MailboxEnqueue(ctx, nil, &store.MailboxEnqueueParams{Messages: hotMsgs}); err != nil {
		t.Fatal(err)
	}
	// Half the other actors are mid-turn: their messages sit in claimed.
	if _, err := b.Pool().Exec(ctx, `
		WITH mv AS (DELETE FROM ductus_ready r USING ductus_actors a WHERE a.pk = r.actor_pk AND a.type = 'plan.other' AND a.id < 'o1000'
			RETURNING r.actor_pk, r.seq, r.message_id)
		INSERT INTO ductus_claimed (actor_pk, seq, message_id, generation, attempt, claimed_at) SELECT actor_pk, seq, message_id, 1, 1, now() FROM mv`); err != nil {
		t.Fatal(err)
	}
	if _, err := b.Pool().Exec(ctx, `ANALYZE`); err != nil {
		t.Fatal(err)
	}
	ls, err := b.LeaseClaim(ctx, &store.LeaseClaimParams{Owner: "w", TTL: time.Minute, Limit: 1, Types: []string{"plan"}})
	if err != nil || len(ls) != 1 {
		t.Fatal(ls, err)
	}
	l := ls[0].LeaseRef

	take := explain(t, b, sqlTake, fmt.Sprintf("%d, 'w', %d, 16", l.ActorPK, l.Generation))
	t.Logf("take plan:\n%s", take)
	for _, want := range []string{"Index Scan using ductus_actors_pkey", "Index Scan using ductus_ready_pkey on ductus_ready", "Index Scan using ductus_messages_pkey"} {
		if !strings.Contains(take, want) {
			t.Errorf("the take's plan does not use %q", want)
		}
	}
	for _, bad := range []string{"Seq Scan on ductus_messages", "Seq Scan on ductus_ready", "Seq Scan on ductus_claimed"} {
		if strings.Contains(take, bad) {
			t.Errorf("the take's plan has a %q", bad)
		}
	}
	claim := explain(t, b, sqlClaim, "'w2', 60000000, '{plan.other}', 10, 0")
	t.Logf("claim plan:\n%s", claim)
	if !strings.Contains(claim, "Index Scan using ductus_actors_claimable") || !strings.Contains(claim, "Index Scan using ductus_actors_pkey") ||
		strings.Contains(claim, "Seq Scan on ductus_actors") {
		t.Errorf("the claim does not range-scan the claim index and update by key")
	}
	fence := explain(t, b, sqlFence, fmt.Sprintf("%d, 'w', %d, null, 1, 0", l.ActorPK, l.Generation))
	if !strings.Contains(fence, "Index Scan using ductus_actors_pkey") {
		t.Errorf("the fence does not find the actor by key:\n%s", fence)
	}

	// For the record (tests never assert speed): the take itself, once
	// its statement is prepared.
	msgs, err := b.MessageTake(ctx, &store.MessageTakeParams{Owner: "w", Lease: l, Limit: 16})
	if err != nil || len(msgs) != 16 || msgs[0].Seq != 100001 {
		t.Fatalf("take = %d messages (first %+v), %v", len(msgs), msgs, err)
	}
	var took []time.Duration
	for i := 0; i < 3; i++ {
		if _, err := b.TurnCommit(ctx, &store.TurnCommitParams{Owner: "w", Lease: l, Completed: completions(msgs)}); err != nil {
			t.Fatal(err)
		}
		began := time.Now()
		if msgs, err = b.MessageTake(ctx, &store.MessageTakeParams{Owner: "w", Lease: l, Limit: 16}); err != nil || len(msgs) == 0 {
			t.Fatal(len(msgs), err)
		}
		took = append(took, time.Since(began))
	}
	t.Logf("takes of 16 behind 100,000 delivered messages: %v", took)
}

// rtConn counts round trips on a connection: a read that follows a write
// is one (pipelined statements cost one round trip together).
type rtConn struct {
	net.Conn
	n     *atomic.Int64
	wrote atomic.Bool
}

func (c *rtConn) Write(p []byte) (int, error) { c.wrote.Store(true); return c.Conn.Write(p) }
func (c *rtConn) Read(p []byte) (int, error) {
	if c.wrote.Swap(false) {
		c.n.Add(1)
	}
	return c.Conn.Read(p)
}

// TestRoundTrips measures, on the wire, the round trips of the hot path
// once its statements are prepared: a Tell, a claim, a take, a commit of K
// messages, the same with the next take folded in, and with a NOTIFY.
func TestRoundTrips(t *testing.T) {
	need(t)
	var n atomic.Int64
	b := openSchema(t, newSchema(), func(pc *pgxpool.Config) {
		pc.MaxConns, pc.MinConns = 1, 1
		d := &net.Dialer{Timeout: 5 * time.Second}
		pc.ConnConfig.DialFunc = func(ctx context.Context, network, addr string) (net.Conn, error) {
			c, err := d.DialContext(ctx, network, addr)
			if err != nil {
				return nil, err
			}
			return &rtConn{Conn: c, n: &n}, nil
		}
	})
	ctx := testutil.Context(t)
	const k = 8
	cycle := func(id string, measure func(what string, want int64, fn func())) {
		r := actor.Ref{Type: "rt", ID: id}
		var pk int64
		measure("Tell (one message)", 1, func() {
			res, err := b.MailboxEnqueue(ctx, nil, &store.MailboxEnqueueParams{Messages: []store.NewMessage{{Ref: r, Name: "m"}}})
			if err != nil {
				t.Fatal(err)
			}
			pk = res[0].ActorPK
		})
		measure("Tell (to an actor told before: by its key)", 1, func() {
			if _, err := b.MailboxEnqueue(ctx, nil, &store.MailboxEnqueueParams{Messages: []store.NewMessage{{Ref: r, Name: "m"}}}); err != nil {
				t.Fatal(err)
			}
		})
		batch := make([]store.NewMessage, 3*k)
		for i := range batch {
			batch[i] = store.NewMessage{Ref: actor.Ref{Type: "rt", ID: fmt.Sprintf("%s-%d", id, i%3)}, Name: "m"}
			if i < 2*k {
				batch[i].Ref = r
			}
		}
		measure("TellBatch (24 messages, 3 actors)", 1, func() {
			if _, err := b.MailboxEnqueue(ctx, nil, &store.MailboxEnqueueParams{Messages: batch, MailboxCap: 1000}); err != nil {
				t.Fatal(err)
			}
		})
		var ls []store.Lease
		measure("claim", 1, func() {
			var err error
			ls, err = b.LeaseClaim(ctx, &store.LeaseClaimParams{Owner: "w", TTL: time.Minute, Limit: 1, Types: []string{"rt"}, PKs: []int64{pk}})
			if err != nil || len(ls) != 1 {
				t.Fatal(ls, err)
			}
		})
		l := ls[0].LeaseRef
		var msgs []store.Message
		measure("take (K=8)", 1, func() {
			var err error
			msgs, err = b.MessageTake(ctx, &store.MessageTakeParams{Owner: "w", Lease: l, Limit: k})
			if err != nil || len(msgs) != k {
				t.Fatal(len(msgs), err)
			}
		})
		var next []store.Message
		measure("commit of K=8 with the next take", 1, func() {
			res, err := b.TurnCommit(ctx, &store.TurnCommitParams{Owner: "w", Lease: l, State: []byte(`{"n":8}`), StateVersion: 1, Completed: completions(msgs), TakeNext: k})
			if err != nil || len(res.Next) != k {
				t.Fatal(len(res.Next), err)
			}
			next = res.Next
		})
		measure("commit of K=8 with a done NOTIFY", 1, func() {
			if _, err := b.TurnCommit(ctx, &store.TurnCommitParams{Owner: "w", Lease: l, Completed: completions(next[:k-1]),
				Returned: []int64{next[k-1].ID}, SignalDone: []int64{next[0].ID}}); err != nil {
				t.Fatal(err)
			}
		})
		msgs, _ = b.MessageTake(ctx, &store.MessageTakeParams{Owner: "w", Lease: l, Limit: k})
		measure("commit of K=1", 1, func() {
			if _, err := b.TurnCommit(ctx, &store.TurnCommitParams{Owner: "w", Lease: l, Completed: completions(msgs)}); err != nil {
				t.Fatal(err)
			}
		})
		measure("renew", 1, func() {
			if _, err := b.LeaseRenew(ctx, &store.LeaseRenewParams{Owner: "w", TTL: time.Minute, Leases: []store.LeaseRef{l}}); err != nil {
				t.Fatal(err)
			}
		})
		measure("release", 1, func() {
			if err := b.LeaseRelease(ctx, &store.LeaseReleaseParams{Owner: "w", Leases: []store.LeaseRef{l}}); err != nil {
				t.Fatal(err)
			}
		})
	}
	// The first cycle prepares every statement (one extra round trip for
	// each batch that meets a new statement); the second is measured.
	cycle("warm", func(_ string, _ int64, fn func()) { fn() })
	cycle("hot", func(what string, want int64, fn func()) {
		before := n.Load()
		fn()
		got := n.Load() - before
		t.Logf("%-40s %d round trip(s)", what, got)
		if got != want {
			t.Errorf("%s took %d round trips, want %d", what, got, want)
		}
	})
}

func completions(msgs []store.Message) []store.Completion {
	out := make([]store.Completion, len(msgs))
	for i, m := range msgs {
		out[i] = store.Completion{MessageID: m.ID, Attempt: m.Attempt, Result: []byte(`null`)}
	}
	return out
}

// TestQueueReadIgnoresUnvacuumedHistory counts the buffers a take and a
// commit touch in the ready and claimed tables and their indexes, for an
// actor with 100,000 delivered messages whose ready and claimed rows are
// deleted but not yet vacuumed (autovacuum is off for the test's tables)
// and for one with 100: the index entries of those rows stay until vacuum,
// so a scan from the start of the actor's key range walks every one. The
// counts must not depend on the history.
func TestQueueReadIgnoresUnvacuumedHistory(t *testing.T) {
	need(t)
	if testing.Short() {
		t.Skip("builds a 100,000-message history")
	}
	b := openSchema(t, newSchema(), nil)
	ctx := testutil.Context(t)
	exec := func(q string, args ...any) {
		t.Helper()
		if _, err := b.Pool().Exec(ctx, q, args...); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	exec(`ALTER TABLE ductus_ready SET (autovacuum_enabled = off)`)
	exec(`ALTER TABLE ductus_claimed SET (autovacuum_enabled = off)`)
	const k = 64
	history := map[string]int{"small": 100, "big": 100_000}
	for _, id := range []string{"small", "big"} {
		// Each delivered message passed through ready and claimed, as the
		// take and the commit move it, in statements of their own.
		exec(`INSERT INTO ductus_actors (type, id, next_seq) VALUES ('plan', $1, $2 + 1)`, id, history[id])
		pk := `(SELECT pk FROM ductus_actors WHERE type = 'plan' AND id = '` + id + `')`
		exec(`INSERT INTO ductus_messages (actor_pk, seq, name, args, enqueued_at, available_at, attempts)
			SELECT `+pk+`, g, 'm', '{}', now(), now(), 1 FROM generate_series(1, $1::int) g`, history[id])
		exec(`INSERT INTO ductus_ready (actor_pk, seq, message_id, due_at) SELECT actor_pk, seq, id, now() FROM ductus_messages WHERE actor_pk = ` + pk)
		exec(`WITH mv AS (DELETE FROM ductus_ready WHERE actor_pk = ` + pk + ` RETURNING actor_pk, seq, message_id)
			INSERT INTO ductus_claimed (actor_pk, seq, message_id, generation, attempt, claimed_at) SELECT actor_pk, seq, message_id, 1, 1, now() FROM mv`)
		exec(`WITH d AS (DELETE FROM ductus_claimed WHERE actor_pk = ` + pk + ` RETURNING message_id)
			INSERT INTO ductus_results (message_id, attempt, completed_at, result) SELECT message_id, 1, now(), 'null' FROM d`)
		msgs := make([]store.NewMessage, 2*k)
		for i := range msgs {
			msgs[i] = store.NewMessage{Ref: actor.Ref{Type: "plan", ID: id}, Name: "m"}
		}
		if _, err := b.MailboxEnqueue(ctx, nil, &store.MailboxEnqueueParams{Messages: msgs}); err != nil {
			t.Fatal(err)
		}
	}
	exec(`ANALYZE`)

	// One transaction on one connection, rolled back: the backend's
	// per-transaction block counters see every statement of it.
	conn, err := b.Pool().Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Release()
	tx, err := conn.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(context.Background())
	blocks := func() int64 {
		t.Helper()
		var n int64
		if err := tx.QueryRow(ctx, `SELECT sum(pg_stat_get_xact_blocks_fetched(c.oid))::bigint FROM pg_class c
			WHERE c.oid IN ('ductus_ready'::regclass, 'ductus_ready_pkey'::regclass, 'ductus_claimed'::regclass, 'ductus_claimed_pkey'::regclass)`).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	cost := map[string][2]int64{}
	for _, id := range []string{"small", "big"} {
		var pk, gen int64
		if err := tx.QueryRow(ctx, `UPDATE ductus_actors SET lease_owner = 'w', lease_expires = now() + interval '1 minute', generation = generation + 1
			WHERE type = 'plan' AND id = $1 RETURNING pk, generation`, id).Scan(&pk, &gen); err != nil {
			t.Fatal(err)
		}
		before := blocks()
		rows, err := tx.Query(ctx, sqlTake, pk, "w", gen, k)
		if err != nil {
			t.Fatal(err)
		}
		var took []store.Message
		for rows.Next() {
			var m store.Message
			if err := rows.Scan(&m.ID, &m.Seq, &m.Name, &m.Args, &m.Attempt, &m.Ask, &m.EnqueuedAt, &m.AvailableAt); err != nil {
				t.Fatal(err)
			}
			took = append(took, m)
		}
		if rows.Err() != nil || len(took) != k || took[0].Seq != int64(history[id]+1) {
			t.Fatalf("%s: took %d messages from seq %d, %v", id, len(took), took[0].Seq, rows.Err())
		}
		take := blocks() - before
		ids, results, attempts := make([]int64, k), make([][]byte, k), make([]int32, k)
		for i, m := range took {
			ids[i], results[i], attempts[i] = m.ID, []byte(`null`), int32(m.Attempt)
		}
		before = blocks()
		for _, st := range []struct {
			q    string
			args []any
		}{
			{sqlFence, []any{pk, "w", gen, nil, int32(0), int32(k)}},
			{sqlFinish, []any{pk, gen, ids, results, attempts, int32(k)}},
			{sqlHead, []any{pk}},
		} {
			if _, err := tx.Exec(ctx, st.q, st.args...); err != nil {
				t.Fatal(err)
			}
		}
		commit := blocks() - before
		var claimed int
		if err := tx.QueryRow(ctx, `SELECT count(*) FROM ductus_claimed WHERE actor_pk = $1`, pk).Scan(&claimed); err != nil || claimed != 0 {
			t.Fatalf("%s: %d rows left claimed after the commit, %v", id, claimed, err)
		}
		cost[id] = [2]int64{take, commit}
	}
	t.Logf("blocks of ready/claimed touched, take and commit of %d: 100 delivered %v, 100,000 delivered %v", k, cost["small"], cost["big"])
	// A B-tree one level deeper is a few blocks more per scan; the
	// history's leaf pages are hundreds.
	for i, what := range []string{"take", "commit"} {
		if small, big := cost["small"][i], cost["big"][i]; big > small+8 {
			t.Errorf("the %s touched %d blocks behind 100,000 delivered messages, %d behind 100", what, big, small)
		}
	}
}

// TestEffectStatementsFindRowsByKey: leasing ordered runs and recording
// their outcomes never scans ductus_effects whole, even on a connection
// whose plans were first made while the table was empty and whose
// statistics were never gathered (autovacuum off for the table). Before
// customPlan, such a connection kept a plan that scanned the table, and
// with 10,000 effects a run's lease took up to 1.3 s.
func TestEffectStatementsFindRowsByKey(t *testing.T) {
	b := openSchema(t, newSchema(), func(pc *pgxpool.Config) { pc.MaxConns, pc.MinConns = 1, 1 })
	ctx := testutil.Context(t)
	exec := func(sql string) {
		t.Helper()
		if _, err := b.Pool().Exec(ctx, sql); err != nil {
			t.Fatal(err)
		}
	}
	// ordered adds n pending ordered effects to each of actors new actors,
	// with their lanes due.
	ordered := func(actors, n int, prefix string) {
		exec(fmt.Sprintf(`
			INSERT INTO ductus_actors (type, id) SELECT 'plan', '%[1]s' || g FROM generate_series(1, %[2]d) g;
			INSERT INTO ductus_effects (uuid, actor_pk, name, args, ordered, generation, message_id, due_at, created_at)
			SELECT gen_random_uuid()::text, a.pk, 'fx', '{}', true, 1, 0, now(), now()
			FROM ductus_actors a, generate_series(1, %[3]d) g WHERE a.id LIKE '%[1]s%%';
			INSERT INTO ductus_lanes (actor_pk, kind, due_at) SELECT pk, 'effect', now() FROM ductus_actors WHERE id LIKE '%[1]s%%'`, prefix, actors, n))
	}
	// cycle leases every due run and records each effect as done.
	cycle := func() int {
		t.Helper()
		fx, err := b.EffectClaim(ctx, &store.EffectClaimParams{Owner: "w", TTL: time.Minute, Limit: 64, Names: []string{"fx"}, OrderedRun: 16})
		if err != nil {
			t.Fatal(err)
		}
		var out []store.EffectOutcome
		for _, e := range fx {
			out = append(out, store.EffectOutcome{ID: e.ID, Attempt: e.Attempt, Success: true})
		}
		for len(out) > 0 {
			n := min(len(out), 50)
			if err := b.EffectFinish(ctx, &store.EffectFinishParams{Owner: "w", Outcomes: out[:n]}); err != nil {
				t.Fatal(err)
			}
			out = out[n:]
		}
		return len(fx)
	}
	scans := func() (seq, idx int64) { return tableScans(t, b, "ductus_effects") }

	exec(`ALTER TABLE ductus_effects SET (autovacuum_enabled = false)`)
	ordered(1, 1, "first")
	if n := cycle(); n != 1 { // the plans are made now, on a table of one row
		t.Fatalf("the first cycle leased %d effects, want 1", n)
	}
	ordered(200, 50, "many")
	seq0, idx0 := scans()
	if n := cycle(); n != 64*16 {
		t.Fatalf("leased %d effects, want %d (64 runs of 16)", n, 64*16)
	}
	seq1, idx1 := scans()
	t.Logf("ductus_effects scans during a cycle over 10,000 effects: %d sequential, %d by index", seq1-seq0, idx1-idx0)
	if idx1 == idx0 {
		t.Fatal("no index scan was counted: the statistics were not flushed, so the check below proves nothing")
	}
	if seq1 != seq0 {
		t.Errorf("leasing and recording ordered runs scanned ductus_effects whole %d times", seq1-seq0)
	}
}

// tableScans reads a table's scan counters, the connection's pending
// counts flushed first (the pool must hold one connection, so that they
// are the statements' own).
func tableScans(t *testing.T, b *Backend, table string) (seq, idx int64) {
	t.Helper()
	ctx := testutil.Context(t)
	for _, sql := range []string{`SELECT pg_stat_force_next_flush()`, `SELECT 1`, `SELECT pg_stat_clear_snapshot()`} {
		if _, err := b.Pool().Exec(ctx, sql); err != nil {
			t.Fatal(err)
		}
	}
	if err := b.Pool().QueryRow(ctx, `SELECT seq_scan, COALESCE(idx_scan, 0) FROM pg_stat_user_tables
		WHERE relname = $1 AND schemaname = current_schema()`, table).Scan(&seq, &idx); err != nil {
		t.Fatal(err)
	}
	return seq, idx
}

// TestTakeFindsMessagesByKey: a take reads the rows of the messages it
// takes by their key, even on a connection whose plan was made while
// ductus_messages was nearly empty and whose statistics were never
// gathered. As a plain join, that plan hashed the taken rows and scanned
// the whole table, and kept doing so as the table grew: 52 ms of a 94 ms
// take behind 155,000 messages in a fan-out benchmark (2026-12-07).
func TestTakeFindsMessagesByKey(t *testing.T) {
	need(t)
	b := openSchema(t, newSchema(), func(pc *pgxpool.Config) { pc.MaxConns, pc.MinConns = 1, 1 })
	ctx := testutil.Context(t)
	for _, table := range []string{"ductus_messages", "ductus_ready", "ductus_claimed"} {
		if _, err := b.Pool().Exec(ctx, `ALTER TABLE `+table+` SET (autovacuum_enabled = false)`); err != nil {
			t.Fatal(err)
		}
	}
	hot := actor.Ref{Type: "plan", ID: "hot"}
	enqueue := func(ref func(i int) actor.Ref, n int) {
		t.Helper()
		msgs := make([]store.NewMessage, n)
		for i := range msgs {
			msgs[i] = store.NewMessage{Ref: ref(i), Name: "m"}
		}
		if _, err := b.MailboxEnqueue(ctx, nil, &store.MailboxEnqueueParams{Messages: msgs}); err != nil {
			t.Fatal(err)
		}
	}
	enqueue(func(int) actor.Ref { return hot }, 1)
	ls, err := b.LeaseClaim(ctx, &store.LeaseClaimParams{Owner: "w", TTL: time.Minute, Limit: 1, Types: []string{"plan"}})
	if err != nil || len(ls) != 1 {
		t.Fatal(ls, err)
	}
	l := ls[0].LeaseRef
	// The take's plan is made now, on a table of one row.
	msgs, err := b.MessageTake(ctx, &store.MessageTakeParams{Owner: "w", Lease: l, Limit: 64})
	if err != nil || len(msgs) != 1 {
		t.Fatalf("first take = %d messages, %v", len(msgs), err)
	}
	if _, err := b.TurnCommit(ctx, &store.TurnCommitParams{Owner: "w", Lease: l, Completed: completions(msgs)}); err != nil {
		t.Fatal(err)
	}
	for range 10 {
		enqueue(func(i int) actor.Ref { return actor.Ref{Type: "plan.other", ID: fmt.Sprintf("o%03d", i%100)} }, 1000)
	}
	enqueue(func(int) actor.Ref { return hot }, 100)

	seq0, idx0 := tableScans(t, b, "ductus_messages")
	msgs, err = b.MessageTake(ctx, &store.MessageTakeParams{Owner: "w", Lease: l, Limit: 64})
	if err != nil || len(msgs) != 64 {
		t.Fatalf("take = %d messages, %v; want 64", len(msgs), err)
	}
	seq1, idx1 := tableScans(t, b, "ductus_messages")
	t.Logf("ductus_messages scans during a take of 64 behind 10,101 messages: %d sequential, %d by index", seq1-seq0, idx1-idx0)
	switch {
	case seq1 != seq0:
		t.Errorf("the take scanned ductus_messages whole %d times", seq1-seq0)
	case idx1 == idx0:
		t.Fatal("no scan at all was counted: the statistics were not flushed, so the check proves nothing")
	}
}
