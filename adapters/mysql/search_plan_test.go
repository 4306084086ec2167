package mysql

import (
	"database/sql"
	"fmt"
	"io/fs"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/ductus/ductus/adapters/internal/plantest"
	"github.com/ductus/ductus/adapters/internal/readside"
	"github.com/ductus/ductus/adapters/internal/sqlrow"
	"github.com/ductus/ductus/integration/ixstore"
	"github.com/ductus/ductus/internal/testutil"
	"github.com/ductus/ductus/migrations"
	"github.com/ductus/ductus/runtime/store"
)

// myIndexes are the (table alias, index) pairs of plantest's roles on
// MySQL/MariaDB: m is the message table, s the search table (as
// readside.MessageListQuery names them).
var myIndexes = map[plantest.Index][2]string{
	plantest.ByList:     {"m", "ductus_ix_messages_list"},
	plantest.ByKey:      {"m", "ductus_ix_messages_key"},
	plantest.ByDedupe:   {"m", "ductus_ix_messages_dedupe"},
	plantest.ByStatus:   {"m", "ductus_ix_messages_status"},
	plantest.BySearch:   {"s", "PRIMARY"},
	plantest.ByID:       {"m", "PRIMARY"},
	plantest.BySearchID: {"s", "ductus_ix_search_message"},
}

// myAlsoServed are the plans MariaDB 10.11 chooses, besides the filter's
// index, for the unfiltered first page of an interface that holds few of
// the messages: the message key read backwards, skipping the other
// interfaces' rows (Small's page reads ~550 of them). Until migration 0006
// dropped the (interface, received_at) index (which held the ID too), the
// tiny interface's page read all of its rows through it, sorted (1,000
// rows); now it reads (interface, id), about 300.
var myAlsoServed = map[string][2]string{
	"small interface": {"m", "PRIMARY"},
}

// maxPageRows bounds the rows (handler reads) a page of 50 may read: its
// index range, its rows and their type rows, a few hundred at most; the
// interface's history is a million.
const maxPageRows = 1500

