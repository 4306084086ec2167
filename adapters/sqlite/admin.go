package sqlite

import (
	"context"
	"database/sql"
	"fmt"
	"strings"

	"github.com/ductus/ductus/actor"
	"github.com/ductus/ductus/adapters/internal/sqlrow"
	"github.com/ductus/ductus/runtime/store"
)

func scanDeadLetter(sc sqlrow.Scanner) (store.DeadLetter, error) {
	var d store.DeadLetter
	var args string
	var dead int64
	err := sc.Scan(&d.MessageID, &d.Ref.Type, &d.Ref.ID, &d.Seq, &d.Name, &args, &d.Error, &d.Attempts, &dead)
	d.Args = []byte(args)
	d.DeadAt = micros(sql.NullInt64{Int64: dead, Valid: true})
	return d, err
}

// DeadLetterList implements store.Backend.
func (b *Backend) DeadLetterList(ctx context.Context, p *store.DeadLetterListParams) ([]store.DeadLetter, error) {
	rows, err := b.r.QueryContext(ctx, `SELECT `+sqlrow.DeadLetterColumns+` FROM ductus_dead_letters d
		JOIN ductus_messages m ON m.id = d.message_id JOIN ductus_actors a ON a.pk = d.actor_pk
		WHERE (? = '' OR d.type = ?) AND d.message_id > ? ORDER BY d.message_id LIMIT ?`, p.Type, p.Type, p.AfterID, limitOr(p.Limit, 100))
	if err != nil {
		return nil, classify("list dead letters", err)
	}
	defer rows.Close()
	out, err := sqlrow.Collect(rows, scanDeadLetter)
	return out, classify("list dead letters", err)
}

// DeadLetterGet implements store.Backend.
func (b *Backend) DeadLetterGet(ctx context.Context, messageID int64) (*store.DeadLetter, error) {
	d, err := scanDeadLetter(b.r.QueryRowContext(ctx, `SELECT `+sqlrow.DeadLetterColumns+` FROM ductus_dead_letters d
		JOIN ductus_messages m ON m.id = d.message_id JOIN ductus_actors a ON a.pk = d.actor_pk WHERE d.message_id = ?`, messageID))
	if err == sql.ErrNoRows {
		return nil, fmt.Errorf("%w: dead letter %d", actor.ErrNotFound, messageID)
	}
	if err != nil {
		return nil, classify("read a dead letter", err)
	}
	return &d, nil
}

// DeadLetterRetry implements store.Backend.
func (b *Backend) DeadLetterRetry(ctx context.Context, messageID int64, mailboxCap int) (store.EnqueueResult, error) {
	var res store.EnqueueResult
	err := b.write(ctx, nil, func(tx *wtx) error {
		var m store.NewMessage
		var args string
		err := tx.QueryRowContext(ctx, `SELECT a.type, a.id, m.name, m.args FROM ductus_dead_letters d
			JOIN ductus_messages m ON m.id = d.message_id JOIN ductus_actors a ON a.pk = d.actor_pk WHERE d.message_id = ?`, messageID).
			Scan(&m.Ref.Type, &m.Ref.ID, &m.Name, &args)
		if err == sql.ErrNoRows {
			return fmt.Errorf("%w: dead letter %d", actor.ErrNotFound, messageID)
		}
		if err != nil {
			return classify("retry a dead letter", err)
		}
		m.Args, m.MustExist = []byte(args), true
		out, err := b.enqueue(ctx, tx, &store.MailboxEnqueueParams{Messages: []store.NewMessage{m}, MailboxCap: mailboxCap})
		if err != nil {
			return err
		}
		res = out[0]
		_, err = tx.ExecContext(ctx, `DELETE FROM ductus_dead_letters WHERE message_id = ?`, messageID)
		return classify("retry a dead letter", err)
	})
	return res, err
}

// DeadLetterDiscard implements store.Backend.
func (b *Backend) DeadLetterDiscard(ctx context.Context, messageID int64) (bool, error) {
	var ok bool
	err := b.write(ctx, nil, func(tx *wtx) error {
		res, err := tx.ExecContext(ctx, `DELETE FROM ductus_dead_letters WHERE message_id = ?`, messageID)
		if err != nil {
			return classify("discard a dead letter", err)
		}
		n, err := res.RowsAffected()
		ok = n > 0
		return classify("discard a dead letter", err)
	})
	return ok, err
}

