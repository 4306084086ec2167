package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/ductus/ductus/actor"
	"github.com/ductus/ductus/runtime/store"
	"github.com/ductus/ductus/runtime/store/sqltx"
)

const (
	// leaseHeld guards the take: the lease must be valid and the actor not
	// paused (a paused actor's cached activation takes nothing).
	leaseHeld = `EXISTS (SELECT 1 FROM ductus_actors WHERE pk = ? AND lease_owner = ? AND generation = ? AND lease_expires > ` + now + ` AND paused = 0)`
	// sqlTakeReadopt takes over messages an earlier generation claimed and
	// never finished (its worker died or lost the lease): they run first.
	sqlTakeReadopt = `UPDATE ductus_claimed SET generation = ?, attempt = attempt + 1, claimed_at = ` + now + `
		WHERE actor_pk = ? AND generation < ? AND ` + leaseHeld
	// sqlTakeMove claims ready messages in sequence order up to the first
	// one not yet due: a message backing off (or delayed) holds back every
	// later one (strict ordering). Both scans read only the first K rows of
	// the actor's (actor_pk, seq) index, so a take costs the same whatever
	// the backlog behind them.
	sqlTakeMove = `INSERT INTO ductus_claimed (message_id, actor_pk, seq, generation, attempt, claimed_at)
		SELECT h.message_id, h.actor_pk, h.seq, ?, m.attempts + 1, ` + now + `
		FROM (SELECT message_id, actor_pk, seq, due_at FROM ductus_ready WHERE actor_pk = ? ORDER BY seq LIMIT ?) h
		JOIN ductus_messages m ON m.id = h.message_id
		WHERE h.seq < COALESCE((SELECT MIN(seq) FROM (SELECT seq, due_at FROM ductus_ready WHERE actor_pk = ? ORDER BY seq LIMIT ?)
				WHERE due_at > ` + now + `), 9223372036854775807)
			AND ` + leaseHeld + `
		ORDER BY h.seq`
	sqlTakeDelete = `DELETE FROM ductus_ready WHERE message_id IN (SELECT message_id FROM ductus_claimed WHERE actor_pk = ? AND generation = ?)`
	sqlTakeRead   = `SELECT c.message_id, c.seq, m.name, m.args, c.attempt, m.ask, m.enqueued_at, m.available_at
		FROM ductus_claimed c JOIN ductus_messages m ON m.id = c.message_id
		WHERE c.actor_pk = ? AND c.generation = ? ORDER BY c.seq`
	sqlCompleteOne   = `UPDATE ductus_messages SET completed_at = ` + now + `, result = ?, attempts = ? WHERE id = ?`
	sqlDeleteClaimed = `DELETE FROM ductus_claimed WHERE actor_pk = ? AND generation = ?`
	// sqlActorCommit is the fenced check and the state write in one: it
	// changes the row only while owner, generation and an unexpired lease
	// all match. It runs last, after the membership changes, so head_due
	// sees the final ready rows (SQLite's single writer makes the order
	// safe; the server backends lock the actor row first instead).
	sqlActorCommit = `UPDATE ductus_actors SET state = COALESCE(?, state), state_version = ?, unfinished = unfinished - ?,
		head_due = (SELECT due_at FROM ductus_ready WHERE actor_pk = ductus_actors.pk ORDER BY seq LIMIT 1),
		updated_at = ` + now + `
		WHERE pk = ? AND lease_owner = ? AND generation = ? AND lease_expires > ` + now
)

// MessageTake implements store.Backend.
func (b *Backend) MessageTake(ctx context.Context, p *store.MessageTakeParams) ([]store.Message, error) {
	var out []store.Message
	err := b.write(ctx, nil, func(tx *wtx) error {
		var err error
		out, err = b.take(ctx, tx, p.Owner, p.Lease, p.Limit, true)
		return err
	})
	return out, err
}

// take claims up to limit messages; checkLease makes an empty take verify
// the lease (inside a commit it was just verified).
func (b *Backend) take(ctx context.Context, tx *wtx, owner string, l store.LeaseRef, limit int, checkLease bool) ([]store.Message, error) {
	const op = "take messages"
	readopted, err := b.exec(ctx, tx, op, sqlTakeReadopt, l.Generation, l.ActorPK, l.Generation, l.ActorPK, owner, l.Generation)
	if err != nil {
		return nil, err
	}
	moved := int64(0)
	if rest := int64(limit) - readopted; rest > 0 {
		moved, err = b.exec(ctx, tx, op, sqlTakeMove, l.Generation, l.ActorPK, rest, l.ActorPK, rest, l.ActorPK, owner, l.Generation)
		if err != nil {
			return nil, err
		}
	}
	if moved > 0 {
		if _, err := b.exec(ctx, tx, op, sqlTakeDelete, l.ActorPK, l.Generation); err != nil {
			return nil, err
		}
	}
	if readopted+moved == 0 {
		if checkLease {
			if err := b.leaseValid(ctx, tx, owner, l); err != nil {
				return nil, err
			}
		}
		return nil, nil
	}
	rows, err := b.query(ctx, tx, op, sqlTakeRead, l.ActorPK, l.Generation)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := make([]store.Message, 0, readopted+moved)
	for rows.Next() {
		var m store.Message
		var args string
		var enq, avail int64
		if err := rows.Scan(&m.ID, &m.Seq, &m.Name, &args, &m.Attempt, &m.Ask, &enq, &avail); err != nil {
			return nil, classify(op, err)
		}
		m.Args = []byte(args)
		m.EnqueuedAt = time.UnixMicro(enq)
		m.AvailableAt = time.UnixMicro(avail)
		out = append(out, m)
	}
	return out, classify(op, rows.Err())
}

