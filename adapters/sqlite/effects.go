package sqlite

import (
	"context"
	"database/sql"
	"fmt"

	"github.com/ductus/ductus/actor"
	"github.com/ductus/ductus/adapters/internal/sqlrow"
	"github.com/ductus/ductus/runtime/store"
	"github.com/ductus/ductus/runtime/store/sqltx"
)

func scanEffect(rows *sql.Rows) (store.Effect, error) {
	var e store.Effect
	var args string
	var created int64
	err := rows.Scan(&e.ID, &e.UUID, &e.ActorPK, &e.Ref.Type, &e.Ref.ID, &e.Name, &args, &e.Ordered, &e.Generation,
		&e.ActorGeneration, &e.Attempt, &e.MaxAttempts, &e.OnSuccess, &e.OnFailure, &e.MessageID, &created)
	e.Args = []byte(args)
	e.CreatedAt = micros(sql.NullInt64{Int64: created, Valid: true})
	return e, err
}

// EffectClaim implements store.Backend. Unordered effects are leased
// straight from their due index; ordered ones through their actor's lane,
// taking the head and up to OrderedRun-1 following effects of that actor.
// A claimed row's due_at is its lease expiry, so a dead worker's claims come
// due again by themselves.
func (b *Backend) EffectClaim(ctx context.Context, p *store.EffectClaimParams) ([]store.Effect, error) {
	if p.Limit <= 0 || len(p.Names) == 0 {
		return nil, nil
	}
	run := max(p.OrderedRun, 1)
	names := jsonList(p.Names)
	ttl := store.Micros(p.TTL)
	var ids []int64
	var out []store.Effect
	err := b.write(ctx, nil, func(tx *wtx) error {
		const op = "claim effects"
		rows, err := tx.QueryContext(ctx, `UPDATE ductus_effects SET lease_owner = ?, attempts = attempts + 1, due_at = `+now+` + ?
			WHERE id IN (SELECT id FROM ductus_effects WHERE state = 'pending' AND ordered = 0 AND due_at <= `+now+`
				AND name IN (SELECT value FROM json_each(?)) ORDER BY due_at LIMIT ?) RETURNING id`, p.Owner, ttl, names, p.Limit)
		if err != nil {
			return classify(op, err)
		}
		if ids, err = scanIDs(rows, ids); err != nil {
			return classify(op, err)
		}
		// Only lanes whose head this process has a handler for (or that
		// have no head left, to settle them): a process without the handler
		// must not hold a lane, nor spend its claim's limit on it.
		lanes, err := tx.QueryContext(ctx, `UPDATE ductus_lanes SET due_at = `+now+` + ?
			WHERE kind = 'effect' AND actor_pk IN (SELECT l.actor_pk FROM ductus_lanes l WHERE l.kind = 'effect' AND l.due_at <= `+now+`
				AND COALESCE((SELECT e.name FROM ductus_effects e WHERE e.actor_pk = l.actor_pk AND e.state = 'pending' AND e.ordered = 1
					ORDER BY e.id LIMIT 1) IN (SELECT value FROM json_each(?)), 1)
				ORDER BY l.due_at LIMIT ?) RETURNING actor_pk`, ttl, names, p.Limit)
		if err != nil {
			return classify(op, err)
		}
		pks, err := scanIDs(lanes, nil)
		if err != nil {
			return classify(op, err)
		}
		for _, pk := range pks {
			head, err := tx.QueryContext(ctx, `SELECT id, name IN (SELECT value FROM json_each(?)), due_at <= `+now+`
				FROM ductus_effects WHERE actor_pk = ? AND state = 'pending' AND ordered = 1 ORDER BY id LIMIT ?`, names, pk, run)
			if err != nil {
				return classify(op, err)
			}
			var take []int64
			for head.Next() {
				var id int64
				var handled, due bool
				if err := head.Scan(&id, &handled, &due); err != nil {
					head.Close()
					return classify(op, err)
				}
				if !handled || !due {
					break // the run stops at an effect this process cannot run yet
				}
				take = append(take, id)
			}
			if err := head.Close(); err != nil {
				return classify(op, err)
			}
			if len(take) == 0 {
				if err := settleLane(ctx, tx, pk, "effect"); err != nil {
					return err
				}
				continue
			}
			if _, err := tx.ExecContext(ctx, `UPDATE ductus_effects SET lease_owner = ?, attempts = attempts + 1, due_at = `+now+` + ?
				WHERE id IN (SELECT value FROM json_each(?))`, p.Owner, ttl, jsonInts(take)); err != nil {
				return classify(op, err)
			}
			ids = append(ids, take...)
		}
		// Read the claimed rows in the same transaction: a claim whose
		// results the caller never got would hold its effects until the
		// claims expire.
		if len(ids) == 0 {
			return nil
		}
		claimed, err := tx.QueryContext(ctx, `SELECT `+sqlrow.EffectColumns+` FROM ductus_effects e JOIN ductus_actors a ON a.pk = e.actor_pk
			WHERE e.id IN (SELECT value FROM json_each(?)) ORDER BY e.id`, jsonInts(ids))
		if err != nil {
			return classify("read claimed effects", err)
		}
		defer claimed.Close()
		for claimed.Next() {
			e, err := scanEffect(claimed)
			if err != nil {
				return classify("read claimed effects", err)
			}
			out = append(out, e)
		}
		return classify("read claimed effects", claimed.Err())
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

func scanIDs(rows *sql.Rows, into []int64) ([]int64, error) {
	defer rows.Close()
	for rows.Next() {
		var id int64
		if err := rows.Scan(&id); err != nil {
			return nil, err
		}
		into = append(into, id)
	}
	return into, rows.Err()
}

// EffectFinish implements store.Backend. Each outcome applies only while
// the row is still this claim's (owner and attempt match), so a claim that
// expired and was taken over cannot overwrite the newer attempt.
func (b *Backend) EffectFinish(ctx context.Context, p *store.EffectFinishParams) error {
	if len(p.Outcomes) == 0 {
		return nil
	}
	return b.write(ctx, nil, func(tx *wtx) error {
		const op = "record effect outcomes"
		lanes := map[int64]bool{}
		var outcomes []store.NewMessage
		for _, o := range p.Outcomes {
			var q string
			var args []any
			switch {
			case o.Release:
				q, args = `UPDATE ductus_effects SET lease_owner = NULL, attempts = attempts - 1, due_at = `+now+` + ?`, []any{store.Micros(o.RetryAfter)}
			case o.Success:
				q, args = `UPDATE ductus_effects SET state = 'done', result = ?, error = NULL, lease_owner = NULL, finished_at = `+now, []any{sqltx.NullBytes(o.Result)}
			case o.Dead:
				q, args = `UPDATE ductus_effects SET state = 'dead', error = ?, lease_owner = NULL, finished_at = `+now, []any{o.Error}
			default:
				q, args = `UPDATE ductus_effects SET error = ?, lease_owner = NULL, due_at = `+now+` + ?`, []any{o.Error, store.Micros(o.RetryAfter)}
			}
			q += ` WHERE id = ? AND lease_owner = ? AND attempts = ? AND state = 'pending' RETURNING actor_pk, ordered`
			var pk int64
			var ordered bool
			err := tx.QueryRowContext(ctx, q, append(args, o.ID, p.Owner, o.Attempt)...).Scan(&pk, &ordered)
			if err == sql.ErrNoRows {
				continue // no longer this claim's: another worker owns the newer attempt
			}
			if err != nil {
				return classify(op, err)
			}
			if ordered {
				lanes[pk] = true
			}
			if o.Outcome != nil {
				outcomes = append(outcomes, *o.Outcome)
			}
		}
		if len(outcomes) > 0 {
			// No mailbox cap: the effect is finished in this transaction, so
			// its outcome must be written whatever the mailbox holds (see
			// store.EffectFinishParams).
			if _, err := b.enqueue(ctx, tx, &store.MailboxEnqueueParams{Messages: outcomes}); err != nil {
				return err
			}
		}
		for pk := range lanes {
			if err := settleLane(ctx, tx, pk, "effect"); err != nil {
				return err
			}
		}
		return nil
	})
}

// EffectRetry implements store.Backend.
func (b *Backend) EffectRetry(ctx context.Context, id int64) (bool, error) {
	var ok bool
	err := b.write(ctx, nil, func(tx *wtx) error {
		var pk int64
		var ordered bool
		err := tx.QueryRowContext(ctx, `UPDATE ductus_effects SET state = 'pending', attempts = 0, error = NULL, finished_at = NULL,
			lease_owner = NULL, due_at = `+now+` WHERE id = ? AND state = 'dead' RETURNING actor_pk, ordered`, id).Scan(&pk, &ordered)
		if err == sql.ErrNoRows {
			return nil
		}
		if err != nil {
			return classify("retry an effect", err)
		}
		ok = true
		if ordered {
			if err := openLane(ctx, tx, pk, "effect"); err != nil {
				return err
			}
			return settleLane(ctx, tx, pk, "effect")
		}
		return nil
	})
	return ok, err
}

// EffectDiscard implements store.Backend.
func (b *Backend) EffectDiscard(ctx context.Context, id int64) (bool, error) {
	var ok bool
	err := b.write(ctx, nil, func(tx *wtx) error {
		res, err := tx.ExecContext(ctx, `DELETE FROM ductus_effects WHERE id = ? AND state = 'dead'`, id)
		if err != nil {
			return classify("discard an effect", err)
		}
		n, err := res.RowsAffected()
		ok = n > 0
		return classify("discard an effect", err)
	})
	return ok, err
}

func scanEffectInfo(sc sqlrow.Scanner) (store.EffectInfo, error) {
	var e store.EffectInfo
	var args string
	var result, errText sql.NullString
	var created int64
	var finished sql.NullInt64
	err := sc.Scan(&e.ID, &e.UUID, &e.Ref.Type, &e.Ref.ID, &e.Name, &args, &e.Ordered, &e.State, &e.Attempts, &result, &errText,
		&e.Generation, &created, &finished, &e.MessageID, &e.MaxAttempts)
	e.Args = []byte(args)
	if result.Valid {
		e.Result = []byte(result.String)
	}
	e.Error = errText.String
	e.CreatedAt, e.FinishedAt = micros(sql.NullInt64{Int64: created, Valid: true}), micros(finished)
	return e, err
}

// EffectList implements store.Backend.
func (b *Backend) EffectList(ctx context.Context, p *store.EffectListParams) ([]store.EffectInfo, error) {
	before := p.BeforeID
	if before <= 0 {
		before = 1<<63 - 1
	}
	rows, err := b.r.QueryContext(ctx, `SELECT `+sqlrow.EffectInfoColumns+` FROM ductus_effects e JOIN ductus_actors a ON a.pk = e.actor_pk
		WHERE e.state = ? AND (? = '' OR a.type = ?) AND (? = '' OR a.id = ?) AND (? = 0 OR e.message_id = ?)
		AND (? = 0 OR e.ordered = 1 AND e.error IS NOT NULL) AND e.id < ? ORDER BY e.id DESC LIMIT ?`,
		string(p.State), p.Type, p.Type, p.ID, p.ID, p.MessageID, p.MessageID, p.Blocking, before, limitOr(p.Limit, 100))
	if err != nil {
		return nil, classify("list effects", err)
	}
	defer rows.Close()
	out, err := sqlrow.Collect(rows, scanEffectInfo)
	return out, classify("list effects", err)
}

// EffectGet implements store.Backend.
func (b *Backend) EffectGet(ctx context.Context, id int64) (*store.EffectInfo, error) {
	e, err := scanEffectInfo(b.r.QueryRowContext(ctx, `SELECT `+sqlrow.EffectInfoColumns+`
		FROM ductus_effects e JOIN ductus_actors a ON a.pk = e.actor_pk WHERE e.id = ?`, id))
	if err == sql.ErrNoRows {
		return nil, fmt.Errorf("%w: effect %d", actor.ErrNotFound, id)
	}
	if err != nil {
		return nil, classify("read an effect", err)
	}
	return &e, nil
}

func limitOr(n, def int) int {
	if n <= 0 {
		return def
	}
	return n
}

// EffectListByMessages implements store.Backend.
func (b *Backend) EffectListByMessages(ctx context.Context, messageIDs []int64) ([]store.EffectInfo, error) {
	if len(messageIDs) == 0 {
		return nil, nil
	}
	rows, err := b.r.QueryContext(ctx, `SELECT `+sqlrow.EffectInfoColumns+` FROM ductus_effects e JOIN ductus_actors a ON a.pk = e.actor_pk
		WHERE e.message_id IN (SELECT value FROM json_each(?)) ORDER BY e.id`, jsonInts(messageIDs))
	if err != nil {
		return nil, classify("list effects of messages", err)
	}
	defer rows.Close()
	out, err := sqlrow.Collect(rows, scanEffectInfo)
	return out, classify("list effects of messages", err)
}
