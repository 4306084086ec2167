package postgres

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"

	"github.com/ductus/ductus/actor"
	"github.com/ductus/ductus/adapters/internal/sqlrow"
	"github.com/ductus/ductus/runtime/store"
)

const sqlNotify = `SELECT pg_notify($1, $2)`

// MailboxEnqueue implements store.Backend. Without a caller transaction a
// batch costs one round trip (the statement, and the NOTIFY when Signal is
// set, pipelined as one implicit transaction). Inside a caller transaction
// a failed enqueue (a full mailbox, say) aborts that transaction: roll it
// back.
func (b *Backend) MailboxEnqueue(ctx context.Context, outer store.Tx, p *store.MailboxEnqueueParams) ([]store.EnqueueResult, error) {
	if err := store.ValidateEnqueue(p); err != nil {
		return nil, err
	}
	if len(p.Messages) == 0 {
		return nil, nil
	}
	for i, m := range p.Messages {
		if !storable(m.Ref) {
			return nil, fmt.Errorf("%w: message %d: actor type and ID must be UTF-8 without NUL bytes", actor.ErrInvalidID, i)
		}
	}
	var s sender = b.pool
	if outer != nil {
		tx, err := outerTx(outer)
		if err != nil {
			return nil, err
		}
		s = tx
	}
	plan := store.PlanEnqueue(p.Messages)
	if fast, keys := fastFits(p.Messages, plan); fast && (outer == nil || !keys) {
		var bt batch
		f := b.queueFast(&bt, p, plan, true)
		err := bt.run(ctx, s)
		if f.missed(err) {
			// A destroyed actor or a full mailbox: the full form creates
			// the actor or reports the mailbox (nothing was written).
			b.pks.Drop(plan[0].Ref)
			bt = batch{}
			f = b.queueFast(&bt, p, plan, false)
			err = bt.run(ctx, s)
		}
		res, err := f.done(err)
		if err == nil && len(plan) == 1 && len(res) > 0 && res[0].ActorPK != 0 && outer == nil {
			b.pks.Put(plan[0].Ref, res[0].ActorPK)
		}
		if err == nil || sqlState(err) != "23505" || outer != nil {
			return res, err
		}
		// A concurrent enqueue used one of the keys: redo with locks first.
		b.keyRetries.Add(1)
	}
	if outer != nil {
		return b.enqueueNow(ctx, s, p, plan)
	}
	var res []store.EnqueueResult
	err := b.txn(ctx, func(t *txn) error {
		var err error
		res, err = b.enqueueNow(ctx, t, p, plan)
		return err
	})
	return res, err
}

const (
	// sqlLockActors creates missing actors and locks existing ones in the
	// given order without writing them (the refused update still locks);
	// it returns only the rows it created.
	sqlLockActors = `INSERT INTO ductus_actors AS a (type, id)
    SELECT u.type, u.id FROM unnest($1::text[], $2::text[]) WITH ORDINALITY AS u(type, id, ord) ORDER BY u.ord
    ON CONFLICT (type, id) DO UPDATE SET next_seq = a.next_seq WHERE false
    RETURNING a.pk`
	// sqlReadActors and sqlReadKeys find each row by its key, one lookup
	// a row (lateral, see Open).
	sqlReadActors = `SELECT u.ord::int, a.pk, a.next_seq, a.unfinished
    FROM unnest($1::text[], $2::text[]) WITH ORDINALITY AS u(type, id, ord)
    CROSS JOIN LATERAL (SELECT pk, next_seq, unfinished FROM ductus_actors WHERE type = u.type AND id = u.id OFFSET 0) a`
	sqlReadKeys = `SELECT k.type, k.id, x.idem_key, x.id
    FROM unnest($1::text[], $2::text[], $3::text[]) AS k(type, id, key)
    CROSS JOIN LATERAL (SELECT pk FROM ductus_actors WHERE type = k.type AND id = k.id OFFSET 0) a
    CROSS JOIN LATERAL (SELECT idem_key, id FROM ductus_messages
        WHERE actor_pk = a.pk AND idem_key = k.key AND idem_key IS NOT NULL OFFSET 0) x`
	sqlDeleteActors = `DELETE FROM ductus_actors WHERE pk = ANY($1::bigint[])`
	sqlInsertRows   = `WITH ins AS (
    INSERT INTO ductus_messages (actor_pk, seq, name, args, idem_key, ask, enqueued_at, available_at)
    SELECT u.pk, u.seq, u.name, u.args, NULLIF(u.key, ''), u.ask, now(), COALESCE(u.avail, now() + u.delay` + us + `)
    FROM unnest($1::bigint[], $2::bigint[], $3::text[], $4::json[], $5::text[], $6::bool[], $7::timestamptz[], $8::bigint[])
        WITH ORDINALITY AS u(pk, seq, name, args, key, ask, avail, delay, ord)
    ORDER BY u.ord
    RETURNING id, actor_pk, seq, available_at
), rdy AS (
    INSERT INTO ductus_ready (actor_pk, seq, message_id, due_at) SELECT actor_pk, seq, id, available_at FROM ins
)
SELECT id, actor_pk, seq FROM ins`
	// "a.pk = ANY ($1)" repeats the join's condition so that the actors
	// are found through their primary key whatever the plan's estimates
	// (see Open).
	sqlAdvanceActors = `UPDATE ductus_actors a SET next_seq = a.next_seq + u.n, unfinished = a.unfinished + u.n,
    head_due = COALESCE(a.head_due, COALESCE(u.avail, now() + u.delay` + us + `)), updated_at = now()
    FROM unnest($1::bigint[], $2::int[], $3::timestamptz[], $4::bigint[]) AS u(pk, n, avail, delay) WHERE a.pk = u.pk AND a.pk = ANY ($1::bigint[])`
)

