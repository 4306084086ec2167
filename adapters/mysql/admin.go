package mysql

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/ductus/ductus/actor"
	"github.com/ductus/ductus/adapters/internal/sqlrow"
	"github.com/ductus/ductus/runtime/store"
)

func scanDeadLetter(sc sqlrow.Scanner) (store.DeadLetter, error) {
	var d store.DeadLetter
	var args string
	err := sc.Scan(&d.MessageID, &d.Ref.Type, &d.Ref.ID, &d.Seq, &d.Name, &args, &d.Error, &d.Attempts, &d.DeadAt)
	d.Args = []byte(args)
	return d, err
}

// DeadLetterList implements store.Backend.
func (b *Backend) DeadLetterList(ctx context.Context, p *store.DeadLetterListParams) ([]store.DeadLetter, error) {
	where, args := "d.message_id > ?", []any{p.AfterID}
	if p.Type != "" {
		where, args = "d.type = ? AND "+where, []any{p.Type, p.AfterID}
	}
	b.count(1)
	rows, err := b.db.QueryContext(ctx, `SELECT `+sqlrow.DeadLetterColumns+` FROM ductus_dead_letters d
		JOIN ductus_messages m ON m.id = d.message_id JOIN ductus_actors a ON a.pk = d.actor_pk
		WHERE `+where+` ORDER BY d.message_id LIMIT ?`, append(args, limitOr(p.Limit, 100))...)
	if err != nil {
		return nil, classify("list dead letters", err)
	}
	defer rows.Close()
	out, err := sqlrow.Collect(rows, scanDeadLetter)
	return out, classify("list dead letters", err)
}

// DeadLetterGet implements store.Backend.
func (b *Backend) DeadLetterGet(ctx context.Context, messageID int64) (*store.DeadLetter, error) {
	b.count(1)
	d, err := scanDeadLetter(b.db.QueryRowContext(ctx, `SELECT `+sqlrow.DeadLetterColumns+` FROM ductus_dead_letters d
		JOIN ductus_messages m ON m.id = d.message_id JOIN ductus_actors a ON a.pk = d.actor_pk WHERE d.message_id = ?`, messageID))
	if err == sql.ErrNoRows {
		return nil, fmt.Errorf("%w: dead letter %d", actor.ErrNotFound, messageID)
	}
	if err != nil {
		return nil, classify("read a dead letter", err)
	}
	return &d, nil
}

// DeadLetterRetry implements store.Backend: the dead letter is locked, a
// copy of its message enqueued at the tail of its actor's mailbox, and the
// dead letter removed (the dead message keeps its history).
func (b *Backend) DeadLetterRetry(ctx context.Context, messageID int64, mailboxCap int) (store.EnqueueResult, error) {
	var res store.EnqueueResult
	err := b.txn(ctx, nil, func(s *session) error {
		var m store.NewMessage
		var args string
		found := false
		a := newBatch("retry a dead letter: read it")
		a.query(func(rows *sql.Rows) error {
			for rows.Next() {
				found = true
				if err := rows.Scan(&m.Ref.Type, &m.Ref.ID, &m.Name, &args); err != nil {
					return err
				}
			}
			return nil
		}, `SELECT a.type, a.id, m.name, m.args FROM ductus_dead_letters d
			JOIN ductus_messages m ON m.id = d.message_id JOIN ductus_actors a ON a.pk = d.actor_pk WHERE d.message_id = ?`, messageID)
		if err := s.run(ctx, a); err != nil {
			return err
		}
		if !found {
			return fmt.Errorf("%w: dead letter %d", actor.ErrNotFound, messageID)
		}
		m.Args, m.MustExist = []byte(args), true
		wr := &writes{}
		out, err := b.enqueue(ctx, s, &store.MailboxEnqueueParams{Messages: []store.NewMessage{m}, MailboxCap: mailboxCap}, wr)
		if err != nil {
			return err
		}
		// The actor is locked now; lock the dead letter too (actor first,
		// the order of a turn's commit) and make sure no concurrent retry
		// took it meanwhile.
		still := false
		c := newBatch("retry a dead letter: lock it")
		c.query(scanExists(&still), `SELECT 1 FROM ductus_dead_letters WHERE message_id = ? FOR UPDATE`, messageID)
		if err := s.run(ctx, c); err != nil {
			return err
		}
		if !still {
			return fmt.Errorf("%w: dead letter %d", actor.ErrNotFound, messageID)
		}
		w := newBatch("retry a dead letter")
		wr.flush(w)
		w.exec(`DELETE FROM ductus_dead_letters WHERE message_id = ?`, messageID)
		w.after = append(w.after, func() { res = out[0] })
		return s.commit(ctx, w)
	})
	return res, err
}

