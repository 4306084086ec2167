package postgres

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"

	"github.com/ductus/ductus/actor"
	"github.com/ductus/ductus/adapters/internal/sqlrow"
	"github.com/ductus/ductus/runtime/store"
)

const deadLetterFrom = ` FROM ductus_dead_letters d JOIN ductus_messages m ON m.id = d.message_id JOIN ductus_actors a ON a.pk = d.actor_pk`

func scanDeadLetter(row sqlrow.Scanner) (store.DeadLetter, error) {
	var d store.DeadLetter
	err := row.Scan(&d.MessageID, &d.Ref.Type, &d.Ref.ID, &d.Seq, &d.Name, &d.Args, &d.Error, &d.Attempts, &d.DeadAt)
	return d, err
}

// DeadLetterList implements store.Backend.
func (b *Backend) DeadLetterList(ctx context.Context, p *store.DeadLetterListParams) ([]store.DeadLetter, error) {
	q := `SELECT ` + sqlrow.DeadLetterColumns + deadLetterFrom + ` WHERE d.message_id > $1`
	args := []any{p.AfterID, limitOr(p.Limit, 100)}
	if p.Type != "" { // a text of its own, so the generic plan uses the type index
		q += ` AND d.type = $3`
		args = append(args, p.Type)
	}
	rows, err := b.pool.Query(ctx, q+` ORDER BY d.message_id LIMIT $2`, args...)
	if err != nil {
		return nil, classify("list dead letters", err)
	}
	defer rows.Close()
	out, err := sqlrow.Collect(rows, scanDeadLetter)
	return out, classify("list dead letters", err)
}

// DeadLetterGet implements store.Backend.
func (b *Backend) DeadLetterGet(ctx context.Context, messageID int64) (*store.DeadLetter, error) {
	d, err := scanDeadLetter(b.pool.QueryRow(ctx, `SELECT `+sqlrow.DeadLetterColumns+deadLetterFrom+` WHERE d.message_id = $1`, messageID))
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, fmt.Errorf("%w: dead letter %d", actor.ErrNotFound, messageID)
	}
	if err != nil {
		return nil, classify("read a dead letter", err)
	}
	return &d, nil
}

// DeadLetterRetry implements store.Backend: a copy of the dead message goes
// to the tail of its actor's mailbox and the dead letter goes, in one
// transaction (the dead message's own history is kept).
func (b *Backend) DeadLetterRetry(ctx context.Context, messageID int64, mailboxCap int) (store.EnqueueResult, error) {
	var res store.EnqueueResult
	err := b.txn(ctx, func(t *txn) error {
		var m store.NewMessage
		found := false
		var bt batch
		shareActors(&bt, "retry a dead letter", actorsOfDeadLetters, []int64{messageID})
		bt.query("retry a dead letter", func(rows pgx.Rows) error {
			found = true
			return rows.Scan(&m.Ref.Type, &m.Ref.ID, &m.Name, &m.Args)
		}, `SELECT a.type, a.id, m.name, m.args`+deadLetterFrom+` WHERE d.message_id = $1 FOR UPDATE OF d`, messageID)
		if err := bt.run(ctx, t); err != nil {
			return err
		}
		if !found {
			return fmt.Errorf("%w: dead letter %d", actor.ErrNotFound, messageID)
		}
		m.MustExist = true
		p := &store.MailboxEnqueueParams{Messages: []store.NewMessage{m}, MailboxCap: mailboxCap}
		e, err := b.newEnqueuer(ctx, t, p.Messages)
		if err != nil {
			return err
		}
		out, err := e.decide(p, store.PlanEnqueue(p.Messages))
		if err != nil {
			return err
		}
		bt = batch{}
		e.queue(&bt, false)
		bt.exec("retry a dead letter", `DELETE FROM ductus_dead_letters WHERE message_id = $1`, messageID)
		if err := t.commitWith(ctx, &bt); err != nil {
			return err
		}
		e.finish()
		res = out[0]
		return nil
	})
	return res, err
}

// DeadLetterDiscard implements store.Backend.
func (b *Backend) DeadLetterDiscard(ctx context.Context, messageID int64) (bool, error) {
	tag, err := b.pool.Exec(ctx, `DELETE FROM ductus_dead_letters WHERE message_id = $1`, messageID)
	if err != nil {
		return false, classify("discard a dead letter", err)
	}
	return tag.RowsAffected() > 0, nil
}

// ActorPause implements store.Backend.
func (b *Backend) ActorPause(ctx context.Context, ref actor.Ref, paused bool) (bool, error) {
	if !storable(ref) {
		return false, nil
	}
	tag, err := b.pool.Exec(ctx, `UPDATE ductus_actors SET paused = $1 WHERE type = $2 AND id = $3`, paused, ref.Type, ref.ID)
	if err != nil {
		return false, classify("pause an actor", err)
	}
	return tag.RowsAffected() > 0, nil
}