// ActorPause implements store.Backend.
func (b *Backend) ActorPause(ctx context.Context, ref actor.Ref, paused bool) (bool, error) {
	var ok bool
	err := b.write(ctx, nil, func(tx *wtx) error {
		res, err := tx.ExecContext(ctx, `UPDATE ductus_actors SET paused = ? WHERE type = ? AND id = ?`, paused, ref.Type, ref.ID)
		if err != nil {
			return classify("pause an actor", err)
		}
		n, err := res.RowsAffected()
		ok = n > 0
		return classify("pause an actor", err)
	})
	return ok, err
}

// ActorSkipHead implements store.Backend.
func (b *Backend) ActorSkipHead(ctx context.Context, ref actor.Ref, reason string) (int64, error) {
	var id int64
	err := b.write(ctx, nil, func(tx *wtx) error {
		const op = "skip the head message"
		var pk int64
		var live bool
		err := tx.QueryRowContext(ctx, `SELECT pk, lease_owner IS NOT NULL AND lease_expires > `+now+` FROM ductus_actors WHERE type = ? AND id = ?`,
			ref.Type, ref.ID).Scan(&pk, &live)
		if err == sql.ErrNoRows {
			return fmt.Errorf("%w: actor %s", actor.ErrNotFound, ref)
		}
		if err != nil {
			return classify(op, err)
		}
		var claimed int
		if err := tx.QueryRowContext(ctx, `SELECT COUNT(*) FROM ductus_claimed WHERE actor_pk = ?`, pk).Scan(&claimed); err != nil {
			return classify(op, err)
		}
		if claimed > 0 && live {
			return fmt.Errorf("%w: the head message of %s is running; pause the actor and try again", actor.ErrInvalidArguments, ref)
		}
		err = tx.QueryRowContext(ctx, `SELECT message_id FROM (SELECT message_id, seq FROM ductus_claimed WHERE actor_pk = ?
			UNION ALL SELECT message_id, seq FROM ductus_ready WHERE actor_pk = ?) ORDER BY seq LIMIT 1`, pk, pk).Scan(&id)
		if err == sql.ErrNoRows {
			return fmt.Errorf("%w: %s has no unfinished message", actor.ErrNotFound, ref)
		}
		if err != nil {
			return classify(op, err)
		}
		for _, q := range []string{
			`DELETE FROM ductus_claimed WHERE message_id = ?`,
			`DELETE FROM ductus_ready WHERE message_id = ?`,
		} {
			if _, err := tx.ExecContext(ctx, q, id); err != nil {
				return classify(op, err)
			}
		}
		if err := b.fail(ctx, tx, pk, &store.Failure{MessageID: id, Error: "skipped by an operator: " + reason, Dead: true}); err != nil {
			return err
		}
		_, err = tx.ExecContext(ctx, `UPDATE ductus_actors SET unfinished = unfinished - 1,
			head_due = (SELECT due_at FROM ductus_ready WHERE actor_pk = ductus_actors.pk ORDER BY seq LIMIT 1) WHERE pk = ?`, pk)
		return classify(op, err)
	})
	return id, err
}

func scanActor(sc sqlrow.Scanner) (store.ActorInfo, error) {
	var a store.ActorInfo
	var state sql.NullString
	var exp, head sql.NullInt64
	var created, updated int64
	err := sc.Scan(&a.PK, &a.Ref.Type, &a.Ref.ID, &state, &a.StateVersion, &a.Generation, &a.LeaseOwner, &exp,
		&a.Paused, &a.Unfinished, &head, &created, &updated)
	if state.Valid {
		a.State = []byte(state.String)
	}
	a.LeaseExpires, a.HeadDue = micros(exp), micros(head)
	a.CreatedAt = micros(sql.NullInt64{Int64: created, Valid: true})
	a.UpdatedAt = micros(sql.NullInt64{Int64: updated, Valid: true})
	return a, err
}

