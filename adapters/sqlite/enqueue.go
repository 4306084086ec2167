package sqlite

import (
	"context"
	"database/sql"
	"fmt"
	"strings"

	"github.com/ductus/ductus/actor"
	"github.com/ductus/ductus/adapters/internal/sqlrow"
	"github.com/ductus/ductus/runtime/store"
	"github.com/ductus/ductus/runtime/store/sqltx"
)

const (
	// sqlUpsertActor creates the actor if missing and returns its row; the
	// no-op update makes RETURNING report an existing row too.
	sqlUpsertActor = `INSERT INTO ductus_actors (type, id, created_at, updated_at) VALUES (?, ?, ` + now + `, ` + now + `)
		ON CONFLICT (type, id) DO UPDATE SET updated_at = excluded.updated_at
		RETURNING pk, next_seq, unfinished`
	sqlFindActor   = `SELECT pk, next_seq, unfinished FROM ductus_actors WHERE type = ? AND id = ?`
	sqlInsertReady = `INSERT INTO ductus_ready (message_id, actor_pk, seq, due_at)
		SELECT id, actor_pk, seq, available_at FROM ductus_messages WHERE actor_pk = ? AND seq >= ?`
	// sqlAdvanceActor: head_due changes only when the actor had no ready
	// work (then the first new message is the head).
	sqlAdvanceActor = `UPDATE ductus_actors SET next_seq = next_seq + ?, unfinished = unfinished + ?,
		head_due = COALESCE(head_due, (SELECT due_at FROM ductus_ready WHERE actor_pk = ? ORDER BY seq LIMIT 1)),
		updated_at = ` + now + ` WHERE pk = ?`
	sqlInsertMessage = `INSERT INTO ductus_messages (actor_pk, seq, name, args, idem_key, ask, enqueued_at, available_at)
		VALUES (?, ?, ?, ?, ?, ?, ` + now + `, COALESCE(?, ` + now + ` + ?))`
	insertMessageRow = `(?, ?, ?, ?, ?, ?, ` + now + `, COALESCE(?, ` + now + ` + ?))`
)

// MailboxEnqueue implements store.Backend.
func (b *Backend) MailboxEnqueue(ctx context.Context, outer store.Tx, p *store.MailboxEnqueueParams) ([]store.EnqueueResult, error) {
	if err := store.ValidateEnqueue(p); err != nil {
		return nil, err
	}
	var results []store.EnqueueResult
	err := b.write(ctx, outer, func(tx *wtx) error {
		var err error
		results, err = b.enqueue(ctx, tx, p)
		return err
	})
	return results, err
}

// enqueue is the enqueue transaction's body, shared with the runtime's own
// deliveries (effect outcomes, reminder occurrences, outbox sends).
func (b *Backend) enqueue(ctx context.Context, tx *wtx, p *store.MailboxEnqueueParams) ([]store.EnqueueResult, error) {
	msgs := p.Messages
	results := make([]store.EnqueueResult, len(msgs))
	for _, g := range store.PlanEnqueue(msgs) {
		var pk, nextSeq, unfinished int64
		var err error
		if g.Create {
			err = b.query1(ctx, tx, "enqueue: create or lock the actor", sqlUpsertActor, []any{g.Ref.Type, g.Ref.ID}, &pk, &nextSeq, &unfinished)
		} else {
			err = tx.QueryRowContext(ctx, sqlFindActor, g.Ref.Type, g.Ref.ID).Scan(&pk, &nextSeq, &unfinished)
			if err == sql.ErrNoRows {
				for _, i := range g.Indexes {
					results[i].Dropped = true
				}
				continue
			}
			err = classify("enqueue: find the actor", err)
		}
		if err != nil {
			return nil, err
		}
		existing, err := b.existingKeys(ctx, tx, pk, msgs, g)
		if err != nil {
			return nil, err
		}
		fresh, firstOfKey := store.SplitDuplicates(msgs, g, existing, results)
		system := 0
		for _, i := range fresh {
			if msgs[i].System {
				system++
			}
		}
		if err := store.CheckCap(g.Ref, unfinished, len(fresh), system, p); err != nil {
			if !p.SkipFull {
				return nil, err
			}
			for _, i := range g.Indexes {
				results[i] = store.EnqueueResult{Full: true}
			}
			continue
		}
		if len(fresh) > 0 {
			if err := b.insertMessages(ctx, tx, pk, nextSeq, msgs, fresh, results); err != nil {
				return nil, err
			}
			if _, err := b.exec(ctx, tx, "enqueue: insert ready rows", sqlInsertReady, pk, nextSeq); err != nil {
				return nil, err
			}
			n := len(fresh)
			if _, err := b.exec(ctx, tx, "enqueue: advance the actor", sqlAdvanceActor, n, n, pk, pk); err != nil {
				return nil, err
			}
		}
		store.FillBatchDuplicates(msgs, g, firstOfKey, results)
	}
	return results, nil
}