// TestMessageListPlans builds a history of 1,100,000 interface messages
// (plantest) and checks that every filter of the message browser is read
// through its index, never by scanning the message or the search table:
// the EXPLAIN of the statement readside.MessageListQuery builds (its text,
// values included, as the adapter runs it) has no full scan and drives from the filter's index,
// and the statement reads at most maxPageRows rows, counted by the
// session's Handler_read_* counters. MessageList's pages must be exactly
// the generator's.
func TestMessageListPlans(t *testing.T) {
	if testing.Short() {
		t.Skip("builds a 1,100,000-message history")
	}
	start := time.Now()
	dsn := newDatabase(t)
	b := openBackend(t, Config{DSN: dsn})
	ctx := testutil.Context(t)
	ix := b.EngineStore()
	if err := ix.SchemaMigrate(ctx); err != nil {
		t.Fatal(err)
	}
	myFillMessages(t, b, rawDB(t, dsn))
	t.Logf("%s: filled %d messages in %s", b.Version(), plantest.Messages, time.Since(start).Round(time.Millisecond))

	conn, err := b.caller.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	// The measure's control: a statement that reads the message table
	// whole (lane has no index) reads every row of it.
	if n := myRowsRead(t, conn, sqlrow.Statement{SQL: `SELECT COUNT(*) FROM ductus_ix_messages WHERE lane = ?`, Args: []any{1}}); n < plantest.Messages {
		t.Fatalf("a scan of the message table read %d rows: the handler counters do not measure reads", n)
	} else {
		t.Logf("a scan of the message table read %d rows", n)
	}
	for _, c := range plantest.Cases() {
		st := sqlrow.Statement{SQL: readside.MessageListQuery(b.readSide.DB(), &c.Params).String()}
		plan := myExplain(t, conn, st)
		n := myRowsRead(t, conn, st)
		t.Logf("%s, %d rows read:\n%s", c.Name, n, plan)
		if err := myIndexServed(plan, c.Drive, myAlsoServed[c.Name]); err != nil {
			t.Errorf("%s: %v", c.Name, err)
		}
		if n > maxPageRows {
			t.Errorf("%s: the page read %d rows (at most %d): it reads history", c.Name, n, maxPageRows)
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
	st := sqlrow.Statement{SQL: readside.MessageGetQuery(b.readSide.DB(), ids).String()}
	plan := myExplain(t, conn, st)
	t.Logf("reads by ID, %d rows read:\n%s", myRowsRead(t, conn, st), plan)
	if len(plan.rows) != 2 || plan.rows[0].key != "PRIMARY" || plan.rows[1].key != "ductus_ix_search_message" {
		t.Errorf("reads by ID: the plan does not read the message key, then the search table's message index")
	}
	if err := plan.noFullScan(); err != nil {
		t.Errorf("reads by ID: %v", err)
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

// myFillMessages inserts plantest's history into the migrated engine
// tables, then analyzes them (mySeq counts the messages). The four indexes of migration 0005 are
// dropped for the load and made again by running that file's statements
// as the migrator runs them (an index that exists is skipped), so the
// plans see exactly the migration's indexes, built in seconds rather
// than kept up row by row.
func myFillMessages(t *testing.T, b *Backend, db *sql.DB) {
	t.Helper()
	ctx := testutil.Context(t)
	conn, err := db.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	exec := func(q string) error {
		t.Helper()
		at := time.Now()
		_, err := conn.ExecContext(ctx, q)
		if err == nil {
			t.Logf("%.60s: %s", strings.Join(strings.Fields(q), " "), time.Since(at).Round(time.Millisecond))
		}
		return err
	}
	must := func(q string) {
		t.Helper()
		if err := exec(q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	for _, ix := range []string{"ductus_ix_messages_list", "ductus_ix_messages_key", "ductus_ix_messages_dedupe", "ductus_ix_messages_status"} {
		must("DROP INDEX " + ix + " ON ductus_ix_messages")
	}
	for _, q := range plantest.FillSQL("mysql", mySeq(t, conn, b)(plantest.Messages)) {
		must(q)
	}
	fsys, err := migrations.Engine("mysql")
	if err != nil {
		t.Fatal(err)
	}
	file, err := fs.ReadFile(fsys, "0005_message_search.sql")
	if err != nil {
		t.Fatal(err)
	}
	for _, q := range store.SplitStatements(string(file)) {
		if err := exec(q); err != nil && !existedBefore(err, q) {
			t.Fatalf("%s: %v", q, err)
		}
	}
	must("ANALYZE TABLE ductus_ix_messages, ductus_ix_search")
	var n int
	if err := conn.QueryRowContext(ctx, `SELECT COUNT(DISTINCT INDEX_NAME) FROM information_schema.STATISTICS
		WHERE TABLE_SCHEMA = DATABASE() AND TABLE_NAME = 'ductus_ix_messages' AND INDEX_NAME LIKE 'ductus\_ix\_messages\_%'`).Scan(&n); err != nil || n != 5 {
		t.Fatalf("after the load the message table has %d secondary indexes (%v), want 5 (0001's origin index, 0005's four)", n, err)
	}
}

// myPlan is an EXPLAIN's rows, in join order.
type myPlan struct {
	rows []myPlanRow
	text string
}

type myPlanRow struct{ id, selectType, table, typ, possibleKeys, key, ref, extra string }

func (p myPlan) String() string { return p.text }

// noFullScan reports a row that reads a whole table (type ALL), but for
// a statement's own results (<derivedN>: the page's IDs chosen by a
// subquery, at most a page; <unionN,...>).
func (p myPlan) noFullScan() error {
	for _, r := range p.rows {
		if r.typ == "ALL" && !strings.HasPrefix(r.table, "<") {
			return fmt.Errorf("the plan scans %s", r.table)
		}
	}
	return nil
}

// myExplain EXPLAINs st with its arguments, as the adapter runs it.
func myExplain(t *testing.T, conn *sql.Conn, st sqlrow.Statement) myPlan {
	t.Helper()
	return myExplainAs(t, conn, "EXPLAIN ", st)
}

// myExplainAs runs st with its arguments behind prefix (EXPLAIN, or
// MariaDB's ANALYZE) and reads the plan.
func myExplainAs(t *testing.T, conn *sql.Conn, prefix string, st sqlrow.Statement) myPlan {
	t.Helper()
	rows, err := conn.QueryContext(testutil.Context(t), prefix+st.SQL, st.Args...)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	cols, err := rows.Columns()
	if err != nil {
		t.Fatal(err)
	}
	var p myPlan
	var sb strings.Builder
	sb.WriteString(strings.Join(cols, " | ") + "\n")
	for rows.Next() {
		vals := make([]sql.NullString, len(cols))
		ptrs := make([]any, len(cols))
		for i := range vals {
			ptrs[i] = &vals[i]
		}
		if err := rows.Scan(ptrs...); err != nil {
			t.Fatal(err)
		}
		var r myPlanRow
		line := make([]string, len(cols))
		for i, c := range cols {
			line[i] = vals[i].String
			switch strings.ToLower(c) {
			case "id":
				r.id = vals[i].String
			case "ref":
				r.ref = vals[i].String
			case "select_type":
				r.selectType = vals[i].String
			case "table":
				r.table = vals[i].String
			case "type":
				r.typ = vals[i].String
			case "possible_keys":
				r.possibleKeys = vals[i].String
			case "key":
				r.key = vals[i].String
			case "extra":
				r.extra = vals[i].String
			}
		}
		sb.WriteString(strings.Join(line, " | ") + "\n")
		p.rows = append(p.rows, r)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	p.text = sb.String()
	return p
}

// myIndexServed reports a plan that scans a table, or whose driving
// table (the first of the subquery that chooses the page, readside.MessageListQuery's
// p) is not read through one of drive's indexes.
func myIndexServed(p myPlan, drive []plantest.Index, also [2]string) error {
	if err := p.noFullScan(); err != nil {
		return err
	}
	i := slices.IndexFunc(p.rows, func(r myPlanRow) bool { return r.selectType == "DERIVED" })
	if i < 0 {
		return fmt.Errorf("no subquery chooses the page")
	}
	first := p.rows[i]
	if also != ([2]string{}) && first.table == also[0] && first.key == also[1] {
		return nil
	}
	var want []string
	for _, d := range drive {
		ti := myIndexes[d]
		if first.table == ti[0] && first.key == ti[1] {
			return nil
		}
		want = append(want, ti[0]+"."+ti[1])
	}
	return fmt.Errorf("the page is chosen from %s.%s, not one of %v", first.table, first.key, want)
}

// myHandlerReads is the session's rows read by the storage engine: the
// sum of its Handler_read_* counters.
func myHandlerReads(t *testing.T, conn *sql.Conn) int64 {
	t.Helper()
	rows, err := conn.QueryContext(testutil.Context(t), "SHOW SESSION STATUS LIKE 'Handler\\_read\\_%'")
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var sum int64
	for rows.Next() {
		var name string
		var v int64
		if err := rows.Scan(&name, &v); err != nil {
			t.Fatal(err)
		}
		sum += v
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return sum
}

// myRowsRead runs st on conn and returns the rows it read: the change of
// the handler counters, less what reading them costs.
func myRowsRead(t *testing.T, conn *sql.Conn, st sqlrow.Statement) int64 {
	t.Helper()
	a := myHandlerReads(t, conn)
	b := myHandlerReads(t, conn)
	rows, err := conn.QueryContext(testutil.Context(t), st.SQL, st.Args...)
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	rows.Close()
	c := myHandlerReads(t, conn)
	return c - b - (b - a)
}