// DeadLetterDiscard implements store.Backend.
func (b *Backend) DeadLetterDiscard(ctx context.Context, messageID int64) (bool, error) {
	n, err := b.execCount(ctx, "discard a dead letter", `DELETE FROM ductus_dead_letters WHERE message_id = ?`, messageID)
	return n > 0, err
}

// ActorPause implements store.Backend. CLIENT_FOUND_ROWS makes the count
// "the actor exists" even when it was already paused.
func (b *Backend) ActorPause(ctx context.Context, ref actor.Ref, paused bool) (bool, error) {
	n, err := b.execCount(ctx, "pause an actor", `UPDATE ductus_actors SET paused = ? WHERE type = ? AND id = ?`, paused, ref.Type, ref.ID)
	return n > 0, err
}

// execCount runs one autocommit statement and returns the rows it matched.
func (b *Backend) execCount(ctx context.Context, op, q string, args ...any) (int64, error) {
	b.count(1)
	res, err := b.db.ExecContext(ctx, q, args...)
	if err != nil {
		return 0, classify(op, err)
	}
	n, err := res.RowsAffected()
	return n, classify(op, err)
}

// ActorSkipHead implements store.Backend.
func (b *Backend) ActorSkipHead(ctx context.Context, ref actor.Ref, reason string) (int64, error) {
	var id int64
	err := b.txn(ctx, nil, func(s *session) error {
		const op = "skip the head message"
		var pk, claimed int64
		var live, found bool
		var heads []int64
		a := newBatch(op + ": lock the actor")
		a.query(func(rows *sql.Rows) error {
			for rows.Next() {
				found = true
				if err := rows.Scan(&pk, &live); err != nil {
					return err
				}
			}
			return nil
		}, `SELECT pk, lease_owner IS NOT NULL AND lease_expires > NOW(6) FROM ductus_actors WHERE type = ? AND id = ? FOR UPDATE`, ref.Type, ref.ID)
		a.query(scanInt(&claimed), `SELECT COUNT(*) FROM ductus_claimed WHERE actor_pk = (SELECT pk FROM ductus_actors WHERE type = ? AND id = ?)`, ref.Type, ref.ID)
		a.query(scanInts(&heads), `SELECT message_id FROM (
			(SELECT message_id, seq FROM ductus_claimed WHERE actor_pk = (SELECT pk FROM ductus_actors WHERE type = ? AND id = ?) ORDER BY seq LIMIT 1)
			UNION ALL
			(SELECT message_id, seq FROM ductus_ready WHERE actor_pk = (SELECT pk FROM ductus_actors WHERE type = ? AND id = ?) ORDER BY seq LIMIT 1)
		) h ORDER BY seq LIMIT 1`, ref.Type, ref.ID, ref.Type, ref.ID)
		if err := s.run(ctx, a); err != nil {
			return err
		}
		switch {
		case !found:
			return fmt.Errorf("%w: actor %s", actor.ErrNotFound, ref)
		case claimed > 0 && live:
			return fmt.Errorf("%w: the head message of %s is running; pause the actor and try again", actor.ErrInvalidArguments, ref)
		case len(heads) == 0:
			return fmt.Errorf("%w: %s has no unfinished message", actor.ErrNotFound, ref)
		}
		id = heads[0]
		w := newBatch(op)
		w.exec(`DELETE FROM ductus_claimed WHERE message_id = ?`, id)
		w.exec(`DELETE FROM ductus_ready WHERE message_id = ?`, id)
		fail(w, pk, &store.Failure{MessageID: id, Error: "skipped by an operator: " + reason, Dead: true}, false)
		w.exec(`UPDATE ductus_actors SET unfinished = unfinished - 1,
			head_due = (SELECT r.due_at FROM ductus_ready r WHERE r.actor_pk = ? ORDER BY r.seq LIMIT 1) WHERE pk = ?`, pk, pk)
		return s.commit(ctx, w)
	})
	return id, err
}