func (b *Backend) query1(ctx context.Context, tx *wtx, op, query string, args []any, dest ...any) error {
	rows, err := b.query(ctx, tx, op, query, args...)
	if err != nil {
		return err
	}
	defer rows.Close()
	if !rows.Next() {
		if err := rows.Err(); err != nil {
			return classify(op, err)
		}
		return classify(op, sql.ErrNoRows)
	}
	if err := rows.Scan(dest...); err != nil {
		return classify(op, err)
	}
	return classify(op, rows.Close())
}

func (b *Backend) existingKeys(ctx context.Context, tx *wtx, pk int64, msgs []store.NewMessage, g store.EnqueueGroup) (map[string]int64, error) {
	var keys []any
	for _, i := range g.Indexes {
		if k := msgs[i].IdempotencyKey; k != "" {
			keys = append(keys, k)
		}
	}
	if len(keys) == 0 {
		return nil, nil
	}
	out := map[string]int64{}
	for _, c := range sqltx.Chunks(len(keys), 500) {
		rows, err := tx.QueryContext(ctx, "SELECT idem_key, id FROM ductus_messages WHERE actor_pk = ? AND idem_key IN ("+sqltx.List(c[1]-c[0])+")",
			append([]any{pk}, keys[c[0]:c[1]]...)...)
		if err != nil {
			return nil, classify("enqueue: check idempotency keys", err)
		}
		for rows.Next() {
			var k string
			var id int64
			if err := rows.Scan(&k, &id); err != nil {
				rows.Close()
				return nil, classify("enqueue: check idempotency keys", err)
			}
			out[k] = id
		}
		if err := rows.Close(); err != nil {
			return nil, classify("enqueue: check idempotency keys", err)
		}
	}
	return out, nil
}

func messageArgs(pk, seq int64, m store.NewMessage) []any {
	return []any{pk, seq, m.Name, string(m.Args), sqltx.NullString(m.IdempotencyKey), m.Ask, nullTime(m.AvailableAt), store.Micros(m.Delay)}
}

