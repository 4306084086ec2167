package postgres

import (
	"fmt"
	"io/fs"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/ductus/ductus/adapters/internal/plantest"
	"github.com/ductus/ductus/adapters/internal/readside"
	"github.com/ductus/ductus/integration/ixstore"
	"github.com/ductus/ductus/internal/testutil"
	"github.com/ductus/ductus/migrations"
)

// pgIndexes are the indexes of plantest's roles on PostgreSQL.
var pgIndexes = map[plantest.Index]string{
	plantest.ByList:     "ductus_ix_messages_list",
	plantest.ByKey:      "ductus_ix_messages_key",
	plantest.ByDedupe:   "ductus_ix_messages_dedupe",
	plantest.ByStatus:   "ductus_ix_messages_status",
	plantest.BySearch:   "ductus_ix_search_pkey",
	plantest.ByID:       "ductus_ix_messages_pkey",
	plantest.BySearchID: "ductus_ix_search_message",
}

// pgBuffers is the first (the top node's, its children's included)
// buffer count of an EXPLAIN (ANALYZE, BUFFERS).
var pgBuffers = regexp.MustCompile(`Buffers: shared(?: hit=(\d+))?(?: read=(\d+))?`)

// maxPageBuffers bounds the buffers a page of 50 may touch: its index
// range, its rows and their type rows, a few hundred at most. A read of
// the interface's history touches tens of thousands (the message table
// alone is over 20,000 pages).
const maxPageBuffers = 1500

// TestMessageListPlans builds a history of 1,100,000 interface messages
// (plantest) and checks that every filter of the message browser is read
// through its index, never by scanning the message or the search table:
// the statement the read side builds (readside.MessageListQuery, bun's
// text with the values in it) is EXPLAINed (ANALYZE, BUFFERS) as the
// adapter runs it; each plan must choose the page from the filter's index
// and touch at most maxPageBuffers. The values are in the text, so the
// plan is always made for them: no generic plan (one made without the
// values, which the server may keep after five runs of a statement with
// parameters) can stand in. MessageList's pages must be exactly the
// generator's.
func TestMessageListPlans(t *testing.T) {
	need(t)
	if testing.Short() {
		t.Skip("builds a 1,100,000-message history")
	}
	start := time.Now()
	b := openSchema(t, newSchema(), nil)
	ctx := testutil.Context(t)
	ix := b.EngineStore()
	if err := ix.SchemaMigrate(ctx); err != nil {
		t.Fatal(err)
	}
	pgFillMessages(t, b)
	var heapPages int64
	if err := b.Pool().QueryRow(ctx, `SELECT pg_relation_size('ductus_ix_messages') / 8192`).Scan(&heapPages); err != nil {
		t.Fatal(err)
	}
	t.Logf("filled %d messages (%d heap pages) in %s", plantest.Messages, heapPages, time.Since(start).Round(time.Millisecond))

	conn, err := b.Pool().Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Release()
	const analyze = "ANALYZE, BUFFERS, COSTS OFF, TIMING OFF, SUMMARY OFF"
	check := func(what string, drive []plantest.Index, plan string) {
		t.Helper()
		n := pgBufferCount(plan)
		t.Logf("%s, %d buffers:\n%s", what, n, plan)
		if err := pgIndexServed(plan, drive); err != nil {
			t.Errorf("%s: %v", what, err)
		}
		if n < 0 || n > maxPageBuffers {
			t.Errorf("%s: the page touched %d buffers (at most %d): it reads history", what, n, maxPageBuffers)
		}
	}
	// The measure's control: a statement that reads the message table
	// whole (lane has no index) touches every page of it.
	scan := pgExplain(t, conn.Conn(), `SELECT count(*) FROM ductus_ix_messages WHERE lane = 1`, analyze)
	if n := pgBufferCount(scan); n < int(heapPages) {
		t.Fatalf("a scan of the message table touched %d buffers, the table has %d pages: the count does not measure reads\n%s", n, heapPages, scan)
	} else {
		t.Logf("a scan of the message table touched %d buffers", n)
	}
	for _, c := range plantest.Cases() {
		check(c.Name, c.Drive, pgExplain(t, conn.Conn(), readside.MessageListQuery(b.readSide.DB(), &c.Params).String(), analyze))

		got, err := ix.MessageList(ctx, &c.Params)
		if err != nil {
			t.Fatalf("%s: %v", c.Name, err)
		}
		if err := c.Check(got); err != nil {
			t.Error(err)
		}
	}
	// A read by ID finds each message and its type row by their keys.
	ids := []string{plantest.ID(5), plantest.ID(777_778), plantest.ID(plantest.Messages)}
	plan := pgExplain(t, conn.Conn(), readside.MessageGetQuery(b.readSide.DB(), ids).String(), "COSTS OFF")
	t.Logf("reads by ID:\n%s", plan)
	for _, want := range []string{"ductus_ix_messages_pkey", "ductus_ix_search_message"} {
		if !strings.Contains(plan, want) {
			t.Errorf("reads by ID: the plan does not read %s", want)
		}
	}
	if strings.Contains(plan, "Seq Scan") {
		t.Error("reads by ID: the plan scans a table")
	}
	got, err := ix.MessageGetMany(ctx, &ixstore.MessageGetManyParams{IDs: ids})
	if err != nil {
		t.Fatal(err)
	}
	types := map[string]string{}
	for _, m := range got {
		types[m.ID] = m.Type
	}
	for _, g := range []int{5, 777_778, plantest.Messages} {
		if types[plantest.ID(g)] != plantest.Type(g) {
			t.Errorf("message %d read by ID has type %q, want %q", g, types[plantest.ID(g)], plantest.Type(g))
		}
	}
	t.Logf("done in %s", time.Since(start).Round(time.Millisecond))
}