func scanActor(sc sqlrow.Scanner) (store.ActorInfo, error) {
	var a store.ActorInfo
	var state sql.NullString
	var exp, head sql.NullTime
	err := sc.Scan(&a.PK, &a.Ref.Type, &a.Ref.ID, &state, &a.StateVersion, &a.Generation, &a.LeaseOwner, &exp,
		&a.Paused, &a.Unfinished, &head, &a.CreatedAt, &a.UpdatedAt)
	if state.Valid {
		a.State = []byte(state.String)
	}
	a.LeaseExpires, a.HeadDue = exp.Time, head.Time
	return a, err
}

// ActorGet implements store.Backend.
func (b *Backend) ActorGet(ctx context.Context, ref actor.Ref) (*store.ActorInfo, error) {
	b.count(1)
	a, err := scanActor(b.db.QueryRowContext(ctx, `SELECT `+sqlrow.ActorColumns+` FROM ductus_actors a WHERE a.type = ? AND a.id = ?`, ref.Type, ref.ID))
	if err == sql.ErrNoRows {
		return nil, fmt.Errorf("%w: actor %s", actor.ErrNotFound, ref)
	}
	if err != nil {
		return nil, classify("read an actor", err)
	}
	return &a, nil
}

// stateFilter renders a StateFilter as SQL both servers evaluate alike:
// MariaDB's JSON_EXTRACT returns JSON text and MySQL's a JSON value, so
// the value is compared through JSON_TYPE (the kind must match, as on
// SQLite) and JSON_UNQUOTE (the scalar as text, or compared as a number).
func stateFilter(f *store.StateFilter) (string, []any, error) {
	keys, err := store.StatePath(f.Path)
	if err != nil {
		return "", nil, err
	}
	if err := store.FilterValue(f.Value); err != nil {
		return "", nil, err
	}
	path := "$." + strings.Join(keys, ".")
	typ := "JSON_TYPE(JSON_EXTRACT(a.state, ?))"
	val := "JSON_UNQUOTE(JSON_EXTRACT(a.state, ?))"
	switch v := f.Value.(type) {
	case nil:
		return typ + " = 'NULL'", []any{path}, nil
	case bool:
		want := "false"
		if v {
			want = "true"
		}
		return typ + " = 'BOOLEAN' AND " + val + " = ?", []any{path, path, want}, nil
	case string:
		// Bytes, not a collation: utf8mb4_bin pads, so "a" would equal "a ".
		return typ + " = 'STRING' AND CAST(" + val + " AS BINARY) = CAST(? AS BINARY)", []any{path, path, v}, nil
	case json.Number:
		n, err := v.Float64()
		if err != nil {
			return "", nil, fmt.Errorf("%w: state filter value %q is not a number", actor.ErrInvalidArguments, v.String())
		}
		if i, err := v.Int64(); err == nil {
			return numberFilter(typ, val), []any{path, path, i}, nil
		}
		return numberFilter(typ, val), []any{path, path, n}, nil
	default:
		return numberFilter(typ, val), []any{path, path, v}, nil
	}
}

// numberFilter compares the JSON number as a number: the text and the
// parameter are both numbers to the server.
func numberFilter(typ, val string) string {
	return typ + " IN ('INTEGER', 'UNSIGNED INTEGER', 'DOUBLE', 'DECIMAL') AND " + val + " + 0 = ?"
}