// enqueueNow runs the general enqueue in s: two round trips.
func (b *Backend) enqueueNow(ctx context.Context, s sender, p *store.MailboxEnqueueParams, plan []store.EnqueueGroup) ([]store.EnqueueResult, error) {
	e, err := b.newEnqueuer(ctx, s, p.Messages)
	if err != nil {
		return nil, err
	}
	res, err := e.decide(p, plan)
	if err != nil {
		return nil, err
	}
	var bt batch
	e.queue(&bt, p.Signal)
	if err := bt.run(ctx, s); err != nil {
		return nil, err
	}
	e.finish()
	return res, nil
}

// enqueueWith queues an enqueue whose results the caller does not need
// (effect outcomes) into bt: the one-statement form when it applies,
// else the general one (whose read round trip runs now).
func (b *Backend) enqueueWith(ctx context.Context, s sender, bt *batch, p *store.MailboxEnqueueParams) error {
	if err := store.ValidateEnqueue(p); err != nil {
		return err
	}
	plan := store.PlanEnqueue(p.Messages)
	if fast, keys := fastFits(p.Messages, plan); fast && !keys && p.SkipFull {
		b.queueFast(bt, p, plan, false)
		return nil
	}
	e, err := b.newEnqueuer(ctx, s, p.Messages)
	if err != nil {
		return err
	}
	if _, err := e.decide(p, plan); err != nil {
		return err
	}
	e.queue(bt, p.Signal)
	return nil
}

// enqueuer is the general enqueue: one round trip locks (and creates) every
// actor the messages name, in (type, id) order, and reads their counters
// and used keys; decide then settles one enqueue batch at a time in Go,
// exactly as the SQLite adapter does, against that state (so several
// batches, such as the rows of an outbox delivery, behave as if enqueued
// one after another); queue adds the writes to a batch the caller runs.
type enqueuer struct {
	b      *Backend
	actors map[actor.Ref]*enqActor
	ins    struct {
		pk, seq     []int64
		names, keys []string
		args        [][]byte
		ask         []bool
		avail       []pgtype.Timestamptz
		delay       []int64
		res         []*store.EnqueueResult
	}
	fills []func() // after the writes: results that copy another's
}

type enqActor struct {
	pk, nextSeq, unfinished int64
	created, exists, used   bool
	keys                    map[string]*store.EnqueueResult
	n                       int32
	first                   store.NewMessage // the first fresh message (head_due)
}