// ActorGet implements store.Backend.
func (b *Backend) ActorGet(ctx context.Context, ref actor.Ref) (*store.ActorInfo, error) {
	a, err := scanActor(b.r.QueryRowContext(ctx, `SELECT `+sqlrow.ActorColumns+` FROM ductus_actors a WHERE a.type = ? AND a.id = ?`, ref.Type, ref.ID))
	if err == sql.ErrNoRows {
		return nil, fmt.Errorf("%w: actor %s", actor.ErrNotFound, ref)
	}
	if err != nil {
		return nil, classify("read an actor", err)
	}
	return &a, nil
}

// ActorList implements store.Backend.
func (b *Backend) ActorList(ctx context.Context, p *store.ActorListParams) ([]store.ActorInfo, error) {
	where := []string{"a.type = ?", "a.id > ?"}
	args := []any{p.Type, p.AfterID}
	if f := p.Filter; f != nil {
		keys, err := store.StatePath(f.Path)
		if err != nil {
			return nil, err
		}
		if err := store.FilterValue(f.Value); err != nil {
			return nil, err
		}
		path := "$." + strings.Join(keys, ".")
		switch v := f.Value.(type) {
		case nil:
			where = append(where, "json_type(a.state, ?) = 'null'")
			args = append(args, path)
		case bool:
			want := "false"
			if v {
				want = "true"
			}
			where = append(where, "json_type(a.state, ?) = ?")
			args = append(args, path, want)
		default:
			where = append(where, "json_extract(a.state, ?) = ?")
			args = append(args, path, v)
		}
	}
	if p.Quiet > 0 {
		where = append(where, "a.unfinished = 0", "a.updated_at < "+now+" - ?",
			"NOT EXISTS (SELECT 1 FROM ductus_reminders r WHERE r.actor_pk = a.pk)")
		args = append(args, store.Micros(p.Quiet))
	}
	if o := p.OrphanedAgainst; o != nil {
		if err := store.CheckOwnerRelation(o); err != nil {
			return nil, err
		}
		where = append(where, fmt.Sprintf(`NOT EXISTS (SELECT 1 FROM "%s" o WHERE CAST(o."%s" AS TEXT) = a.id)`, o.Table, o.Column))
	}
	args = append(args, limitOr(p.Limit, 100))
	rows, err := b.r.QueryContext(ctx, `SELECT `+sqlrow.ActorColumns+` FROM ductus_actors a WHERE `+strings.Join(where, " AND ")+
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
	err := b.write(ctx, nil, func(tx *wtx) error {
		for _, t := range []struct {
			n *int
			q string
		}{
			{&res.Messages, `DELETE FROM ductus_messages WHERE id IN (SELECT id FROM ductus_messages
				WHERE completed_at IS NOT NULL AND completed_at < ` + now + ` - ? ORDER BY completed_at LIMIT ?)`},
			{&res.Effects, `DELETE FROM ductus_effects WHERE id IN (SELECT id FROM ductus_effects
				WHERE finished_at IS NOT NULL AND finished_at < ` + now + ` - ? AND state = 'done' ORDER BY finished_at LIMIT ?)`},
			{&res.Outbox, `DELETE FROM ductus_outbox WHERE id IN (SELECT id FROM ductus_outbox
				WHERE delivered_at IS NOT NULL AND delivered_at < ` + now + ` - ? ORDER BY delivered_at LIMIT ?)`},
			{&res.Broadcasts, `DELETE FROM ductus_broadcasts WHERE id IN (SELECT id FROM ductus_broadcasts
				WHERE created_at < ` + now + ` - ? ORDER BY created_at LIMIT ?)`},
		} {
			r, err := tx.ExecContext(ctx, t.q, keep, limit)
			if err != nil {
				return classify("prune history", err)
			}
			n, _ := r.RowsAffected()
			*t.n = int(n)
		}
		return nil
	})
	return res, err
}

// TableCount implements store.Backend.
func (b *Backend) TableCount(ctx context.Context, table string) (int64, error) {
	if err := sqlrow.CheckTable(table); err != nil {
		return 0, err
	}
	var n int64
	if err := b.r.QueryRowContext(ctx, `SELECT COUNT(*) FROM `+table).Scan(&n); err != nil {
		return 0, classify("count "+table, err)
	}
	return n, nil
}
