package postgres

import (
	"strings"
	"testing"

	"github.com/ductus/ductus/adapters/internal/sqlrow"
	"github.com/ductus/ductus/internal/testutil"
	"github.com/ductus/ductus/runtime/store"
)

// TestBacklogByActorPlan builds a history of 300,000 finished effects
// behind a small backlog (2,000 lane actors among 22,000) and checks that
// BacklogByActor's plan, the custom plan it runs with, reads effects only
// through the partial indexes of pending and dead rows: a count that
// read the effects' history would grow with every effect ever run.
func TestBacklogByActorPlan(t *testing.T) {
	need(t)
	if testing.Short() {
		t.Skip("builds a 300,000-effect history")
	}
	b := openSchema(t, newSchema(), nil)
	ctx := testutil.Context(t)
	// pk 1..2000 are the lanes; every other row's actor_pk spreads over
	// both types.
	for _, q := range []string{
		`INSERT INTO ductus_actors (type, id) SELECT 'ductus.lane', 'ix/dst/' || g FROM generate_series(1, 2000) g`,
		`INSERT INTO ductus_actors (type, id) SELECT 'other', 'o' || g FROM generate_series(1, 20000) g`,
		`INSERT INTO ductus_effects (uuid, actor_pk, name, args, ordered, generation, message_id, state, due_at, created_at, finished_at)
			SELECT 'done' || g, 1 + g % 22000, 'fx', '{}', g % 2 = 0, 1, g, 'done', now(), now(), now() FROM generate_series(1, 300000) g`,
		`INSERT INTO ductus_effects (uuid, actor_pk, name, args, ordered, generation, message_id, state, due_at, created_at, finished_at)
			SELECT 'rest' || g, 1 + g * 37 % 22000, 'fx', '{}', g % 2 = 0, 1, g, CASE WHEN g <= 100 THEN 'dead' ELSE 'pending' END,
				now(), now(), CASE WHEN g <= 100 THEN now() END FROM generate_series(1, 1100) g`,
		// 100,000 messages, the history the ready and claimed rows'
		// enqueue times are looked up in (by primary key, never a scan).
		`INSERT INTO ductus_messages (id, actor_pk, seq, name, args, enqueued_at, available_at) OVERRIDING SYSTEM VALUE
			SELECT g, 1 + g % 22000, g, 'deliver', '{}', now() - interval '1 hour' + g * interval '1 ms', now() FROM generate_series(1, 100000) g`,
		`INSERT INTO ductus_ready (actor_pk, seq, message_id, due_at) SELECT 1 + g % 22000, g, g, now() FROM generate_series(1, 3000) g`,
		`INSERT INTO ductus_claimed (actor_pk, seq, message_id, generation, attempt, claimed_at)
			SELECT 1 + g * 13 % 22000, 10000 + g, 10000 + g, 1, 1, now() FROM generate_series(1, 200) g`,
		`INSERT INTO ductus_dead_letters (message_id, actor_pk, type, dead_at)
			SELECT 20000 + g, a.pk, a.type, now() FROM generate_series(1, 1100) g JOIN ductus_actors a ON a.pk = 1 + g * 7 % 22000`,
		`ANALYZE`,
	} {
		if _, err := b.Pool().Exec(ctx, q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}

	st := sqlrow.BacklogByActor(&store.BacklogByActorParams{Type: "ductus.lane"}, sqlrow.SQLBooleans)
	conn, err := b.Pool().Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Release()
	tx, err := conn.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(ctx)
	if _, err := tx.Exec(ctx, "SET LOCAL plan_cache_mode = force_custom_plan"); err != nil {
		t.Fatal(err)
	}
	// The statement is EXPLAINed as the adapter runs it: prepared, then
	// executed with a custom plan for the type.
	if _, err := tx.Exec(ctx, "PREPARE ductus_backlog_by_actor AS "+Rebind(st.SQL)); err != nil {
		t.Fatal(err)
	}
	defer conn.Exec(ctx, "DEALLOCATE ductus_backlog_by_actor")
	lit := strings.TrimSuffix(strings.Repeat("'ductus.lane', ", len(st.Args)), ", ")
	rows, err := tx.Query(ctx, "EXPLAIN (COSTS OFF) EXECUTE ductus_backlog_by_actor("+lit+")")
	if err != nil {
		t.Fatal(err)
	}
	var sb strings.Builder
	for rows.Next() {
		var line string
		if err := rows.Scan(&line); err != nil {
			t.Fatal(err)
		}
		sb.WriteString(line + "\n")
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	plan := sb.String()
	t.Logf("BacklogByActor's plan:\n%s", plan)
	for _, want := range []string{"ductus_effects_ordered", "ductus_effects_unordered_due", "ductus_effects_dead"} {
		if !strings.Contains(plan, want) {
			t.Errorf("the plan does not read %s", want)
		}
	}
	for _, bad := range []string{"Seq Scan on ductus_effects", "ductus_effects_actor", "ductus_effects_finished", "ductus_effects_message", "Seq Scan on ductus_messages"} {
		if strings.Contains(plan, bad) {
			t.Errorf("the plan reads the effects' history (%s)", bad)
		}
	}
	if err := tx.Rollback(ctx); err != nil {
		t.Fatal(err)
	}

	// The adapter's own run counts what was built: every lane among pk
	// 1..2000 has a ready message (1 + g % 22000 for g = 1..3000 covers
	// them all but pk 1).
	got, err := b.BacklogByActor(ctx, &store.BacklogByActorParams{Type: "ductus.lane"})
	if err != nil {
		t.Fatal(err)
	}
	var sum store.ActorBacklog
	for _, a := range got {
		sum.Messages += a.Messages
		sum.Effects += a.Effects
		sum.DeadLetters += a.DeadLetters
		sum.DeadEffects += a.DeadEffects
	}
	var want store.ActorBacklog
	if err := b.Pool().QueryRow(ctx, `SELECT
		(SELECT COUNT(*) FROM ductus_ready WHERE actor_pk <= 2000) + (SELECT COUNT(*) FROM ductus_claimed WHERE actor_pk <= 2000),
		(SELECT COUNT(*) FROM ductus_effects WHERE actor_pk <= 2000 AND state = 'pending'),
		(SELECT COUNT(*) FROM ductus_dead_letters WHERE actor_pk <= 2000),
		(SELECT COUNT(*) FROM ductus_effects WHERE actor_pk <= 2000 AND state = 'dead')`).Scan(
		&want.Messages, &want.Effects, &want.DeadLetters, &want.DeadEffects); err != nil {
		t.Fatal(err)
	}
	if sum != want || len(got) < 1999 {
		t.Errorf("BacklogByActor over %d lanes sums to %+v, want %+v", len(got), sum, want)
	}
}
