package sqlite_test

import (
	"database/sql"
	"fmt"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/ductus/ductus/adapters/internal/sqlrow"
	"github.com/ductus/ductus/adapters/sqlite"
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

// backlogFill is the history in SQLite (times in microseconds).
func backlogFill() []string {
	seq := func(n int) string {
		return fmt.Sprintf("(WITH RECURSIVE n (g) AS (SELECT 1 UNION ALL SELECT g + 1 FROM n WHERE g < %d) SELECT g FROM n)", n)
	}
	const now = "1767225600000000"
	return []string{
		fmt.Sprintf(`INSERT INTO ductus_actors (pk, type, id, created_at, updated_at)
			SELECT g, CASE WHEN g <= %d THEN 'ductus.lane' ELSE 'other' END, CASE WHEN g <= %[1]d THEN 'ix/dst/' ELSE 'o' END || g, %s, %[2]s
			FROM %s ORDER BY g`, backlogLanes, now, seq(backlogActors)),
		// Delivered history: 100,000 completed messages on the lanes.
		fmt.Sprintf(`INSERT INTO ductus_messages (id, actor_pk, seq, name, args, enqueued_at, available_at, completed_at)
			SELECT g, 1 + g %% %d, g, 'deliver', '{}', %s, %[2]s, %[2]s FROM %s ORDER BY g`, backlogLanes, now, seq(backlogHistory)),
		// Done effects: four in five on the lanes, half of them ordered.
		fmt.Sprintf(`INSERT INTO ductus_effects (id, uuid, actor_pk, name, args, ordered, generation, message_id, state, due_at, created_at, finished_at)
			SELECT g, 'done' || g, 1 + g %% 25, 'send', '{}', g %% 2, 1, g, 'done', %s, %[1]s, %[1]s FROM %s ORDER BY g`, now, seq(backlogHistory)),
		// The backlog: messages 100,001..100,010 unfinished on the lanes
		// (7 ready, 3 claimed); 100,011..100,018 dead letters (3 of lanes).
		fmt.Sprintf(`INSERT INTO ductus_messages (id, actor_pk, seq, name, args, enqueued_at, available_at, dead_at)
			SELECT %d + g, CASE WHEN g <= 13 THEN 1 + g %% %d ELSE 100 + g END, %[1]d + g, 'deliver', '{}', %[3]s, %[3]s,
				CASE WHEN g > 10 THEN %[3]s END FROM %[4]s WHERE g <= 18`, backlogHistory, backlogLanes, now, seq(18)),
		fmt.Sprintf(`INSERT INTO ductus_ready (message_id, actor_pk, seq, due_at)
			SELECT id, actor_pk, seq, %s FROM ductus_messages WHERE id BETWEEN %d AND %d`, now, backlogHistory+1, backlogHistory+7),
		fmt.Sprintf(`INSERT INTO ductus_claimed (message_id, actor_pk, seq, generation, attempt, claimed_at)
			SELECT id, actor_pk, seq, 1, 1, %s FROM ductus_messages WHERE id BETWEEN %d AND %d`, now, backlogHistory+8, backlogHistory+10),
		// 1,000 more dead letters, of the other actors.
		fmt.Sprintf(`INSERT INTO ductus_messages (id, actor_pk, seq, name, args, enqueued_at, available_at, dead_at)
			SELECT %d + g, %d + g %% 2000, %[1]d + g, 'deliver', '{}', %[3]s, %[3]s, %[3]s FROM %[4]s`, backlogHistory+100, backlogLanes+1, now, seq(1000)),
		fmt.Sprintf(`INSERT INTO ductus_dead_letters (message_id, actor_pk, type, dead_at)
			SELECT m.id, m.actor_pk, a.type, %s FROM ductus_messages m JOIN ductus_actors a ON a.pk = m.actor_pk WHERE m.id > %d`, now, backlogHistory+10),
		// 10 pending effects on the lanes (5 ordered), 3 dead on the lanes
		// and 2 on other actors.
		fmt.Sprintf(`INSERT INTO ductus_effects (id, uuid, actor_pk, name, args, ordered, generation, message_id, state, due_at, created_at, finished_at)
			SELECT %d + g, 'rest' || g, CASE WHEN g <= 13 THEN 1 + g %% %d ELSE 100 + g END, 'send', '{}', g %% 2, 1, g,
				CASE WHEN g <= 10 THEN 'pending' ELSE 'dead' END, %s, %[3]s, CASE WHEN g > 10 THEN %[3]s END
			FROM %s WHERE g <= 15`, backlogHistory, backlogLanes, now, seq(15)),
		"ANALYZE",
	}
}

// backlogEffectIndex is an access to the effects (x) through one of their
// partial indexes, which hold pending (ordered, unordered) or dead rows
// only; backlogHistoryRead is any other access to them.
var (
	backlogEffectIndex = regexp.MustCompile(`(SEARCH|SCAN) x USING (COVERING )?INDEX (ductus_effects_ordered|ductus_effects_unordered_due|ductus_effects_dead)\b`)
	backlogHistoryRead = regexp.MustCompile(`ductus_effects_(finished|message)|sqlite_autoindex_ductus_effects|SCAN x$|SCAN x USING INTEGER PRIMARY KEY`)
)

// TestBacklogByActorPlan builds a history of 100,000 delivered messages
// and 100,000 done effects behind a backlog of a few unfinished rows per
// destination, and checks that BacklogByActor (one UNION ALL statement,
// its type bound as the adapter binds it) reads effects only through the
// partial indexes of pending and dead rows: in its EXPLAIN QUERY PLAN
// each effect part (3 and 4 pending, 6 dead) reads x through one of them
// and nothing reads the effects otherwise; and running it fetches a small
// fraction of the effects table's pages (the connection's page cache
// counters). The adapter's counts must be the backlog built.
func TestBacklogByActorPlan(t *testing.T) {
	if testing.Short() {
		t.Skip("builds a 200,000-row history")
	}
	start := time.Now()
	ctx := testutil.Context(t)
	path := filepath.Join(t.TempDir(), "backlog.db")
	b, err := sqlite.Open(ctx, sqlite.Config{Path: path})
	if err != nil {
		t.Fatal(err)
	}
	b.Close()
	db, err := sql.Open("sqlite", "file:"+path)
	if err != nil {
		t.Fatal(err)
	}
	db.SetMaxOpenConns(1)
	for _, q := range append([]string{"PRAGMA synchronous = OFF"}, backlogFill()...) {
		if _, err := db.ExecContext(ctx, q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	var messages, effects int
	if err := db.QueryRowContext(ctx, `SELECT (SELECT COUNT(*) FROM ductus_messages), (SELECT COUNT(*) FROM ductus_effects)`).Scan(&messages, &effects); err != nil ||
		messages != backlogHistory+1018 || effects != backlogHistory+15 {
		t.Fatalf("filled %d messages and %d effects (%v)", messages, effects, err)
	}
	db.Close()
	t.Logf("filled in %s", time.Since(start).Round(time.Millisecond))

	b, err = sqlite.Open(ctx, sqlite.Config{Path: path})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	conn := liteReader(t, path)
	var tablePages int
	if err := conn.QueryRowContext(ctx, `SELECT COUNT(*) FROM dbstat WHERE name = 'ductus_effects'`).Scan(&tablePages); err != nil {
		t.Fatal(err)
	}
	// The measure's control: a count of the lanes' effects by actor alone
	// reads the effects table.
	control := sqlrow.Statement{SQL: `SELECT COUNT(*) FROM ductus_effects x JOIN ductus_actors a ON a.pk = x.actor_pk WHERE a.type = ?`, Args: []any{"ductus.lane"}}
	if n := litePagesFetched(t, conn, control); n < tablePages {
		t.Fatalf("a count of the lanes' effects fetched %d pages, the effects table has %d: the page counters do not measure reads", n, tablePages)
	} else {
		t.Logf("the effects table has %d pages; a count of the lanes' effects by actor alone fetched %d", tablePages, n)
	}

	st := sqlrow.BacklogByActor(&store.BacklogByActorParams{Type: "ductus.lane"}, sqlrow.IntBooleans)
	plan := liteExplain(t, conn, st)
	n := litePagesFetched(t, conn, st)
	t.Logf("BacklogByActor's plan, %d pages fetched:\n%s", n, plan)
	parts := liteParts(plan)
	if len(parts) != 6 {
		t.Fatalf("the plan has %d parts, want 6", len(parts))
	}
	for _, i := range []int{2, 3, 5} {
		if !backlogEffectIndex.MatchString(parts[i]) {
			t.Errorf("part %d does not read the effects through a partial index:\n%s", i+1, parts[i])
		}
	}
	for i, part := range parts {
		for _, line := range strings.Split(part, "\n") {
			if backlogHistoryRead.MatchString(strings.TrimSpace(line)) && (i == 2 || i == 3 || i == 5) {
				t.Errorf("part %d reads the effects' history: %s", i+1, strings.TrimSpace(line))
			}
		}
	}
	if n > tablePages/10 {
		t.Errorf("BacklogByActor fetched %d pages, the effects table has %d: it reads the history", n, tablePages)
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

// liteParts splits the EXPLAIN QUERY PLAN of a compound statement into
// its parts, in order.
func liteParts(plan string) []string {
	var parts []string
	for _, line := range strings.Split(plan, "\n") {
		switch strings.TrimSpace(line) {
		case "COMPOUND QUERY", "":
		case "LEFT-MOST SUBQUERY", "UNION ALL":
			parts = append(parts, "")
		default:
			if len(parts) > 0 {
				parts[len(parts)-1] += line + "\n"
			}
		}
	}
	return parts
}
