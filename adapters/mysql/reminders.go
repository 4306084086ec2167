package mysql

import (
	"context"
	"database/sql"
	"fmt"

	"github.com/ductus/ductus/actor"
	"github.com/ductus/ductus/runtime/store"
	"github.com/ductus/ductus/runtime/store/sqltx"
)

// ReminderClaim implements store.Backend: due reminders of the given types
// are found by a read-only scan, locked by primary key with SKIP LOCKED,
// leased (due_at moves to the lease's expiry) and returned with the
// database's time, from which the scheduler computes the next occurrence.
func (b *Backend) ReminderClaim(ctx context.Context, p *store.ReminderClaimParams) ([]store.Reminder, error) {
	if p.Limit <= 0 || len(p.Types) == 0 {
		return nil, nil
	}
	var cands []int64
	scan := newBatch("claim reminders: find candidates")
	scan.query(scanInts(&cands), `SELECT r.id FROM ductus_reminders r JOIN ductus_actors a ON a.pk = r.actor_pk
		WHERE r.due_at <= NOW(6) AND a.type IN (`+sqltx.List(len(p.Types))+`) ORDER BY r.due_at LIMIT ?`,
		append(sqltx.Strings(p.Types), p.Limit)...)
	if err := b.read(ctx, scan); err != nil || len(cands) == 0 {
		return nil, err
	}
	var out []store.Reminder
	err := b.txn(ctx, nil, func(s *session) error {
		out = nil
		var locked []int64
		lock := newBatch("claim reminders: lock candidates")
		lock.query(scanInts(&locked), `SELECT id FROM ductus_reminders WHERE id IN (`+sqltx.List(len(cands))+`) AND due_at <= NOW(6)
			FOR UPDATE SKIP LOCKED`, sqltx.Int64s(cands)...)
		if err := s.run(ctx, lock); err != nil || len(locked) == 0 {
			return err
		}
		in := sqltx.List(len(locked))
		ids := sqltx.Int64s(locked)
		w := newBatch("claim reminders: lease")
		w.exec(`SET @ductus_now = NOW(6)`)
		w.exec(`UPDATE ductus_reminders SET lease_owner = ?, due_at = CAST(@ductus_now AS DATETIME(6)) + INTERVAL ? MICROSECOND WHERE id IN (`+in+`)`,
			append([]any{p.Owner, store.Micros(p.TTL)}, ids...)...)
		w.query(func(rows *sql.Rows) error {
			for rows.Next() {
				var r store.Reminder
				var args, sched string
				if err := rows.Scan(&r.ID, &r.ActorPK, &r.Ref.Type, &r.Ref.ID, &r.Name, &r.Message, &args, &sched, &r.NextAt, &r.Occurrence, &r.Now); err != nil {
					return err
				}
				r.Args, r.Schedule = []byte(args), []byte(sched)
				out = append(out, r)
			}
			return nil
		}, `SELECT r.id, r.actor_pk, a.type, a.id, r.name, r.message, r.args, r.schedule, r.next_at, r.occurrence, CAST(@ductus_now AS DATETIME(6))
			FROM ductus_reminders r JOIN ductus_actors a ON a.pk = r.actor_pk WHERE r.id IN (`+in+`) ORDER BY r.due_at, r.id`, ids...)
		return s.commit(ctx, w)
	})
	return out, err
}

