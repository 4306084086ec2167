package main

import (
	"context"
	"database/sql"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"
)

// innodbRowCosts prices, on MySQL/MariaDB only, the row work a processed
// message costs in the adapter's schema against the alternatives a new
// layout could use, so a layout decision rests on figures rather than on
// guesses. continuous_split says how much server CPU a processed message
// takes in all; this says which rows it goes to.
//
// On a fresh database (the adapter's migrated tables) it writes 1,000
// actors x 100 messages, interleaved as continuous_tell_process writes them
// (round robin, so one actor's messages sit on 100 different pages), then
// runs each operation once per actor, 100 rows per transaction as a turn
// does, one connection, and prints wall time and server CPU per row. The
// server CPU of an operation includes the purge it leaves behind: the end
// mark is taken once the server has gone quiet.
//
//   - rowcost_read: SELECT of the 100 messages by primary key (the floor).
//   - rowcost_take_by_cursor: a take with no queue rows at all, reading the
//     actor's next messages from its (actor_pk, seq) index from a cursor.
//   - rowcost_complete_in_row: the commit's completion today, an UPDATE of
//     completed_at (NULL to a time, indexed), result and attempts.
//   - rowcost_complete_no_index: the same UPDATE without the completion index.
//   - rowcost_complete_same_size: an UPDATE that neither grows the row nor
//     touches an index (attempts = attempts + 1).
//   - rowcost_complete_results_table: the completion as an INSERT into a
//     results table (PostgreSQL's ductus_results) instead.
//   - rowcost_claim_move: the take and commit's ready/claimed rows today:
//     INSERT into ductus_claimed from ductus_ready and DELETE the ready rows
//     (one transaction), then DELETE the claimed rows (another).
//   - rowcost_claim_in_place: the alternative, claiming ready rows in place
//     (an UPDATE of an unindexed generation column) and deleting them.
func innodbRowCosts(ctx context.Context, r *runner) error {
	if r.o.backend != "mysql" {
		fmt.Fprintf(os.Stderr, "    innodb_row_costs: InnoDB only, skipped on %s\n", r.o.backend)
		return nil
	}
	actors, per := r.n(1000, 20), 100
	return r.fresh(ctx, nil, func(_ backend, dsn string) error {
		db, err := sql.Open("mysql", dsn)
		if err != nil {
			return err
		}
		defer db.Close()
		db.SetMaxOpenConns(1)
		if err := rowCostSetup(ctx, db, actors, per); err != nil {
			return fmt.Errorf("innodb_row_costs: setup: %w", err)
		}
		ids, err := rowCostIDs(ctx, db, actors)
		if err != nil {
			return err
		}
		ops := rowCostOps(ids, per)
		servers := serverNames[r.o.backend]
		for _, op := range ops {
			quiet(r.o.smoke, servers)
			from := cpuMark(servers)
			for a := 0; a < actors; a++ {
				for _, txn := range op.txns {
					if err := rowCostTxn(ctx, db, txn(a)); err != nil {
						return fmt.Errorf("%s: %w", op.name, err)
					}
				}
			}
			wall := time.Since(from.at)
			quiet(r.o.smoke, servers)
			to := cpuMark(servers)
			rows := actors * per
			r.print(op.name+"_us", float64(wall.Microseconds())/float64(rows), "us/row", rows)
			if from.server >= 0 && to.server >= 0 {
				r.print(op.name+"_server_cpu_us", float64((to.server-from.server).Microseconds())/float64(rows), "us/row", rows)
			}
		}
		return nil
	})
}

// rowCostFigures names what innodbRowCosts prints (the operations'
// statements are never built here, so no IDs are needed).
func rowCostFigures() []string {
	var out []string
	for _, op := range rowCostOps(nil, 0) {
		out = append(out, op.name+"_us", op.name+"_server_cpu_us")
	}
	return out
}