// ActorList implements store.Backend.
func (b *Backend) ActorList(ctx context.Context, p *store.ActorListParams) ([]store.ActorInfo, error) {
	where := []string{"a.type = ?", "a.id > ?"}
	args := []any{p.Type, p.AfterID}
	if f := p.Filter; f != nil {
		cond, cargs, err := stateFilter(f)
		if err != nil {
			return nil, err
		}
		where = append(where, cond)
		args = append(args, cargs...)
	}
	if p.Quiet > 0 {
		where = append(where, "a.unfinished = 0", "a.updated_at < NOW(6) - INTERVAL ? MICROSECOND",
			"NOT EXISTS (SELECT 1 FROM ductus_reminders r WHERE r.actor_pk = a.pk)")
		args = append(args, store.Micros(p.Quiet))
	}
	if o := p.OrphanedAgainst; o != nil {
		if err := store.CheckOwnerRelation(o); err != nil {
			return nil, err
		}
		where = append(where, fmt.Sprintf("NOT EXISTS (SELECT 1 FROM `%s` o WHERE CAST(o.`%s` AS BINARY) = a.id)", o.Table, o.Column))
	}
	args = append(args, limitOr(p.Limit, 100))
	b.count(1)
	rows, err := b.db.QueryContext(ctx, `SELECT `+sqlrow.ActorColumns+` FROM ductus_actors a WHERE `+strings.Join(where, " AND ")+
		` ORDER BY a.id LIMIT ?`, args...)
	if err != nil {
		return nil, classify("list actors", err)
	}
	defer rows.Close()
	out, err := sqlrow.Collect(rows, scanActor)
	return out, classify("list actors", err)
}

// Prune implements store.Backend: each table loses at most Limit rows per
// call, oldest first, through the indexes on finish times, so a call is
// short whatever the history.
func (b *Backend) Prune(ctx context.Context, p *store.PruneParams) (store.PruneResult, error) {
	var res store.PruneResult
	limit := limitOr(p.Limit, 1000)
	keep := store.Micros(p.Keep)
	err := b.txn(ctx, nil, func(s *session) error {
		res = store.PruneResult{}
		w := newBatch("prune history")
		for _, t := range []struct {
			n *int
			q string
		}{
			{&res.Messages, `DELETE FROM ductus_messages WHERE completed_at IS NOT NULL AND completed_at < NOW(6) - INTERVAL ? MICROSECOND ORDER BY completed_at LIMIT ?`},
			{&res.Effects, `DELETE FROM ductus_effects WHERE finished_at IS NOT NULL AND finished_at < NOW(6) - INTERVAL ? MICROSECOND AND state = 'done' ORDER BY finished_at LIMIT ?`},
			{&res.Outbox, `DELETE FROM ductus_outbox WHERE delivered_at IS NOT NULL AND delivered_at < NOW(6) - INTERVAL ? MICROSECOND ORDER BY delivered_at LIMIT ?`},
			{&res.Broadcasts, `DELETE FROM ductus_broadcasts WHERE created_at < NOW(6) - INTERVAL ? MICROSECOND ORDER BY created_at LIMIT ?`},
		} {
			var n int64
			t := t
			w.exec(t.q, keep, limit)
			w.query(scanInt(&n), `SELECT ROW_COUNT()`)
			w.after = append(w.after, func() { *t.n = int(n) })
		}
		return s.commit(ctx, w)
	})
	return res, err
}

// TableCount implements store.Backend.
func (b *Backend) TableCount(ctx context.Context, table string) (int64, error) {
	if err := sqlrow.CheckTable(table); err != nil {
		return 0, err
	}
	var n int64
	if err := b.caller.QueryRowContext(ctx, `SELECT COUNT(*) FROM `+table).Scan(&n); err != nil {
		return 0, classify("count "+table, err)
	}
	return n, nil
}
