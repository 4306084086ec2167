package mysql

import (
	"database/sql"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/ductus/ductus/adapters/internal/sqlrow"
	"github.com/ductus/ductus/internal/testutil"
	"github.com/ductus/ductus/runtime/store"
)

// The backlog history of TestBacklogByActorPlan: 20 destinations (lane
// actors, pk 1..20) among 2,020 actors; 100,000 delivered messages and
// 100,000 done effects, most of them the lanes'; and a backlog of 10
// unfinished messages, 10 pending effects, 3 dead effects and 3 dead
// letters on the lanes (and a few more on the other actors, with 1,000
// dead letters).
const (
	backlogLanes   = 20
	backlogActors  = 2020
	backlogHistory = 100_000
)

// backlogFill is the history in MySQL, given a sequence (seq, of g) of at
// least backlogHistory integers.
func backlogFill(seq func(n int) string) []string {
	return []string{
		fmt.Sprintf(`INSERT INTO ductus_actors (pk, type, id, created_at, updated_at)
			SELECT g, CASE WHEN g <= %d THEN 'ductus.lane' ELSE 'other' END, CONCAT(CASE WHEN g <= %[1]d THEN 'ix/dst/' ELSE 'o' END, g), NOW(6), NOW(6)
			FROM %s ORDER BY g`, backlogLanes, seq(backlogActors)),
		// Delivered history: 100,000 completed messages on the lanes.
		fmt.Sprintf(`INSERT INTO ductus_messages (id, actor_pk, seq, name, args, enqueued_at, available_at, completed_at)
			SELECT g, 1 + g %% %d, g, 'deliver', '{}', NOW(6), NOW(6), NOW(6) FROM %s ORDER BY g`, backlogLanes, seq(backlogHistory)),
		// Done effects: four in five on the lanes, half of them ordered.
		fmt.Sprintf(`INSERT INTO ductus_effects (id, uuid, actor_pk, name, args, ordered, generation, message_id, state, due_at, created_at, finished_at)
			SELECT g, CONCAT('done', g), 1 + g %% 25, 'send', '{}', g %% 2, 1, g, 'done', NOW(6), NOW(6), NOW(6) FROM %s ORDER BY g`, seq(backlogHistory)),
		// The backlog: messages 100,001..100,010 unfinished on the lanes
		// (7 ready, 3 claimed); 100,011..100,018 dead letters (3 of lanes).
		fmt.Sprintf(`INSERT INTO ductus_messages (id, actor_pk, seq, name, args, enqueued_at, available_at, dead_at)
			SELECT %d + g, CASE WHEN g <= 13 THEN 1 + g %% %d ELSE 100 + g END, %[1]d + g, 'deliver', '{}', NOW(6), NOW(6),
				CASE WHEN g > 10 THEN NOW(6) END FROM %[3]s WHERE g <= 18`, backlogHistory, backlogLanes, seq(18)),
		fmt.Sprintf(`INSERT INTO ductus_ready (message_id, actor_pk, seq, due_at)
			SELECT id, actor_pk, seq, NOW(6) FROM ductus_messages WHERE id BETWEEN %d AND %d`, backlogHistory+1, backlogHistory+7),
		fmt.Sprintf(`INSERT INTO ductus_claimed (message_id, actor_pk, seq, generation, attempt, claimed_at)
			SELECT id, actor_pk, seq, 1, 1, NOW(6) FROM ductus_messages WHERE id BETWEEN %d AND %d`, backlogHistory+8, backlogHistory+10),
		// 1,000 more dead letters, of the other actors.
		fmt.Sprintf(`INSERT INTO ductus_messages (id, actor_pk, seq, name, args, enqueued_at, available_at, dead_at)
			SELECT %d + g, %d + g %% 2000, %[1]d + g, 'deliver', '{}', NOW(6), NOW(6), NOW(6) FROM %[3]s`, backlogHistory+100, backlogLanes+1, seq(1000)),
		fmt.Sprintf(`INSERT INTO ductus_dead_letters (message_id, actor_pk, type, dead_at)
			SELECT m.id, m.actor_pk, a.type, NOW(6) FROM ductus_messages m JOIN ductus_actors a ON a.pk = m.actor_pk WHERE m.id > %d`, backlogHistory+10),
		// 10 pending effects on the lanes (5 ordered), 3 dead on the lanes
		// and 2 on other actors.
		fmt.Sprintf(`INSERT INTO ductus_effects (id, uuid, actor_pk, name, args, ordered, generation, message_id, state, due_at, created_at, finished_at)
			SELECT %d + g, CONCAT('rest', g), CASE WHEN g <= 13 THEN 1 + g %% %d ELSE 100 + g END, 'send', '{}', g %% 2, 1, g,
				CASE WHEN g <= 10 THEN 'pending' ELSE 'dead' END, NOW(6), NOW(6), CASE WHEN g > 10 THEN NOW(6) END
			FROM %s WHERE g <= 15`, backlogHistory, backlogLanes, seq(15)),
		"ANALYZE TABLE ductus_actors, ductus_messages, ductus_ready, ductus_claimed, ductus_dead_letters, ductus_effects",
	}
}

// backlogEffectKeys are the indexes a count of pending or dead effects
// may read (state leads each of them, or follows the actor's key, so done
// effects lie outside every range), with the key parts the access must
// use: more than the actor's alone.
var backlogEffectKeys = map[string]bool{"ductus_effects_unordered_due": true, "ductus_effects_state": true, "ductus_effects_ordered": true}