// ActorSkipHead implements store.Backend.
func (b *Backend) ActorSkipHead(ctx context.Context, ref actor.Ref, reason string) (int64, error) {
	const op = "skip the head message"
	if !storable(ref) {
		return 0, fmt.Errorf("%w: actor %s", actor.ErrNotFound, ref)
	}
	var id int64
	err := b.txn(ctx, func(t *txn) error {
		const pk = `(SELECT pk FROM ductus_actors WHERE type = $1 AND id = $2)`
		const low = `(SELECT next_seq - unfinished FROM ductus_actors WHERE type = $1 AND id = $2)` // lowSeq by name
		var actorPK int64
		var live, found bool
		var claimed int64
		var head pgtype.Int8
		var bt batch
		bt.query(op, func(rows pgx.Rows) error {
			found = true
			return rows.Scan(&actorPK, &live)
		}, `SELECT pk, lease_owner IS NOT NULL AND lease_expires > now() FROM ductus_actors WHERE type = $1 AND id = $2 FOR UPDATE`, ref.Type, ref.ID)
		bt.query(op, func(rows pgx.Rows) error { return rows.Scan(&claimed) },
			`SELECT count(*) FROM ductus_claimed WHERE actor_pk = `+pk, ref.Type, ref.ID)
		bt.query(op, func(rows pgx.Rows) error { return rows.Scan(&head) },
			`SELECT message_id FROM (SELECT message_id, seq FROM ductus_claimed WHERE actor_pk = `+pk+` AND seq >= `+low+`
				UNION ALL SELECT message_id, seq FROM ductus_ready WHERE actor_pk = `+pk+` AND seq >= `+low+`) u ORDER BY seq LIMIT 1`, ref.Type, ref.ID)
		if err := bt.run(ctx, t); err != nil {
			return err
		}
		if !found {
			return fmt.Errorf("%w: actor %s", actor.ErrNotFound, ref)
		}
		if claimed > 0 && live {
			return fmt.Errorf("%w: the head message of %s is running; pause the actor and try again", actor.ErrInvalidArguments, ref)
		}
		if !head.Valid {
			return fmt.Errorf("%w: %s has no unfinished message", actor.ErrNotFound, ref)
		}
		id = head.Int64
		bt = batch{}
		bt.exec(op, `DELETE FROM ductus_claimed WHERE actor_pk = $1 AND message_id = $2`, actorPK, id)
		bt.exec(op, `DELETE FROM ductus_ready WHERE actor_pk = $1 AND message_id = $2`, actorPK, id)
		bt.exec(op, sqlFailDead, id, "skipped by an operator: "+reason, int32(0), actorPK)
		bt.exec(op, `UPDATE ductus_actors SET unfinished = unfinished - 1,
			head_due = (SELECT due_at FROM ductus_ready WHERE actor_pk = $1 AND seq >= `+lowSeq+` ORDER BY seq LIMIT 1) WHERE pk = $1`, actorPK)
		return t.commitWith(ctx, &bt)
	})
	return id, err
}

func scanActor(row sqlrow.Scanner) (store.ActorInfo, error) {
	var a store.ActorInfo
	var exp, head pgtype.Timestamptz
	err := row.Scan(&a.PK, &a.Ref.Type, &a.Ref.ID, &a.State, &a.StateVersion, &a.Generation, &a.LeaseOwner, &exp,
		&a.Paused, &a.Unfinished, &head, &a.CreatedAt, &a.UpdatedAt)
	if exp.Valid {
		a.LeaseExpires = exp.Time
	}
	if head.Valid {
		a.HeadDue = head.Time
	}
	return a, err
}

// ActorGet implements store.Backend.
func (b *Backend) ActorGet(ctx context.Context, ref actor.Ref) (*store.ActorInfo, error) {
	if !storable(ref) {
		return nil, fmt.Errorf("%w: actor %s", actor.ErrNotFound, ref)
	}
	a, err := scanActor(b.pool.QueryRow(ctx, `SELECT `+sqlrow.ActorColumns+` FROM ductus_actors a WHERE a.type = $1 AND a.id = $2`, ref.Type, ref.ID))
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, fmt.Errorf("%w: actor %s", actor.ErrNotFound, ref)
	}
	if err != nil {
		return nil, classify("read an actor", err)
	}
	return &a, nil
}

// storable reports whether a reference can name a stored actor: text
// columns hold valid UTF-8 without NUL bytes, so any other reference names
// no actor (and must not reach the server, which refuses the encoding).
func storable(ref actor.Ref) bool {
	return utf8.ValidString(ref.Type) && utf8.ValidString(ref.ID) && !strings.ContainsRune(ref.Type, 0) && !strings.ContainsRune(ref.ID, 0)
}