func (b *Backend) leaseValid(ctx context.Context, tx *wtx, owner string, l store.LeaseRef) error {
	var one int
	err := b.query1(ctx, tx, "check the lease", sqlLeaseValid, []any{l.ActorPK, owner, l.Generation}, &one)
	if err != nil {
		var se *store.Error
		if errors.As(err, &se) && se.Err == sql.ErrNoRows {
			return fmt.Errorf("%w: actor %d generation %d", actor.ErrLostActivation, l.ActorPK, l.Generation)
		}
		return err
	}
	return nil
}

// TurnCommit implements store.Backend.
func (b *Backend) TurnCommit(ctx context.Context, p *store.TurnCommitParams) (store.TurnCommitResult, error) {
	var res store.TurnCommitResult
	err := b.write(ctx, nil, func(tx *wtx) error {
		l := p.Lease
		finished := int64(len(p.Completed))
		if err := b.complete(ctx, tx, p.Completed); err != nil {
			return err
		}
		if f := p.Failed; f != nil {
			if f.Dead {
				finished++
			}
			if err := b.fail(ctx, tx, l.ActorPK, f); err != nil {
				return err
			}
		}
		if len(p.Returned) > 0 {
			if _, err := tx.ExecContext(ctx, `INSERT INTO ductus_ready (message_id, actor_pk, seq, due_at)
				SELECT id, actor_pk, seq, available_at FROM ductus_messages WHERE actor_pk = ? AND id IN (SELECT value FROM json_each(?))`,
				l.ActorPK, jsonInts(p.Returned)); err != nil {
				return classify("commit: return untouched messages", err)
			}
		}
		if _, err := b.exec(ctx, tx, "commit: clear claimed", sqlDeleteClaimed, l.ActorPK, l.Generation); err != nil {
			return err
		}
		if err := b.stage(ctx, tx, p); err != nil {
			return err
		}
		n, err := b.exec(ctx, tx, "commit: fenced state write", sqlActorCommit,
			sqltx.NullBytes(p.State), p.StateVersion, finished, l.ActorPK, p.Owner, l.Generation)
		if err != nil {
			return err
		}
		if n == 0 {
			return fmt.Errorf("%w: actor %d generation %d", actor.ErrLostActivation, l.ActorPK, l.Generation)
		}
		if p.TakeNext > 0 {
			res.Next, err = b.take(ctx, tx, p.Owner, l, p.TakeNext, false)
		}
		return err
	})
	return res, err
}

// complete marks messages done with their results: one prepared statement
// for a single message, one multi-row UPDATE ... FROM (VALUES ...) per
// chunk for a batch.
func (b *Backend) complete(ctx context.Context, tx *wtx, done []store.Completion) error {
	const op = "commit: complete messages"
	if len(done) == 1 {
		c := done[0]
		_, err := b.exec(ctx, tx, op, sqlCompleteOne, sqltx.NullBytes(c.Result), c.Attempt, c.MessageID)
		return err
	}
	for _, ch := range sqltx.Chunks(len(done), 300) {
		args := make([]any, 0, 3*(ch[1]-ch[0]))
		for _, c := range done[ch[0]:ch[1]] {
			args = append(args, c.MessageID, sqltx.NullBytes(c.Result), c.Attempt)
		}
		q := `UPDATE ductus_messages SET completed_at = ` + now + `, result = v.column2, attempts = v.column3
			FROM (VALUES ` + sqltx.Placeholders(ch[1]-ch[0], 3) + `) AS v WHERE ductus_messages.id = v.column1`
		if _, err := tx.ExecContext(ctx, q, args...); err != nil {
			return classify(op, err)
		}
	}
	return nil
}

// fail records a failed attempt: back to ready with a back-off, or dead.
func (b *Backend) fail(ctx context.Context, tx *wtx, actorPK int64, f *store.Failure) error {
	if f.Dead {
		if _, err := tx.ExecContext(ctx, `UPDATE ductus_messages SET error = ?, attempts = MAX(attempts, ?), dead_at = `+now+` WHERE id = ?`,
			f.Error, f.Attempt, f.MessageID); err != nil {
			return classify("commit: dead-letter the message", err)
		}
		_, err := tx.ExecContext(ctx, `INSERT INTO ductus_dead_letters (message_id, actor_pk, type, dead_at)
			SELECT ?, pk, type, `+now+` FROM ductus_actors WHERE pk = ?`, f.MessageID, actorPK)
		return classify("commit: dead-letter the message", err)
	}
	if _, err := tx.ExecContext(ctx, `UPDATE ductus_messages SET error = ?, attempts = MAX(attempts, ?) WHERE id = ?`, f.Error, f.Attempt, f.MessageID); err != nil {
		return classify("commit: record the failure", err)
	}
	_, err := tx.ExecContext(ctx, `INSERT INTO ductus_ready (message_id, actor_pk, seq, due_at)
		SELECT id, actor_pk, seq, `+now+` + ? FROM ductus_messages WHERE id = ?`, store.Micros(f.RetryAfter), f.MessageID)
	return classify("commit: schedule the retry", err)
}

// ActorDestroy implements store.Backend. Foreign-key cascades delete the
// actor's messages, memberships, dead letters, effects, reminders, outbox
// and broadcasts with it.
func (b *Backend) ActorDestroy(ctx context.Context, ref actor.Ref) (bool, error) {
	var existed bool
	err := b.write(ctx, nil, func(tx *wtx) error {
		res, err := tx.ExecContext(ctx, `DELETE FROM ductus_actors WHERE type = ? AND id = ?`, ref.Type, ref.ID)
		if err != nil {
			return classify("destroy the actor", err)
		}
		n, err := res.RowsAffected()
		existed = n > 0
		return classify("destroy the actor", err)
	})
	return existed, err
}