// pgFillMessages inserts plantest's history into the migrated engine
// tables, then analyzes them. The message and search tables' secondary
// indexes are dropped for the load and made again by running the engine
// migrations that make them (0001, 0005, 0006; re-runnable), so the plans see
// exactly the migrations' indexes, built in seconds rather than kept up
// row by row for a minute.
func pgFillMessages(t *testing.T, b *Backend) {
	t.Helper()
	ctx := testutil.Context(t)
	conn, err := b.Pool().Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Release()
	exec := func(q string) {
		t.Helper()
		if _, err := conn.Exec(ctx, q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	rows, err := conn.Query(ctx, `SELECT i.indexname FROM pg_indexes i
		WHERE i.schemaname = current_schema() AND i.tablename IN ('ductus_ix_messages', 'ductus_ix_search') AND i.indexname NOT LIKE '%_pkey'`)
	if err != nil {
		t.Fatal(err)
	}
	drop, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		t.Fatal(err)
	}
	if len(drop) != 6 {
		t.Fatalf("the engine's tables have secondary indexes %v, want 6 (0001's origin index, 0005's five)", drop)
	}
	for _, ix := range drop {
		exec("DROP INDEX " + pgx.Identifier{ix}.Sanitize())
	}
	for _, q := range plantest.FillSQL("postgres", fmt.Sprintf("generate_series(1, %d) g", plantest.Messages)) {
		exec(q)
	}
	exec("SET maintenance_work_mem = '256MB'")
	fsys, err := migrations.Engine("postgres")
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{"0001_engine_tables.sql", "0005_message_search.sql", "0006_lean_message_indexes.sql"} {
		sql, err := fs.ReadFile(fsys, f)
		if err != nil {
			t.Fatal(err)
		}
		exec(string(sql))
	}
	exec("RESET maintenance_work_mem")
	exec("ANALYZE ductus_ix_messages")
	exec("ANALYZE ductus_ix_search")
	var n int
	if err := conn.QueryRow(ctx, `SELECT count(*) FROM pg_indexes WHERE schemaname = current_schema() AND indexname = ANY($1)`, drop).Scan(&n); err != nil || n != len(drop) {
		t.Fatalf("after the load, %d of the indexes %v are back (%v)", n, drop, err)
	}
}

// pgExplain EXPLAINs query, its values in its text, with options: as the
// read side runs it (bun's text over the simple protocol), so the plan is
// made for those values.
func pgExplain(t *testing.T, conn *pgx.Conn, query, options string) string {
	t.Helper()
	rows, err := conn.Query(testutil.Context(t), "EXPLAIN ("+options+") "+query)
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

// pgIndexServed reports a plan that scans the message or search table,
// or that reads none of the indexes drive names.
func pgIndexServed(plan string, drive []plantest.Index) error {
	for _, bad := range []string{"Seq Scan on ductus_ix_messages", "Seq Scan on ductus_ix_search"} {
		if strings.Contains(plan, bad) {
			return fmt.Errorf("the plan scans a table (%s)", bad)
		}
	}
	var names []string
	for _, d := range drive {
		if strings.Contains(plan, " "+pgIndexes[d]+" ") || strings.Contains(plan, " "+pgIndexes[d]+"\n") {
			return nil
		}
		names = append(names, pgIndexes[d])
	}
	return fmt.Errorf("the plan reads none of %v", names)
}

// pgBufferCount is the top node's buffers (hit and read) in an EXPLAIN
// (ANALYZE, BUFFERS), -1 without one.
func pgBufferCount(plan string) int {
	m := pgBuffers.FindStringSubmatch(plan)
	if m == nil {
		return -1
	}
	n := 0
	for _, s := range m[1:] {
		if s != "" {
			v, _ := strconv.Atoi(s)
			n += v
		}
	}
	return n
}