func (b *Backend) newEnqueuer(ctx context.Context, s sender, msgs []store.NewMessage) (*enqueuer, error) {
	e := &enqueuer{b: b, actors: map[actor.Ref]*enqActor{}}
	plan := store.PlanEnqueue(msgs)
	types := make([]string, len(plan))
	ids := make([]string, len(plan))
	var kt, ki, kk []string
	for gi, g := range plan {
		types[gi], ids[gi] = g.Ref.Type, g.Ref.ID
		for _, i := range g.Indexes {
			if k := msgs[i].IdempotencyKey; k != "" {
				kt, ki, kk = append(kt, g.Ref.Type), append(ki, g.Ref.ID), append(kk, k)
			}
		}
	}
	created := map[int64]bool{}
	var rd batch
	rd.query("enqueue: create or lock the actors", func(rows pgx.Rows) error {
		var pk int64
		if err := rows.Scan(&pk); err != nil {
			return err
		}
		created[pk] = true
		return nil
	}, sqlLockActors, types, ids)
	rd.query("enqueue: read the actors", func(rows pgx.Rows) error {
		var ord int32
		a := &enqActor{keys: map[string]*store.EnqueueResult{}}
		if err := rows.Scan(&ord, &a.pk, &a.nextSeq, &a.unfinished); err != nil {
			return err
		}
		e.actors[plan[ord-1].Ref] = a
		return nil
	}, sqlReadActors, types, ids)
	if len(kk) > 0 {
		rd.query("enqueue: check idempotency keys", func(rows pgx.Rows) error {
			var r actor.Ref
			var k string
			var id int64
			if err := rows.Scan(&r.Type, &r.ID, &k, &id); err != nil {
				return err
			}
			if a := e.actors[r]; a != nil {
				a.keys[k] = &store.EnqueueResult{MessageID: id, ActorPK: a.pk, Duplicate: true}
			}
			return nil
		}, sqlReadKeys, kt, ki, kk)
	}
	if err := rd.run(ctx, s); err != nil {
		return nil, err
	}
	for _, g := range plan {
		a := e.actors[g.Ref]
		if a == nil {
			return nil, fmt.Errorf("postgres: enqueue: actor %s vanished under its lock", g.Ref)
		}
		a.created = created[a.pk]
		a.exists = !a.created
	}
	return e, nil
}

// decide settles one enqueue batch (its messages must be among those the
// enqueuer was made for). Message IDs are filled in when the writes run.
func (e *enqueuer) decide(p *store.MailboxEnqueueParams, plan []store.EnqueueGroup) ([]store.EnqueueResult, error) {
	msgs := p.Messages
	results := make([]store.EnqueueResult, len(msgs))
	for _, g := range plan {
		a := e.actors[g.Ref]
		if a == nil {
			return nil, fmt.Errorf("postgres: enqueue: actor %s was not read", g.Ref)
		}
		if !g.Create && !a.exists {
			for _, i := range g.Indexes {
				results[i].Dropped = true
			}
			continue
		}
		existing := map[string]int64{}
		var later []int // duplicates of keys this enqueuer has yet to write
		for _, i := range g.Indexes {
			if k := msgs[i].IdempotencyKey; k != "" {
				if r, ok := a.keys[k]; ok {
					existing[k] = r.MessageID
					if r.MessageID == 0 {
						later = append(later, i)
					}
				}
			}
		}
		fresh, first := store.SplitDuplicates(msgs, g, existing, results)
		system := 0
		for _, i := range fresh {
			if msgs[i].System {
				system++
			}
		}
		if err := store.CheckCap(g.Ref, a.unfinished, len(fresh), system, p); err != nil {
			if !p.SkipFull {
				return nil, err
			}
			for _, i := range g.Indexes {
				results[i] = store.EnqueueResult{Full: true}
			}
			continue
		}
		a.exists, a.used = true, true
		for j, i := range fresh {
			m := msgs[i]
			if a.n == 0 {
				a.first = m
			}
			a.n++
			r := &results[i]
			e.ins.pk = append(e.ins.pk, a.pk)
			e.ins.seq = append(e.ins.seq, a.nextSeq+int64(j))
			e.ins.names = append(e.ins.names, m.Name)
			e.ins.keys = append(e.ins.keys, m.IdempotencyKey)
			e.ins.args = append(e.ins.args, m.Args)
			e.ins.ask = append(e.ins.ask, m.Ask)
			e.ins.avail = append(e.ins.avail, timestamptz(m.AvailableAt))
			e.ins.delay = append(e.ins.delay, store.Micros(m.Delay))
			e.ins.res = append(e.ins.res, r)
			if k := m.IdempotencyKey; k != "" {
				a.keys[k] = r
			}
		}
		a.nextSeq += int64(len(fresh))
		a.unfinished += int64(len(fresh))
		for _, i := range later {
			src, dst := a.keys[msgs[i].IdempotencyKey], &results[i]
			e.fills = append(e.fills, func() {
				*dst = store.EnqueueResult{MessageID: src.MessageID, ActorPK: src.ActorPK, Seq: src.Seq, Duplicate: true}
			})
		}
		if first != nil {
			g := g
			e.fills = append(e.fills, func() { store.FillBatchDuplicates(msgs, g, first, results) })
		}
	}
	return results, nil
}