// rowCostOp is one priced operation: its figure's name and, for actor a,
// the statements of each of its transactions.
type rowCostOp struct {
	name string
	txns []func(a int) []string
}

// rowCostOps are innodbRowCosts' operations over ids (each actor's message
// IDs as an SQL list) and per rows an actor.
func rowCostOps(ids []string, per int) []rowCostOp {
	// The take's move of ready rows to claimed, as ductus_take_1 does it.
	claimMove := func(a int) []string {
		return []string{fmt.Sprintf("INSERT INTO ductus_claimed (message_id, actor_pk, seq, generation, attempt, claimed_at) "+
			"SELECT message_id, actor_pk, seq, 1, 1, NOW(6) FROM ductus_ready FORCE INDEX (ductus_ready_actor_seq) WHERE actor_pk = %d ORDER BY seq LIMIT %d", a, per),
			fmt.Sprintf("DELETE r FROM ductus_claimed c FORCE INDEX (ductus_claimed_actor) STRAIGHT_JOIN ductus_ready r ON r.message_id = c.message_id "+
				"WHERE c.actor_pk = %d AND c.generation = 1", a)}
	}
	return []rowCostOp{
		{"rowcost_read", []func(int) []string{func(a int) []string {
			return []string{"SELECT COUNT(*) FROM ductus_messages WHERE id IN (" + ids[a] + ")"}
		}}},
		{"rowcost_take_by_cursor", []func(int) []string{func(a int) []string {
			return []string{fmt.Sprintf("SELECT id, seq, name, args, ask, enqueued_at, available_at FROM ductus_messages FORCE INDEX (ductus_messages_seq) "+
				"WHERE actor_pk = %d AND seq >= 1 ORDER BY seq LIMIT %d", a, per)}
		}}},
		{"rowcost_complete_in_row", []func(int) []string{func(a int) []string {
			return []string{"UPDATE ductus_messages SET completed_at = NOW(6), result = 'null', attempts = 1 WHERE id IN (" + ids[a] + ")"}
		}}},
		{"rowcost_complete_no_index", []func(int) []string{func(a int) []string {
			return []string{"UPDATE rc_messages_noindex SET completed_at = NOW(6), result = 'null', attempts = 1 WHERE id IN (" + ids[a] + ")"}
		}}},
		{"rowcost_complete_same_size", []func(int) []string{func(a int) []string {
			return []string{"UPDATE ductus_messages SET attempts = attempts + 1 WHERE id IN (" + ids[a] + ")"}
		}}},
		{"rowcost_complete_results_table", []func(int) []string{func(a int) []string {
			var b strings.Builder
			b.WriteString("INSERT INTO rc_results (message_id, completed_at, attempts, result) VALUES ")
			for i, id := range strings.Split(ids[a], ",") {
				if i > 0 {
					b.WriteByte(',')
				}
				b.WriteString("(" + id + ", NOW(6), 1, 'null')")
			}
			return []string{b.String()}
		}}},
		{"rowcost_claim_move", []func(int) []string{claimMove, func(a int) []string {
			return []string{fmt.Sprintf("DELETE FROM ductus_claimed WHERE actor_pk = %d AND generation = 1", a)}
		}}},
		{"rowcost_claim_in_place", []func(int) []string{func(a int) []string {
			return []string{fmt.Sprintf("UPDATE rc_ready FORCE INDEX (ductus_ready_actor_seq) SET claimed_gen = 1, claimed_at = NOW(6) "+
				"WHERE actor_pk = %d ORDER BY seq LIMIT %d", a, per)}
		}, func(a int) []string {
			return []string{fmt.Sprintf("DELETE FROM rc_ready WHERE actor_pk = %d AND claimed_gen = 1", a)}
		}}},
	}
}