// TestBacklogByActorPlan builds a history of 100,000 delivered messages
// and 100,000 done effects behind a backlog of a few unfinished rows per
// destination, and checks that BacklogByActor (one UNION ALL statement,
// run as the adapter runs it, its type interpolated) reads effects only
// through ranges that hold no done effect: MySQL has no partial indexes,
// so the state leads (or follows the actor in) each index the effect
// parts may use. The EXPLAIN must show no full scan and, for each effect
// part, one of those indexes with the state among the key parts used;
// and the statement must read fewer than 1% of the history's rows,
// counted by the session's Handler_read_* counters. The adapter's counts
// must be the backlog built.
func TestBacklogByActorPlan(t *testing.T) {
	if testing.Short() {
		t.Skip("builds a 200,000-row history")
	}
	start := time.Now()
	dsn := newDatabase(t)
	b := openBackend(t, Config{DSN: dsn})
	ctx := testutil.Context(t)
	conn, err := rawDB(t, dsn).Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	seq := mySeq(t, conn, b)
	for _, q := range backlogFill(seq) {
		if _, err := conn.ExecContext(ctx, q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	var messages, effects int
	if err := conn.QueryRowContext(ctx, `SELECT (SELECT COUNT(*) FROM ductus_messages), (SELECT COUNT(*) FROM ductus_effects)`).Scan(&messages, &effects); err != nil ||
		messages != backlogHistory+1018 || effects != backlogHistory+15 {
		t.Fatalf("filled %d messages and %d effects (%v)", messages, effects, err)
	}
	t.Logf("%s: filled in %s", b.Version(), time.Since(start).Round(time.Millisecond))

	st := sqlrow.BacklogByActor(&store.BacklogByActorParams{Type: "ductus.lane"}, sqlrow.IntBooleans)
	pc, err := b.db.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer pc.Close()
	// The measure's control: a count of the lanes' effects by actor alone
	// reads their history.
	control := sqlrow.Statement{SQL: `SELECT COUNT(*) FROM ductus_effects x JOIN ductus_actors a ON a.pk = x.actor_pk WHERE a.type = ?`, Args: []any{"ductus.lane"}}
	if n := myRowsRead(t, pc, control); n < backlogHistory/2 {
		t.Fatalf("a count of the lanes' effects read %d rows: the handler counters do not measure reads", n)
	} else {
		t.Logf("a count of the lanes' effects by actor alone read %d rows", n)
	}
	plan := myExplain(t, pc, st)
	n := myRowsRead(t, pc, st)
	t.Logf("BacklogByActor's plan, %d rows read:\n%s", n, plan)
	if err := plan.noFullScan(); err != nil {
		t.Error(err)
	}
	// Three parts read the effects (sqlrow's byActorParts: two pending,
	// one dead); each through an index whose range holds no done effect.
	// (Their select IDs shift with the message parts' subqueries, so they
	// are found by what they may read.)
	reads := 0
	for _, r := range plan.rows {
		if r.table != "x" || !strings.Contains(r.possibleKeys, "ductus_effects") {
			continue
		}
		reads++
		if !backlogEffectKeys[r.key] || r.key == "ductus_effects_ordered" && strings.Count(r.ref, ",") < 2 {
			t.Errorf("part %s reads the effects through %s (%s, ref %s): done effects are in its range", r.id, r.key, r.typ, r.ref)
		}
	}
	if reads != 3 {
		t.Errorf("%d parts read the effects, want 3", reads)
	}
	for _, r := range plan.rows {
		if r.table == "m" && r.typ != "eq_ref" {
			t.Errorf("part %s reads the messages by %s, not one primary-key lookup per actor (eq_ref)", r.id, r.typ)
		}
	}
	if n > backlogHistory/100 {
		t.Errorf("BacklogByActor read %d rows: it reads the history", n)
	}
	if b.Version().Flavor == FlavorMariaDB {
		// MariaDB's ANALYZE runs the statement and shows each access's
		// rows read (r_rows, per loop), for the log.
		t.Logf("ANALYZE:\n%s", myExplainAs(t, pc, "ANALYZE ", st).text)
	}

	got, err := b.BacklogByActor(ctx, &store.BacklogByActorParams{Type: "ductus.lane"})
	if err != nil {
		t.Fatal(err)
	}
	var sum store.ActorBacklog
	for _, a := range got {
		if !strings.HasPrefix(a.ID, "ix/dst/") {
			t.Errorf("a count of %s, not a lane", a.ID)
		}
		sum.Messages += a.Messages
		sum.Effects += a.Effects
		sum.DeadLetters += a.DeadLetters
		sum.DeadEffects += a.DeadEffects
	}
	if want := (store.ActorBacklog{Messages: 10, Effects: 10, DeadLetters: 3, DeadEffects: 3}); sum != want {
		t.Errorf("BacklogByActor over %d lanes sums to %+v, want %+v", len(got), sum, want)
	}
	t.Logf("done in %s", time.Since(start).Round(time.Millisecond))
}

// mySeq returns the source of 1..n as a derived table q of one column g,
// in order: MariaDB's SEQUENCE engine, or on MySQL a recursive CTE (its
// depth raised on conn, which must run the statements).
func mySeq(t *testing.T, conn *sql.Conn, b *Backend) func(n int) string {
	t.Helper()
	if b.Version().Flavor == FlavorMariaDB {
		return func(n int) string { return fmt.Sprintf("(SELECT seq AS g FROM seq_1_to_%d) q", n) }
	}
	if _, err := conn.ExecContext(testutil.Context(t), "SET SESSION cte_max_recursion_depth = 10000000"); err != nil {
		t.Fatal(err)
	}
	return func(n int) string {
		return fmt.Sprintf("(WITH RECURSIVE n (g) AS (SELECT 1 UNION ALL SELECT g + 1 FROM n WHERE g < %d) SELECT g FROM n) q", n)
	}
}