// insertMessages inserts the fresh messages with consecutive sequences from
// first and fills their results.
func (b *Backend) insertMessages(ctx context.Context, tx *wtx, pk, first int64, msgs []store.NewMessage, fresh []int, results []store.EnqueueResult) error {
	const op = "enqueue: insert messages"
	if len(fresh) == 1 {
		i := fresh[0]
		res, err := tx.ExecContext(ctx, sqlInsertMessage, messageArgs(pk, first, msgs[i])...)
		if err != nil {
			return classify(op, err)
		}
		id, err := res.LastInsertId()
		if err != nil {
			return classify(op, err)
		}
		results[i] = store.EnqueueResult{MessageID: id, ActorPK: pk, Seq: first}
		return nil
	}
	bySeq := map[int64]int{}
	for _, c := range sqltx.Chunks(len(fresh), 400) {
		var q strings.Builder
		q.WriteString("INSERT INTO ductus_messages (actor_pk, seq, name, args, idem_key, ask, enqueued_at, available_at) VALUES ")
		args := make([]any, 0, 8*(c[1]-c[0]))
		for j := c[0]; j < c[1]; j++ {
			if j > c[0] {
				q.WriteByte(',')
			}
			q.WriteString(insertMessageRow)
			seq := first + int64(j)
			bySeq[seq] = fresh[j]
			args = append(args, messageArgs(pk, seq, msgs[fresh[j]])...)
		}
		q.WriteString(" RETURNING id, seq")
		rows, err := tx.QueryContext(ctx, q.String(), args...)
		if err != nil {
			return classify(op, err)
		}
		for rows.Next() {
			var id, seq int64
			if err := rows.Scan(&id, &seq); err != nil {
				rows.Close()
				return classify(op, err)
			}
			results[bySeq[seq]] = store.EnqueueResult{MessageID: id, ActorPK: pk, Seq: seq}
		}
		if err := rows.Close(); err != nil {
			return classify(op, err)
		}
	}
	return nil
}

// MessageStatus implements store.Backend.
func (b *Backend) MessageStatus(ctx context.Context, ids []int64) ([]store.MessageStatus, error) {
	found := map[int64]store.MessageStatus{}
	for _, c := range sqltx.Chunks(len(ids), 500) {
		rows, err := b.r.QueryContext(ctx, `SELECT id, completed_at IS NOT NULL, dead_at IS NOT NULL, result, error
			FROM ductus_messages WHERE id IN (`+sqltx.List(c[1]-c[0])+`)`, sqltx.Int64s(ids[c[0]:c[1]])...)
		if err != nil {
			return nil, classify("read message status", err)
		}
		for rows.Next() {
			var id int64
			var done, dead bool
			var result, msg sql.NullString
			if err := rows.Scan(&id, &done, &dead, &result, &msg); err != nil {
				rows.Close()
				return nil, classify("read message status", err)
			}
			found[id] = sqlrow.MessageStatus(id, done, dead, []byte(result.String), msg.String)
		}
		if err := rows.Close(); err != nil {
			return nil, classify("read message status", err)
		}
	}
	return sqlrow.InOrder(ids, found), nil
}

// MessageGet implements store.Backend.
func (b *Backend) MessageGet(ctx context.Context, id int64) (*store.MessageInfo, error) {
	var m store.MessageInfo
	var idem, result, errText sql.NullString
	var enq, avail int64
	var done, dead sql.NullInt64
	err := b.r.QueryRowContext(ctx, `SELECT m.id, a.type, a.id, m.seq, m.name, m.args, m.idem_key, m.attempts, m.result, m.error,
		m.enqueued_at, m.available_at, m.completed_at, m.dead_at
		FROM ductus_messages m JOIN ductus_actors a ON a.pk = m.actor_pk WHERE m.id = ?`, id).
		Scan(&m.ID, &m.Ref.Type, &m.Ref.ID, &m.Seq, &m.Name, &m.Args, &idem, &m.Attempts, &result, &errText, &enq, &avail, &done, &dead)
	if err == sql.ErrNoRows {
		return nil, fmt.Errorf("%w: message %d", actor.ErrNotFound, id)
	}
	if err != nil {
		return nil, classify("read a message", err)
	}
	m.IdempotencyKey, m.Error = idem.String, errText.String
	if result.Valid {
		m.Result = []byte(result.String)
	}
	m.EnqueuedAt, m.AvailableAt = micros(sql.NullInt64{Int64: enq, Valid: true}), micros(sql.NullInt64{Int64: avail, Valid: true})
	switch {
	case done.Valid:
		m.State, m.CompletedAt = store.MessageCompleted, micros(done)
	case dead.Valid:
		m.State, m.CompletedAt = store.MessageDead, micros(dead)
	default:
		m.State = store.MessagePending
	}
	return &m, nil
}
