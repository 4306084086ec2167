package sqlite_test

import (
	"database/sql"
	"fmt"
	"io/fs"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	msqlite "modernc.org/sqlite"

	"github.com/ductus/ductus/adapters/internal/plantest"
	"github.com/ductus/ductus/adapters/internal/readside"
	"github.com/ductus/ductus/adapters/internal/sqlrow"
	"github.com/ductus/ductus/adapters/sqlite"
	"github.com/ductus/ductus/integration/ixstore"
	"github.com/ductus/ductus/internal/testutil"
	"github.com/ductus/ductus/migrations"
)

// liteIndexes are the (table alias, index) pairs of plantest's roles in
// SQLite's EXPLAIN QUERY PLAN: m is the message table, s the search table
// (as readside.MessageListQuery's subquery names them).
var liteIndexes = map[plantest.Index][2]string{
	plantest.ByList:     {"m", "INDEX ductus_ix_messages_list"},
	plantest.ByKey:      {"m", "INDEX ductus_ix_messages_key"},
	plantest.ByDedupe:   {"m", "INDEX ductus_ix_messages_dedupe"},
	plantest.ByStatus:   {"m", "INDEX ductus_ix_messages_status"},
	plantest.BySearch:   {"s", "PRIMARY KEY"},
	plantest.ByID:       {"m", "INDEX sqlite_autoindex_ductus_ix_messages_1"},
	plantest.BySearchID: {"s", "INDEX ductus_ix_search_message"},
}

// maxPagePages bounds the database pages a page of 50 may fetch (the
// page cache's hits and misses): its index range, its rows and their
// type rows, a few hundred at most. The message table alone is over
// 30,000 pages.
const maxPagePages = 1500

// liteTableScan is a plan line that reads a whole table of the engine
// (SQLite names a table by its alias: m, s, r, t here); p, the page's
// IDs chosen by the subquery, holds at most a page.
var liteTableScan = regexp.MustCompile(`\bSCAN (m|s|r|t|ductus_ix_messages|ductus_ix_search)\b`)