// ReminderFire implements store.Backend. The source actors are locked
// first (the order every turn commit uses: actor, then its reminders),
// then the reminder rows; a reminder is advanced only while it is still
// this claim's and still at the expected occurrence, and the occurrence's
// idempotency key ("reminder:<id>:<n>") is the final guard against two
// schedulers enqueueing it twice. A reminder whose actor is gone no
// longer exists, so firing never recreates a destroyed actor.
func (b *Backend) ReminderFire(ctx context.Context, p *store.ReminderFireParams) error {
	if len(p.Fires) == 0 {
		return nil
	}
	return b.txn(ctx, nil, func(s *session) error {
		const op = "fire reminders"
		msgs := make([]store.NewMessage, len(p.Fires))
		for i, f := range p.Fires {
			m := f.Message
			m.MustExist = true
			m.IdempotencyKey = fmt.Sprintf("reminder:%d:%d", f.ID, f.Occurrence)
			if m.Args == nil {
				m.Args = []byte("null")
			}
			msgs[i] = m
		}
		groups := store.PlanEnqueue(msgs)
		rows := make([]*actorRow, len(groups))
		byRef := map[actor.Ref]*actorRow{}
		for i, g := range groups {
			rows[i] = groupRow(msgs, g)
			byRef[g.Ref] = rows[i]
		}
		if err := b.lockActors(ctx, s, op, rows); err != nil {
			return err
		}
		ids := make([]int64, len(p.Fires))
		for i, f := range p.Fires {
			ids[i] = f.ID
		}
		type rem struct {
			pk         int64
			owner      sql.NullString
			occurrence int64
		}
		cur := map[int64]rem{}
		a := newBatch(op + ": lock the reminders")
		a.query(func(rs *sql.Rows) error {
			for rs.Next() {
				var id int64
				var r rem
				if err := rs.Scan(&id, &r.pk, &r.owner, &r.occurrence); err != nil {
					return err
				}
				cur[id] = r
			}
			return nil
		}, `SELECT id, actor_pk, lease_owner, occurrence FROM ductus_reminders WHERE id IN (`+sqltx.List(len(ids))+`) ORDER BY id FOR UPDATE`,
			sqltx.Int64s(ids)...)
		if err := s.run(ctx, a); err != nil {
			return err
		}
		w := newBatch(op)
		wr := &writes{}
		ep := &store.MailboxEnqueueParams{MailboxCap: p.MailboxCap, SkipFull: true}
		for i, f := range p.Fires {
			r, ok := cur[f.ID]
			row := byRef[msgs[i].Ref]
			if !ok || !r.owner.Valid || r.owner.String != p.Owner || r.occurrence != f.Occurrence-1 || !row.found || row.pk != r.pk {
				continue // replaced, cancelled, destroyed, or fired by another scheduler
			}
			res := make([]store.EnqueueResult, 1)
			g := store.EnqueueGroup{Ref: msgs[i].Ref, Indexes: []int{0}}
			if err := planGroup(msgs[i:i+1], g, row, ep, res, wr); err != nil {
				return err
			}
			if res[0].Full {
				// The mailbox is full: keep the occurrence and try again soon.
				w.exec(`UPDATE ductus_reminders SET lease_owner = NULL, due_at = NOW(6) + INTERVAL 1 SECOND WHERE id = ?`, f.ID)
				continue
			}
			if f.Next.IsZero() {
				w.exec(`DELETE FROM ductus_reminders WHERE id = ?`, f.ID)
			} else {
				w.exec(`UPDATE ductus_reminders SET occurrence = ?, next_at = ?, due_at = ?, lease_owner = NULL WHERE id = ?`,
					f.Occurrence, f.Next.UTC(), f.DueAt().UTC(), f.ID)
			}
		}
		wr.flush(w)
		return s.commit(ctx, w)
	})
}

// ReminderList implements store.Backend.
func (b *Backend) ReminderList(ctx context.Context, ref actor.Ref) ([]store.ReminderInfo, error) {
	b.count(1)
	rows, err := b.db.QueryContext(ctx, `SELECT r.id, r.name, r.message, r.args, r.schedule, r.next_at, r.due_at, r.occurrence
		FROM ductus_reminders r JOIN ductus_actors a ON a.pk = r.actor_pk WHERE a.type = ? AND a.id = ? ORDER BY r.name`, ref.Type, ref.ID)
	if err != nil {
		return nil, classify("list reminders", err)
	}
	defer rows.Close()
	var out []store.ReminderInfo
	for rows.Next() {
		r := store.ReminderInfo{Ref: ref}
		var args, sched string
		if err := rows.Scan(&r.ID, &r.Name, &r.Message, &args, &sched, &r.NextAt, &r.DueAt, &r.Occurrence); err != nil {
			return nil, classify("list reminders", err)
		}
		r.Args, r.Schedule = []byte(args), []byte(sched)
		out = append(out, r)
	}
	return out, classify("list reminders", rows.Err())
}
