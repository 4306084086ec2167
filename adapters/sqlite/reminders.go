package sqlite

import (
	"context"
	"database/sql"
	"fmt"

	"github.com/ductus/ductus/actor"
	"github.com/ductus/ductus/runtime/store"
)

// ReminderClaim implements store.Backend: due reminders of the given types
// are leased (due_at moves to the lease's expiry) and returned with the
// database's time, from which the scheduler computes the next occurrence.
func (b *Backend) ReminderClaim(ctx context.Context, p *store.ReminderClaimParams) ([]store.Reminder, error) {
	if p.Limit <= 0 || len(p.Types) == 0 {
		return nil, nil
	}
	var out []store.Reminder
	err := b.write(ctx, nil, func(tx *wtx) error {
		const op = "claim reminders"
		var nowUS int64
		if err := tx.QueryRowContext(ctx, `SELECT `+now).Scan(&nowUS); err != nil {
			return classify(op, err)
		}
		rows, err := tx.QueryContext(ctx, `UPDATE ductus_reminders SET lease_owner = ?, due_at = ? + ?
			WHERE id IN (SELECT r.id FROM ductus_reminders r JOIN ductus_actors a ON a.pk = r.actor_pk
				WHERE r.due_at <= ? AND a.type IN (SELECT value FROM json_each(?)) ORDER BY r.due_at LIMIT ?)
			RETURNING id, actor_pk, name, message, args, schedule, next_at, occurrence`,
			p.Owner, nowUS, store.Micros(p.TTL), nowUS, jsonList(p.Types), p.Limit)
		if err != nil {
			return classify(op, err)
		}
		defer rows.Close()
		for rows.Next() {
			var r store.Reminder
			var args, sched string
			var next int64
			if err := rows.Scan(&r.ID, &r.ActorPK, &r.Name, &r.Message, &args, &sched, &next, &r.Occurrence); err != nil {
				return classify(op, err)
			}
			r.Args, r.Schedule = []byte(args), []byte(sched)
			r.NextAt = micros(sql.NullInt64{Int64: next, Valid: true})
			r.Now = micros(sql.NullInt64{Int64: nowUS, Valid: true})
			out = append(out, r)
		}
		if err := rows.Close(); err != nil {
			return classify(op, err)
		}
		for i := range out {
			if err := tx.QueryRowContext(ctx, `SELECT type, id FROM ductus_actors WHERE pk = ?`, out[i].ActorPK).
				Scan(&out[i].Ref.Type, &out[i].Ref.ID); err != nil {
				return classify(op, err)
			}
		}
		return nil
	})
	return out, err
}

// ReminderFire implements store.Backend. The reminder row is advanced only
// while it is still this claim's and still at the expected occurrence;
// the occurrence's idempotency key ("reminder:<id>:<n>") is the final guard
// against two schedulers enqueueing it twice. Reminders cascade with their
// actor, so a reminder that still exists has a live actor: firing never
// recreates a destroyed one.
func (b *Backend) ReminderFire(ctx context.Context, p *store.ReminderFireParams) error {
	if len(p.Fires) == 0 {
		return nil
	}
	return b.write(ctx, nil, func(tx *wtx) error {
		const op = "fire reminders"
		for _, f := range p.Fires {
			var pk int64
			err := tx.QueryRowContext(ctx, `SELECT actor_pk FROM ductus_reminders WHERE id = ? AND lease_owner = ? AND occurrence = ?`,
				f.ID, p.Owner, f.Occurrence-1).Scan(&pk)
			if err == sql.ErrNoRows {
				continue // replaced, cancelled, destroyed, or fired by another scheduler
			}
			if err != nil {
				return classify(op, err)
			}
			m := f.Message
			m.MustExist = true
			m.IdempotencyKey = fmt.Sprintf("reminder:%d:%d", f.ID, f.Occurrence)
			res, err := b.enqueue(ctx, tx, &store.MailboxEnqueueParams{Messages: []store.NewMessage{m}, MailboxCap: p.MailboxCap, SkipFull: true})
			if err != nil {
				return err
			}
			if res[0].Full {
				// The mailbox is full: keep the occurrence and try again soon.
				if _, err := tx.ExecContext(ctx, `UPDATE ductus_reminders SET lease_owner = NULL, due_at = `+now+` + 1000000 WHERE id = ?`, f.ID); err != nil {
					return classify(op, err)
				}
				continue
			}
			if f.Next.IsZero() {
				_, err = tx.ExecContext(ctx, `DELETE FROM ductus_reminders WHERE id = ?`, f.ID)
			} else {
				_, err = tx.ExecContext(ctx, `UPDATE ductus_reminders SET occurrence = ?, next_at = ?, due_at = ?, lease_owner = NULL WHERE id = ?`,
					f.Occurrence, f.Next.UnixMicro(), f.DueAt().UnixMicro(), f.ID)
			}
			if err != nil {
				return classify(op, err)
			}
		}
		return nil
	})
}

// ReminderList implements store.Backend.
func (b *Backend) ReminderList(ctx context.Context, ref actor.Ref) ([]store.ReminderInfo, error) {
	rows, err := b.r.QueryContext(ctx, `SELECT r.id, r.name, r.message, r.args, r.schedule, r.next_at, r.due_at, r.occurrence
		FROM ductus_reminders r JOIN ductus_actors a ON a.pk = r.actor_pk WHERE a.type = ? AND a.id = ? ORDER BY r.name`, ref.Type, ref.ID)
	if err != nil {
		return nil, classify("list reminders", err)
	}
	defer rows.Close()
	var out []store.ReminderInfo
	for rows.Next() {
		r := store.ReminderInfo{Ref: ref}
		var args, sched string
		var next, due int64
		if err := rows.Scan(&r.ID, &r.Name, &r.Message, &args, &sched, &next, &due, &r.Occurrence); err != nil {
			return nil, classify("list reminders", err)
		}
		r.Args, r.Schedule = []byte(args), []byte(sched)
		r.NextAt = micros(sql.NullInt64{Int64: next, Valid: true})
		r.DueAt = micros(sql.NullInt64{Int64: due, Valid: true})
		out = append(out, r)
	}
	return out, classify("list reminders", rows.Err())
}