// queue adds the writes decided so far to bt.
func (e *enqueuer) queue(bt *batch, signal bool) {
	var drop []int64
	var adv struct {
		pk    []int64
		n     []int32
		avail []pgtype.Timestamptz
		delay []int64
	}
	for _, a := range e.actors {
		if a.created && !a.used {
			drop = append(drop, a.pk)
		}
		if a.n > 0 {
			adv.pk = append(adv.pk, a.pk)
			adv.n = append(adv.n, a.n)
			adv.avail = append(adv.avail, timestamptz(a.first.AvailableAt))
			adv.delay = append(adv.delay, store.Micros(a.first.Delay))
		}
	}
	if len(drop) > 0 {
		bt.exec("enqueue: forget actors that must exist", sqlDeleteActors, drop)
	}
	if len(e.ins.pk) == 0 {
		return
	}
	type key struct{ pk, seq int64 }
	at := make(map[key]*store.EnqueueResult, len(e.ins.pk))
	for j := range e.ins.pk {
		at[key{e.ins.pk[j], e.ins.seq[j]}] = e.ins.res[j]
	}
	bt.query("enqueue: insert messages", func(rows pgx.Rows) error {
		var r store.EnqueueResult
		if err := rows.Scan(&r.MessageID, &r.ActorPK, &r.Seq); err != nil {
			return err
		}
		if dst := at[key{r.ActorPK, r.Seq}]; dst != nil {
			*dst = r
		}
		return nil
	}, sqlInsertRows, e.ins.pk, e.ins.seq, e.ins.names, e.ins.args, e.ins.keys, e.ins.ask, e.ins.avail, e.ins.delay)
	bt.exec("enqueue: advance the actors", sqlAdvanceActors, adv.pk, adv.n, adv.avail, adv.delay)
	if signal {
		bt.exec("enqueue: notify", sqlNotify, e.b.channel, "w")
	}
}

// finish fills in the results that copy another's, once the writes ran.
func (e *enqueuer) finish() {
	for _, f := range e.fills {
		f()
	}
}

func timestamptz(t time.Time) pgtype.Timestamptz {
	if t.IsZero() {
		return pgtype.Timestamptz{}
	}
	return pgtype.Timestamptz{Time: t, Valid: true}
}

// MessageStatus implements store.Backend.
func (b *Backend) MessageStatus(ctx context.Context, ids []int64) ([]store.MessageStatus, error) {
	found := make(map[int64]store.MessageStatus, len(ids))
	if len(ids) > 0 {
		rows, err := b.pool.Query(ctx, `SELECT m.id, r.message_id IS NOT NULL, m.dead_at IS NOT NULL, r.result, m.error
			FROM ductus_messages m LEFT JOIN ductus_results r ON r.message_id = m.id WHERE m.id = ANY($1::bigint[])`, ids)
		if err != nil {
			return nil, classify("read message status", err)
		}
		for rows.Next() {
			var id int64
			var done, dead bool
			var result []byte
			var msg pgtype.Text
			if err := rows.Scan(&id, &done, &dead, &result, &msg); err != nil {
				rows.Close()
				return nil, classify("read message status", err)
			}
			found[id] = sqlrow.MessageStatus(id, done, dead, result, msg.String)
		}
		if err := rows.Err(); err != nil {
			return nil, classify("read message status", err)
		}
	}
	return sqlrow.InOrder(ids, found), nil
}

// MessageGet implements store.Backend.
func (b *Backend) MessageGet(ctx context.Context, id int64) (*store.MessageInfo, error) {
	var m store.MessageInfo
	var idem, errText pgtype.Text
	var done, dead pgtype.Timestamptz
	err := b.pool.QueryRow(ctx, `SELECT m.id, a.type, a.id, m.seq, m.name, m.args, m.idem_key, COALESCE(r.attempt, m.attempts), r.result, m.error,
		m.enqueued_at, m.available_at, r.completed_at, m.dead_at
		FROM ductus_messages m JOIN ductus_actors a ON a.pk = m.actor_pk LEFT JOIN ductus_results r ON r.message_id = m.id
		WHERE m.id = $1`, id).
		Scan(&m.ID, &m.Ref.Type, &m.Ref.ID, &m.Seq, &m.Name, &m.Args, &idem, &m.Attempts, &m.Result, &errText,
			&m.EnqueuedAt, &m.AvailableAt, &done, &dead)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, fmt.Errorf("%w: message %d", actor.ErrNotFound, id)
	}
	if err != nil {
		return nil, classify("read a message", err)
	}
	m.IdempotencyKey, m.Error = idem.String, errText.String
	switch {
	case done.Valid:
		m.State, m.CompletedAt = store.MessageCompleted, done.Time
	case dead.Valid:
		m.State, m.CompletedAt = store.MessageDead, dead.Time
	default:
		m.State = store.MessagePending
	}
	return &m, nil
}
