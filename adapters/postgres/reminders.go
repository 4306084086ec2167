package postgres

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/ductus/ductus/actor"
	"github.com/ductus/ductus/runtime/store"
)

const (
	// sqlClaimReminders reads the actors' names where it finds the due
	// reminders (through the due index, then each actor by its key): a
	// join in the update, planned generically on an empty ductus_actors,
	// scanned the whole table (see Open).
	sqlClaimReminders = `WITH c AS (
    SELECT r.id, a.type, a.id AS actor_id FROM ductus_reminders r JOIN ductus_actors a ON a.pk = r.actor_pk
    WHERE r.due_at <= now() AND a.type = ANY($3::text[])
    ORDER BY r.due_at LIMIT $4
    FOR NO KEY UPDATE OF r SKIP LOCKED
)
UPDATE ductus_reminders r SET lease_owner = $1, due_at = now() + $2::bigint` + us + `
FROM c WHERE r.id = ANY (ARRAY (SELECT id FROM c)) AND c.id = r.id
RETURNING r.id, r.actor_pk, c.type, c.actor_id, r.name, r.message, r.args, r.schedule, r.next_at, r.occurrence, now()`
	sqlLockReminders = `SELECT id, occurrence FROM ductus_reminders WHERE id = ANY($1::bigint[]) AND lease_owner = $2 ORDER BY id FOR UPDATE`
	sqlReminderFull  = `UPDATE ductus_reminders SET lease_owner = NULL, due_at = now() + interval '1 second' WHERE id = $1`
	sqlReminderDone  = `DELETE FROM ductus_reminders WHERE id = $1`
	sqlReminderNext  = `UPDATE ductus_reminders SET occurrence = $2, next_at = $3, due_at = $4, lease_owner = NULL WHERE id = $1`
)

// ReminderClaim implements store.Backend (one round trip): due reminders
// of the given types are leased (due_at moves to the lease's expiry) and
// returned with the database's time, from which the scheduler computes the
// next occurrence.
func (b *Backend) ReminderClaim(ctx context.Context, p *store.ReminderClaimParams) ([]store.Reminder, error) {
	if p.Limit <= 0 || len(p.Types) == 0 {
		return nil, nil
	}
	rows, err := b.pool.Query(ctx, sqlClaimReminders, p.Owner, store.Micros(p.TTL), p.Types, p.Limit)
	if err != nil {
		return nil, classify("claim reminders", err)
	}
	defer rows.Close()
	var out []store.Reminder
	for rows.Next() {
		var r store.Reminder
		if err := rows.Scan(&r.ID, &r.ActorPK, &r.Ref.Type, &r.Ref.ID, &r.Name, &r.Message, &r.Args, &r.Schedule, &r.NextAt, &r.Occurrence, &r.Now); err != nil {
			return nil, classify("claim reminders", err)
		}
		out = append(out, r)
	}
	return out, classify("claim reminders", rows.Err())
}

// ReminderFire implements store.Backend in three round trips. The reminder
// rows are locked and each fire applies only while its row is still this
// claim's and at the expected occurrence; the occurrence's idempotency key
// ("reminder:<id>:<n>") is the final guard against two schedulers
// enqueueing it twice. Occurrences never create an actor (a destroyed
// actor's reminders are gone with it). Fires apply in order, each against
// the state the earlier ones left.
func (b *Backend) ReminderFire(ctx context.Context, p *store.ReminderFireParams) error {
	if len(p.Fires) == 0 {
		return nil
	}
	return b.txn(ctx, func(t *txn) error {
		ids := make([]int64, len(p.Fires))
		for i, f := range p.Fires {
			ids[i] = f.ID
		}
		occurrence := map[int64]int64{}
		var bt batch
		shareActors(&bt, "fire reminders: lock their actors", actorsOfReminders, ids)
		bt.query("fire reminders: lock them", func(rows pgx.Rows) error {
			var id, occ int64
			if err := rows.Scan(&id, &occ); err != nil {
				return err
			}
			occurrence[id] = occ
			return nil
		}, sqlLockReminders, ids, p.Owner)
		if err := bt.run(ctx, t); err != nil {
			return err
		}
		msgs := make([]store.NewMessage, len(p.Fires))
		for i, f := range p.Fires {
			m := f.Message
			m.MustExist = true
			m.IdempotencyKey = fmt.Sprintf("reminder:%d:%d", f.ID, f.Occurrence)
			msgs[i] = m
		}
		if err := store.ValidateEnqueue(&store.MailboxEnqueueParams{Messages: msgs}); err != nil {
			return err
		}
		e, err := b.newEnqueuer(ctx, t, msgs)
		if err != nil {
			return err
		}
		bt = batch{}
		var after batch // the reminder rows change after the messages are written
		for i, f := range p.Fires {
			occ, ok := occurrence[f.ID]
			if !ok || occ != f.Occurrence-1 {
				continue // replaced, cancelled, destroyed, or fired by another scheduler
			}
			res, err := e.decide(&store.MailboxEnqueueParams{Messages: msgs[i : i+1], MailboxCap: p.MailboxCap, SkipFull: true},
				store.PlanEnqueue(msgs[i:i+1]))
			if err != nil {
				return err
			}
			switch {
			case res[0].Full:
				// The mailbox is full: keep the occurrence and try again soon.
				after.exec("fire reminders: retry a full mailbox", sqlReminderFull, f.ID)
				continue
			case f.Next.IsZero():
				after.exec("fire reminders: delete a finished reminder", sqlReminderDone, f.ID)
			default:
				after.exec("fire reminders: advance", sqlReminderNext, f.ID, f.Occurrence, f.Next, f.DueAt())
			}
			occurrence[f.ID] = f.Occurrence
		}
		e.queue(&bt, false)
		bt.append(&after)
		return t.commitWith(ctx, &bt)
	})
}

// ReminderList implements store.Backend.
func (b *Backend) ReminderList(ctx context.Context, ref actor.Ref) ([]store.ReminderInfo, error) {
	if !storable(ref) {
		return nil, nil
	}
	rows, err := b.pool.Query(ctx, `SELECT r.id, r.name, r.message, r.args, r.schedule, r.next_at, r.due_at, r.occurrence
		FROM ductus_reminders r JOIN ductus_actors a ON a.pk = r.actor_pk WHERE a.type = $1 AND a.id = $2 ORDER BY r.name`, ref.Type, ref.ID)
	if err != nil {
		return nil, classify("list reminders", err)
	}
	defer rows.Close()
	var out []store.ReminderInfo
	for rows.Next() {
		r := store.ReminderInfo{Ref: ref}
		if err := rows.Scan(&r.ID, &r.Name, &r.Message, &r.Args, &r.Schedule, &r.NextAt, &r.DueAt, &r.Occurrence); err != nil {
			return nil, classify("list reminders", err)
		}
		out = append(out, r)
	}
	return out, classify("list reminders", rows.Err())
}
