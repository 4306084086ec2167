package main

import (
	"context"
	"database/sql"
	"fmt"
	"log/slog"
	"sync"
	"time"

	_ "github.com/go-sql-driver/mysql"

	"github.com/ductus/ductus/actor"
	"github.com/ductus/ductus/adapters/mysql"
	"github.com/ductus/ductus/runtime/host"
)

const fast = `SET TRANSACTION ISOLATION LEVEL READ COMMITTED;
START TRANSACTION;
DO LAST_INSERT_ID(0);
UPDATE ductus_actors SET next_seq = LAST_INSERT_ID(next_seq) + 1, unfinished = unfinished + 1,
	head_due = COALESCE(head_due, COALESCE(?, NOW(6) + INTERVAL ? MICROSECOND)), updated_at = NOW(6)
	WHERE pk = ? AND type = ? AND id = ?;
INSERT INTO ductus_messages (actor_pk, seq, name, args, idem_key, ask, enqueued_at, available_at)
	VALUES (?, NULLIF(LAST_INSERT_ID(), 0), ?, ?, NULL, ?, (SELECT a.updated_at FROM ductus_actors a WHERE a.pk = ?),
		COALESCE(?, (SELECT a.updated_at FROM ductus_actors a WHERE a.pk = ?) + INTERVAL ? MICROSECOND));
INSERT INTO ductus_ready (message_id, actor_pk, seq, due_at) SELECT id, actor_pk, seq, available_at FROM ductus_messages WHERE id = LAST_INSERT_ID();
COMMIT`

const proc = `CREATE PROCEDURE tell1(IN p_pk BIGINT, IN p_type VARBINARY(255), IN p_id VARBINARY(2048), IN p_name VARBINARY(255), IN p_args LONGTEXT, IN p_ask TINYINT, IN p_at DATETIME(6), IN p_delay BIGINT)
BEGIN
  DECLARE v_seq BIGINT DEFAULT NULL;
  DECLARE v_now DATETIME(6);
  DECLARE v_due DATETIME(6);
  SET v_now = NOW(6);
  SET v_due = COALESCE(p_at, v_now + INTERVAL p_delay MICROSECOND);
  SET TRANSACTION ISOLATION LEVEL READ COMMITTED;
  START TRANSACTION;
  SELECT next_seq INTO v_seq FROM ductus_actors WHERE pk = p_pk AND type = p_type AND id = p_id FOR UPDATE;
  UPDATE ductus_actors SET next_seq = v_seq + 1, unfinished = unfinished + 1, head_due = COALESCE(head_due, v_due), updated_at = v_now WHERE pk = p_pk;
  INSERT INTO ductus_messages (actor_pk, seq, name, args, idem_key, ask, enqueued_at, available_at) VALUES (p_pk, v_seq, p_name, p_args, NULL, p_ask, v_now, v_due);
  INSERT INTO ductus_ready (message_id, actor_pk, seq, due_at) VALUES (LAST_INSERT_ID(), p_pk, v_seq, v_due);
  COMMIT;
  SELECT v_seq, LAST_INSERT_ID();
END`

func main() {
	ctx := context.Background()
	adm, _ := sql.Open("mysql", "root@tcp(127.0.0.1:3306)/?multiStatements=true")
	adm.Exec("DROP DATABASE IF EXISTS exp1")
	adm.Exec("CREATE DATABASE exp1")
	defer adm.Exec("DROP DATABASE IF EXISTS exp1")
	dsn := "root@tcp(127.0.0.1:3306)/exp1?multiStatements=true&interpolateParams=true&parseTime=true"
	be, err := mysql.Open(ctx, mysql.Config{DSN: dsn, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		panic(err)
	}
	reg := actor.NewRegistry()
	type st struct{ N int }
	reg.MustRegister(&actor.Type[st]{Name: "c", Messages: map[string]actor.Handler[st]{"noop": actor.Message(func(c *actor.Context, s *st, _ any) (any, error) { return nil, nil })}})
	h, err := host.New(host.Config{Backend: be, Registry: reg, NoWorkers: true, Limits: actor.Limits{MailboxMessages: -1}})
	if err != nil {
		panic(err)
	}
	if err := h.Start(ctx); err != nil {
		panic(err)
	}
	pks := make([]int64, 16)
	for i := range pks {
		ref := actor.Ref{Type: "c", ID: fmt.Sprint("a", i)}
		h.Tell(ctx, ref, "noop", nil)
	}
	db, _ := sql.Open("mysql", dsn)
	db.SetMaxOpenConns(16)
	db.SetMaxIdleConns(16)
	if _, err := db.Exec(proc); err != nil {
		panic(err)
	}
	for i := range pks {
		db.QueryRow("SELECT pk FROM ductus_actors WHERE id=?", fmt.Sprint("a", i)).Scan(&pks[i])
	}
	db.Exec(`CREATE TABLE bb (id BIGINT AUTO_INCREMENT PRIMARY KEY, v VARCHAR(8)) ENGINE=InnoDB`)
	run := func(name string, conns, n int, f func(i int) error) {
		start := time.Now()
		var wg sync.WaitGroup
		for c := 0; c < conns; c++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := 0; i < n/conns; i++ {
					if err := f(c); err != nil {
						panic(fmt.Sprint(name, err))
					}
				}
			}()
		}
		wg.Wait()
		fmt.Printf("%-12s conns=%2d %8.0f /s\n", name, conns, float64(n)/time.Since(start).Seconds())
	}
	for round := 0; round < 2; round++ {
		for _, conns := range []int{1, 16} {
			n := 2000 * conns / (1 + conns/4)
			run("baseline3rt", conns, n, func(int) error {
				tx, _ := db.Begin()
				if _, err := tx.Exec(`INSERT INTO bb (v) VALUES ('x')`); err != nil {
					return err
				}
				return tx.Commit()
			})
			run("fastsql", conns, n, func(c int) error {
				_, err := db.Exec(fast, nil, 0, pks[c], "c", fmt.Sprint("a", c), pks[c], "noop", "null", false, pks[c], nil, pks[c], 0)
				return err
			})
			run("proc", conns, n, func(c int) error {
				var seq, id int64
				return db.QueryRow("CALL tell1(?, ?, ?, ?, ?, ?, ?, ?)", pks[c], "c", fmt.Sprint("a", c), "noop", "null", false, nil, 0).Scan(&seq, &id)
			})
		}
	}
}