// rowCostSetup writes actors x per messages round robin with their ready
// rows, plus the variant tables: the messages without the completion index,
// a results table, and ready rows with an unindexed claim column.
func rowCostSetup(ctx context.Context, db *sql.DB, actors, per int) error {
	for seq := 1; seq <= per; seq++ {
		var b strings.Builder
		b.WriteString("INSERT INTO ductus_messages (actor_pk, seq, name, args, enqueued_at, available_at) VALUES ")
		for a := 0; a < actors; a++ {
			if a > 0 {
				b.WriteByte(',')
			}
			fmt.Fprintf(&b, "(%d, %d, 'noop', '{}', NOW(6), NOW(6))", a, seq)
		}
		if _, err := db.ExecContext(ctx, b.String()); err != nil {
			return err
		}
	}
	for _, q := range []string{
		"INSERT INTO ductus_ready (message_id, actor_pk, seq, due_at) SELECT id, actor_pk, seq, available_at FROM ductus_messages",
		"CREATE TABLE rc_messages_noindex LIKE ductus_messages",
		"ALTER TABLE rc_messages_noindex DROP INDEX ductus_messages_completed",
		"INSERT INTO rc_messages_noindex SELECT * FROM ductus_messages",
		`CREATE TABLE rc_results (message_id BIGINT NOT NULL PRIMARY KEY, completed_at DATETIME(6) NOT NULL, attempts INT NOT NULL,
			result LONGTEXT CHARACTER SET utf8mb4 COLLATE utf8mb4_bin NULL, KEY rc_results_completed (completed_at)) ENGINE=InnoDB`,
		"CREATE TABLE rc_ready LIKE ductus_ready",
		"ALTER TABLE rc_ready ADD COLUMN claimed_gen BIGINT NULL, ADD COLUMN claimed_at DATETIME(6) NULL",
		"INSERT INTO rc_ready (message_id, actor_pk, seq, due_at) SELECT message_id, actor_pk, seq, due_at FROM ductus_ready",
	} {
		if _, err := db.ExecContext(ctx, q); err != nil {
			return fmt.Errorf("%.60s: %w", q, err)
		}
	}
	return nil
}

// rowCostIDs returns each actor's message IDs as an SQL list.
func rowCostIDs(ctx context.Context, db *sql.DB, actors int) ([]string, error) {
	lists := make([][]string, actors)
	rows, err := db.QueryContext(ctx, "SELECT id, actor_pk FROM ductus_messages ORDER BY id")
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	for rows.Next() {
		var id int64
		var a int
		if err := rows.Scan(&id, &a); err != nil {
			return nil, err
		}
		lists[a] = append(lists[a], strconv.FormatInt(id, 10))
	}
	out := make([]string, actors)
	for a, l := range lists {
		out[a] = strings.Join(l, ",")
	}
	return out, rows.Err()
}

// rowCostTxn runs stmts in one transaction at READ COMMITTED, the
// adapter's level for its take and commit.
func rowCostTxn(ctx context.Context, db *sql.DB, stmts []string) error {
	tx, err := db.BeginTx(ctx, &sql.TxOptions{Isolation: sql.LevelReadCommitted})
	if err != nil {
		return err
	}
	defer tx.Rollback()
	for _, q := range stmts {
		if _, err := tx.ExecContext(ctx, q); err != nil {
			return err
		}
	}
	return tx.Commit()
}

// quiet waits (up to 10 s) until the local server has used under 20 ms of
// CPU in each of two consecutive 250 ms windows, so the purge an operation
// leaves behind is counted with it and not with the next one. Without a
// local server, or in a smoke run, it returns at once.
func quiet(smoke bool, servers []string) {
	if smoke || serverCPU(servers) < 0 {
		return
	}
	calm, deadline := 0, time.Now().Add(10*time.Second)
	for calm < 2 && time.Now().Before(deadline) {
		before := serverCPU(servers)
		time.Sleep(250 * time.Millisecond)
		if serverCPU(servers)-before < 20*time.Millisecond {
			calm++
		} else {
			calm = 0
		}
	}
}