// TestMessageListPlans builds a history of 1,100,000 interface messages
// (plantest) and checks that every filter of the message browser is read
// through its index, never by scanning the message or the search table:
// the EXPLAIN QUERY PLAN of the statement readside.MessageListQuery builds, with its
// arguments bound as the adapter binds them (SQLite's STAT4 plans with
// the values), has no SCAN of an engine table and chooses the page from
// the filter's index, and running it fetches at most maxPagePages pages
// (the connection's page cache counters, sqlite3_db_status). The
// adapter's MessageList pages must be exactly the generator's.
func TestMessageListPlans(t *testing.T) {
	if testing.Short() {
		t.Skip("builds a 1,100,000-message history")
	}
	start := time.Now()
	ctx := testutil.Context(t)
	path := filepath.Join(t.TempDir(), "plan.db")
	b, err := sqlite.Open(ctx, sqlite.Config{Path: path})
	if err != nil {
		t.Fatal(err)
	}
	if err := b.EngineStore().SchemaMigrate(ctx); err != nil {
		t.Fatal(err)
	}
	b.Close()
	liteFillMessages(t, path)
	t.Logf("filled %d messages in %s", plantest.Messages, time.Since(start).Round(time.Millisecond))

	b, err = sqlite.Open(ctx, sqlite.Config{Path: path})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	ix := b.EngineStore()
	conn := liteReader(t, path)
	// The measure's control: a statement that reads the message table
	// whole (lane has no index) fetches every page of it.
	var tablePages int
	if err := conn.QueryRowContext(ctx, `SELECT COUNT(*) FROM dbstat WHERE name = 'ductus_ix_messages'`).Scan(&tablePages); err != nil {
		t.Fatal(err)
	}
	scan := litePagesFetched(t, conn, sqlrow.Statement{SQL: `SELECT COUNT(*) FROM ductus_ix_messages WHERE lane = ?`, Args: []any{1}})
	t.Logf("the message table has %d pages; a scan of it fetched %d", tablePages, scan)
	if scan < tablePages || scan <= maxPagePages {
		t.Fatalf("a scan of the message table fetched %d pages: the page counters do not measure reads", scan)
	}
	for _, c := range plantest.Cases() {
		st := sqlrow.Statement{SQL: readside.MessageListQuery(sqlite.ReadSideDB(b), &c.Params).String()}
		plan := liteExplain(t, conn, st)
		n := litePagesFetched(t, conn, st)
		t.Logf("%s, %d pages fetched:\n%s", c.Name, n, plan)
		if err := liteIndexServed(plan, c.Drive); err != nil {
			t.Errorf("%s: %v", c.Name, err)
		}
		if n > maxPagePages {
			t.Errorf("%s: the page fetched %d pages (at most %d): it reads history", c.Name, n, maxPagePages)
		}
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
	st := sqlrow.Statement{SQL: readside.MessageGetQuery(sqlite.ReadSideDB(b), ids).String()}
	plan := liteExplain(t, conn, st)
	t.Logf("reads by ID, %d pages fetched:\n%s", litePagesFetched(t, conn, st), plan)
	for _, want := range []string{"SEARCH r USING INDEX sqlite_autoindex_ductus_ix_messages_1 (id=?)", "SEARCH t USING COVERING INDEX ductus_ix_search_message (message_id=? AND field=?)"} {
		if !strings.Contains(plan, want) {
			t.Errorf("reads by ID: the plan has no %q", want)
		}
	}
	if liteTableScan.MatchString(plan) {
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

// liteFillMessages inserts plantest's history into the migrated engine
// tables of the database at path (the backend closed), then analyzes it.
// The load runs without a journal; the message and search tables'
// secondary indexes are dropped for it and made again by running the
// engine migrations that make them (0001, 0005, 0006; re-runnable), so the
// plans see exactly the migrations' indexes.
func liteFillMessages(t *testing.T, path string) {
	t.Helper()
	ctx := testutil.Context(t)
	db, err := sql.Open("sqlite", "file:"+path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	db.SetMaxOpenConns(1)
	exec := func(q string) {
		t.Helper()
		if _, err := db.ExecContext(ctx, q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	for _, q := range []string{"PRAGMA journal_mode = OFF", "PRAGMA synchronous = OFF", "PRAGMA cache_size = -262144"} {
		exec(q)
	}
	rows, err := db.QueryContext(ctx, `SELECT name FROM sqlite_master WHERE type = 'index' AND sql IS NOT NULL
		AND tbl_name IN ('ductus_ix_messages', 'ductus_ix_search')`)
	if err != nil {
		t.Fatal(err)
	}
	var drop []string
	for rows.Next() {
		var name string
		if err := rows.Scan(&name); err != nil {
			t.Fatal(err)
		}
		drop = append(drop, name)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	rows.Close()
	if len(drop) != 6 {
		t.Fatalf("the engine's tables have secondary indexes %v, want 6 (0001's origin index, 0005's five)", drop)
	}
	for _, name := range drop {
		exec("DROP INDEX " + name)
	}
	seq := fmt.Sprintf("(WITH RECURSIVE n (g) AS (SELECT 1 UNION ALL SELECT g + 1 FROM n WHERE g < %d) SELECT g FROM n) q", plantest.Messages)
	for _, q := range plantest.FillSQL("sqlite", seq) {
		exec(q)
	}
	fsys, err := migrations.Engine("sqlite")
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
	exec("ANALYZE")
	var n int
	if err := db.QueryRowContext(ctx, `SELECT COUNT(*) FROM sqlite_master WHERE type = 'index' AND sql IS NOT NULL
		AND tbl_name IN ('ductus_ix_messages', 'ductus_ix_search')`).Scan(&n); err != nil || n != len(drop) {
		t.Fatalf("after the load, %d of the indexes %v are back (%v)", n, drop, err)
	}
	exec("PRAGMA journal_mode = WAL")
}

// liteReader is a read-only connection to the database at path, as the
// backend's read pool opens them, closed when t ends.
func liteReader(t *testing.T, path string) *sql.Conn {
	t.Helper()
	db, err := sql.Open("sqlite", "file:"+path+"?_pragma=query_only(1)")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	conn, err := db.Conn(testutil.Context(t))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	return conn
}

// liteExplain is st's EXPLAIN QUERY PLAN with its arguments bound, one
// line per step, indented under its parent.
func liteExplain(t *testing.T, conn *sql.Conn, st sqlrow.Statement) string {
	t.Helper()
	rows, err := conn.QueryContext(testutil.Context(t), "EXPLAIN QUERY PLAN "+st.SQL, st.Args...)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	depth := map[int]int{0: 0}
	var sb strings.Builder
	for rows.Next() {
		var id, parent, unused int
		var detail string
		if err := rows.Scan(&id, &parent, &unused, &detail); err != nil {
			t.Fatal(err)
		}
		depth[id] = depth[parent] + 1
		sb.WriteString(strings.Repeat("  ", depth[id]) + detail + "\n")
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return sb.String()
}

// liteIndexServed reports a plan that scans an engine table, or whose
// first search (the subquery choosing the page) does not read one of
// drive's indexes.
func liteIndexServed(plan string, drive []plantest.Index) error {
	if m := liteTableScan.FindString(plan); m != "" {
		return fmt.Errorf("the plan scans a table (%s)", m)
	}
	var first string
	for _, line := range strings.Split(plan, "\n") {
		if line = strings.TrimSpace(line); strings.HasPrefix(line, "SEARCH m ") || strings.HasPrefix(line, "SEARCH s ") {
			first = line
			break
		}
	}
	var want []string
	for _, d := range drive {
		ti := liteIndexes[d]
		if strings.HasPrefix(first, "SEARCH "+ti[0]+" USING "+ti[1]+" ") || strings.HasPrefix(first, "SEARCH "+ti[0]+" USING COVERING "+ti[1]+" ") {
			return nil
		}
		want = append(want, ti[0]+" "+ti[1])
	}
	return fmt.Errorf("the page is chosen by %q, not one of %v", first, want)
}

// litePagesFetched runs st on conn and returns the pages it asked of the
// page cache (hits and misses): what it read, a page at a time.
func litePagesFetched(t *testing.T, conn *sql.Conn, st sqlrow.Statement) int {
	t.Helper()
	ctx := testutil.Context(t)
	status := func(reset bool) int {
		n := 0
		if err := conn.Raw(func(dc any) error {
			for _, op := range []msqlite.DBStatusOp{msqlite.DBStatusCacheHit, msqlite.DBStatusCacheMiss} {
				cur, _, err := dc.(msqlite.DBStatus).Status(op, reset)
				if err != nil {
					return err
				}
				n += cur
			}
			return nil
		}); err != nil {
			t.Fatal(err)
		}
		return n
	}
	// Prepared first, so its parse (the schema's pages) is not counted.
	stmt, err := conn.PrepareContext(ctx, st.SQL)
	if err != nil {
		t.Fatal(err)
	}
	defer stmt.Close()
	status(true)
	rows, err := stmt.QueryContext(ctx, st.Args...)
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	rows.Close()
	return status(false)
}