// ActorList implements store.Backend. A state filter compares the JSON
// value at the path by type: a string matches only a JSON string, a number
// only a JSON number of equal value, a bool only that literal, nil only
// JSON null.
func (b *Backend) ActorList(ctx context.Context, p *store.ActorListParams) ([]store.ActorInfo, error) {
	where := []string{"a.type = $1", "a.id > $2"}
	args := []any{p.Type, p.AfterID}
	arg := func(v any) string {
		args = append(args, v)
		return "$" + strconv.Itoa(len(args))
	}
	if f := p.Filter; f != nil {
		keys, err := store.StatePath(f.Path)
		if err != nil {
			return nil, err
		}
		if err := store.FilterValue(f.Value); err != nil {
			return nil, err
		}
		path := arg(keys) + "::text[]"
		at := "a.state #> " + path
		switch v := f.Value.(type) {
		case nil:
			where = append(where, "json_typeof("+at+") = 'null'")
		case bool:
			where = append(where, "json_typeof("+at+") = 'boolean'", "(a.state #>> "+path+") = "+arg(strconv.FormatBool(v)))
		case string:
			where = append(where, "json_typeof("+at+") = 'string'", "(a.state #>> "+path+") = "+arg(v))
		default:
			num := fmt.Sprint(v)
			if n, ok := v.(json.Number); ok {
				num = n.String()
			}
			// CASE keeps the cast away from values that are not numbers.
			where = append(where, "CASE WHEN json_typeof("+at+") = 'number' THEN (a.state #>> "+path+")::numeric = "+arg(num)+"::numeric ELSE false END")
		}
	}
	if p.Quiet > 0 {
		where = append(where, "a.unfinished = 0", "a.updated_at < now() - "+arg(store.Micros(p.Quiet))+"::bigint"+us,
			"NOT EXISTS (SELECT 1 FROM ductus_reminders r WHERE r.actor_pk = a.pk)")
	}
	if o := p.OrphanedAgainst; o != nil {
		if err := store.CheckOwnerRelation(o); err != nil {
			return nil, err
		}
		where = append(where, fmt.Sprintf(`NOT EXISTS (SELECT 1 FROM %s o WHERE o.%s::text = a.id)`,
			pgx.Identifier{o.Table}.Sanitize(), pgx.Identifier{o.Column}.Sanitize()))
	}
	limit := arg(limitOr(p.Limit, 100))
	rows, err := b.pool.Query(ctx, `SELECT `+sqlrow.ActorColumns+` FROM ductus_actors a WHERE `+strings.Join(where, " AND ")+
		` ORDER BY a.id LIMIT `+limit, args...)
	if err != nil {
		return nil, classify("list actors", err)
	}
	defer rows.Close()
	out, err := sqlrow.Collect(rows, scanActor)
	return out, classify("list actors", err)
}

// Prune implements store.Backend: each table loses at most Limit rows per
// call, oldest first, in one round trip. Completed messages are found by
// walking ductus_results by message id (ids grow with time), so completing
// a message writes no index on its completion time.
func (b *Backend) Prune(ctx context.Context, p *store.PruneParams) (store.PruneResult, error) {
	var res store.PruneResult
	limit := limitOr(p.Limit, 1000)
	keep := store.Micros(p.Keep)
	var n [4]int64
	var bt batch
	bt.execN("prune messages", &n[0], `WITH r AS (
			DELETE FROM ductus_results WHERE message_id IN (SELECT message_id FROM ductus_results
				WHERE completed_at < now() - $1::bigint`+us+` ORDER BY message_id LIMIT $2)
			RETURNING message_id)
		DELETE FROM ductus_messages WHERE id IN (SELECT message_id FROM r)`, keep, limit)
	bt.execN("prune effects", &n[1], `DELETE FROM ductus_effects WHERE id IN (SELECT id FROM ductus_effects
		WHERE finished_at IS NOT NULL AND finished_at < now() - $1::bigint`+us+` AND state = 'done' ORDER BY finished_at LIMIT $2)`, keep, limit)
	bt.execN("prune the outbox", &n[2], `DELETE FROM ductus_outbox WHERE id IN (SELECT id FROM ductus_outbox
		WHERE delivered_at IS NOT NULL AND delivered_at < now() - $1::bigint`+us+` ORDER BY delivered_at LIMIT $2)`, keep, limit)
	bt.execN("prune broadcasts", &n[3], `DELETE FROM ductus_broadcasts WHERE id IN (SELECT id FROM ductus_broadcasts
		WHERE created_at < now() - $1::bigint`+us+` ORDER BY created_at LIMIT $2)`, keep, limit)
	if err := bt.run(ctx, b.pool); err != nil {
		return res, err
	}
	res.Messages, res.Effects, res.Outbox, res.Broadcasts = int(n[0]), int(n[1]), int(n[2]), int(n[3])
	return res, nil
}

// TableCount implements store.Backend.
func (b *Backend) TableCount(ctx context.Context, table string) (int64, error) {
	if err := sqlrow.CheckTable(table); err != nil {
		return 0, err
	}
	var n int64
	if err := b.pool.QueryRow(ctx, `SELECT count(*) FROM `+table).Scan(&n); err != nil {
		return 0, classify("count "+table, err)
	}
	return n, nil
}
