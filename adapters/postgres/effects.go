package postgres

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"

	"github.com/ductus/ductus/actor"
	"github.com/ductus/ductus/adapters/internal/sqlrow"
	"github.com/ductus/ductus/runtime/store"
)

const effectReturning = `RETURNING e.id, e.uuid, e.actor_pk, a.type, a.id, e.name, e.args, e.ordered, e.generation, a.generation,
    e.attempts, e.max_attempts, COALESCE(e.on_success, ''), COALESCE(e.on_failure, ''), e.message_id, e.created_at`

const (
	// Unordered effects are leased straight off their due index.
	sqlClaimUnordered = `WITH c AS (
    SELECT id FROM ductus_effects WHERE state = 'pending' AND NOT ordered AND due_at <= now() AND name = ANY($3::text[])
    ORDER BY due_at LIMIT $4 FOR NO KEY UPDATE SKIP LOCKED
)
UPDATE ductus_effects e SET lease_owner = $1, attempts = e.attempts + 1, due_at = now() + $2::bigint` + us + `
FROM ductus_actors a WHERE e.id = ANY (ARRAY (SELECT id FROM c)) AND a.pk = e.actor_pk
` + effectReturning
	// sqlClaimLanes leases due lanes of a kind: their due_at becomes the
	// claim's expiry, so no other claimer takes them meanwhile.
	sqlClaimLanes = `WITH c AS (
    SELECT actor_pk FROM ductus_lanes WHERE kind = $3 AND due_at <= now() ORDER BY due_at LIMIT $2 FOR NO KEY UPDATE SKIP LOCKED
)
UPDATE ductus_lanes l SET due_at = now() + $1::bigint` + us + ` WHERE l.kind = $3 AND l.actor_pk = ANY (ARRAY (SELECT actor_pk FROM c))
RETURNING l.actor_pk`
	// sqlClaimEffectLanes is sqlClaimLanes for effect lanes whose head
	// this process has a handler for (or that have no head left, to settle
	// them): a process without the handler must not hold a lane, nor spend
	// its claim's limit on it.
	sqlClaimEffectLanes = `WITH c AS (
    SELECT l.actor_pk FROM ductus_lanes l WHERE l.kind = 'effect' AND l.due_at <= now()
        AND COALESCE((SELECT e.name FROM ductus_effects e WHERE e.actor_pk = l.actor_pk AND e.state = 'pending' AND e.ordered
            ORDER BY e.id LIMIT 1) = ANY($3::text[]), true)
    ORDER BY l.due_at LIMIT $2 FOR NO KEY UPDATE OF l SKIP LOCKED
)
UPDATE ductus_lanes l SET due_at = now() + $1::bigint` + us + ` WHERE l.kind = 'effect' AND l.actor_pk = ANY (ARRAY (SELECT actor_pk FROM c))
RETURNING l.actor_pk`
	// sqlClaimRuns takes, per claimed lane, the head and the following
	// ordered effects while each can run here (a handler exists) and is
	// due: the run stops at the first that cannot.
	sqlClaimRuns = `WITH hd AS (
    SELECT h.id, bool_and(h.ok) OVER (PARTITION BY h.actor_pk ORDER BY h.id) AS take
    FROM unnest($1::bigint[]) AS l(pk) CROSS JOIN LATERAL (
        SELECT e.id, e.actor_pk, e.name = ANY($2::text[]) AND e.due_at <= now() AS ok FROM ductus_effects e
        WHERE e.actor_pk = l.pk AND e.state = 'pending' AND e.ordered ORDER BY e.id LIMIT $3) h
)
UPDATE ductus_effects e SET lease_owner = $4, attempts = e.attempts + 1, due_at = now() + $5::bigint` + us + `
FROM hd, ductus_actors a WHERE e.id = hd.id AND hd.take AND e.state = 'pending' AND a.pk = e.actor_pk
` + effectReturning
	// sqlSettleIdleLanes gives back the claimed lanes whose run took
	// nothing: a lane whose head is now leased here keeps its claim.
	sqlSettleIdleLanes = `WITH h AS (
    SELECT l.pk, e.due_at, e.lease_owner FROM unnest($1::bigint[]) AS l(pk) LEFT JOIN LATERAL (
        SELECT due_at, lease_owner FROM ductus_effects WHERE actor_pk = l.pk AND state = 'pending' AND ordered ORDER BY id LIMIT 1) e ON true
), d AS (
    DELETE FROM ductus_lanes x USING h WHERE x.kind = 'effect' AND x.actor_pk = h.pk AND h.due_at IS NULL
)
UPDATE ductus_lanes x SET due_at = h.due_at FROM h
WHERE x.kind = 'effect' AND x.actor_pk = h.pk AND h.due_at IS NOT NULL AND NOT (h.lease_owner IS NOT DISTINCT FROM $2 AND h.due_at > now())`
)

func scanEffect(rows pgx.Rows) (store.Effect, error) {
	var e store.Effect
	err := rows.Scan(&e.ID, &e.UUID, &e.ActorPK, &e.Ref.Type, &e.Ref.ID, &e.Name, &e.Args, &e.Ordered, &e.Generation,
		&e.ActorGeneration, &e.Attempt, &e.MaxAttempts, &e.OnSuccess, &e.OnFailure, &e.MessageID, &e.CreatedAt)
	return e, err
}

// EffectClaim implements store.Backend. One round trip leases due
// unordered effects and due ordered lanes (both committed at once: a lane
// lease that is never followed up expires like any claim); when lanes were
// leased a second one locks them, takes their runs and gives back the lanes
// whose run took nothing. A claimed row's due_at is its lease expiry, so a
// dead worker's claims come due again by themselves.
func (b *Backend) EffectClaim(ctx context.Context, p *store.EffectClaimParams) ([]store.Effect, error) {
	if p.Limit <= 0 || len(p.Names) == 0 {
		return nil, nil
	}
	run := max(p.OrderedRun, 1)
	ttl := store.Micros(p.TTL)
	var out []store.Effect
	var lanes []int64
	scan := func(rows pgx.Rows) error {
		e, err := scanEffect(rows)
		out = append(out, e)
		return err
	}
	var bt batch
	customPlan(&bt, "claim effects", func() {
		bt.query("claim effects", scan, sqlClaimUnordered, p.Owner, ttl, p.Names, p.Limit)
		bt.query("claim effect lanes", func(rows pgx.Rows) error {
			var pk int64
			lanes = append(lanes, pk)
			return rows.Scan(&lanes[len(lanes)-1])
		}, sqlClaimEffectLanes, ttl, p.Limit, p.Names)
	})
	if err := bt.run(ctx, b.pool); err != nil {
		return nil, err
	}
	if len(lanes) > 0 {
		slices.Sort(lanes)
		bt = batch{}
		customPlan(&bt, "claim ordered effects", func() {
			shareActors(&bt, "claim effect lanes", actorsOfPKs, lanes)
			bt.exec("claim effect lanes", sqlLockLanes, "effect", lanes)
			bt.query("claim ordered effects", scan, sqlClaimRuns, lanes, p.Names, run, p.Owner, ttl)
			bt.exec("claim effect lanes", sqlSettleIdleLanes, lanes, p.Owner)
		})
		if err := bt.run(ctx, b.pool); err != nil {
			return nil, err
		}
	}
	slices.SortFunc(out, func(a, b store.Effect) int { return int(a.ID - b.ID) })
	return out, nil
}

// sqlFinishEffects records outcomes. "e.id = ANY ($2)" repeats the join
// to the outcomes as a key condition: without it, even a custom plan on a
// table whose statistics were never gathered joined the outcomes to a scan
// of the whole table (TestEffectStatementsFindRowsByKey counts 20 such
// scans in a cycle over 10,000 effects).
const sqlFinishEffects = `UPDATE ductus_effects e SET
    state = CASE u.kind WHEN 's' THEN 'done' WHEN 'd' THEN 'dead' ELSE e.state END,
    result = CASE WHEN u.kind = 's' THEN u.result ELSE e.result END,
    error = CASE u.kind WHEN 's' THEN NULL WHEN 'r' THEN e.error ELSE u.error END,
    lease_owner = NULL,
    attempts = CASE WHEN u.kind = 'r' THEN e.attempts - 1 ELSE e.attempts END,
    due_at = CASE WHEN u.kind IN ('r', 'f') THEN now() + u.retry` + us + ` ELSE e.due_at END,
    finished_at = CASE WHEN u.kind IN ('s', 'd') THEN now() ELSE e.finished_at END
FROM unnest($2::bigint[], $3::int[], $4::text[], $5::json[], $6::text[], $7::bigint[]) AS u(id, attempt, kind, result, error, retry)
WHERE e.id = ANY ($2::bigint[]) AND e.id = u.id AND e.lease_owner = $1 AND e.attempts = u.attempt AND e.state = 'pending'
RETURNING e.id, e.actor_pk, e.ordered`

// EffectFinish implements store.Backend. Each outcome applies only while
// the row is still this claim's (owner and attempt match), so a claim that
// expired and was taken over cannot overwrite the newer attempt. The
// outcome messages (never recreating a destroyed actor) and the lane
// settles follow in the same transaction: two round trips in all.
func (b *Backend) EffectFinish(ctx context.Context, p *store.EffectFinishParams) error {
	if len(p.Outcomes) == 0 {
		return nil
	}
	n := len(p.Outcomes)
	ids, retry := make([]int64, n), make([]int64, n)
	attempts := make([]int32, n)
	kinds, errs := make([]string, n), make([]string, n)
	results := make([][]byte, n)
	byID := make(map[int64]*store.EffectOutcome, n)
	for i := range p.Outcomes {
		o := &p.Outcomes[i]
		ids[i], attempts[i], results[i], errs[i], retry[i] = o.ID, int32(o.Attempt), o.Result, o.Error, store.Micros(o.RetryAfter)
		switch {
		case o.Release:
			kinds[i] = "r"
		case o.Success:
			kinds[i] = "s"
		case o.Dead:
			kinds[i] = "d"
		default:
			kinds[i] = "f"
		}
		if _, seen := byID[o.ID]; !seen {
			byID[o.ID] = o
		}
	}
	return b.txn(ctx, func(t *txn) error {
		var lanes []int64
		var outcomes []store.NewMessage
		seenLane := map[int64]bool{}
		var bt batch
		customPlan(&bt, "record effect outcomes", func() {
			shareActors(&bt, "record effect outcomes", actorsOfEffects, ids)
			bt.query("record effect outcomes", func(rows pgx.Rows) error {
				var id, pk int64
				var ordered bool
				if err := rows.Scan(&id, &pk, &ordered); err != nil {
					return err
				}
				if ordered && !seenLane[pk] {
					seenLane[pk] = true
					lanes = append(lanes, pk)
				}
				if o := byID[id]; o != nil && o.Outcome != nil {
					outcomes = append(outcomes, *o.Outcome)
				}
				return nil
			}, sqlFinishEffects, p.Owner, ids, attempts, kinds, results, errs, retry)
		})
		if err := bt.run(ctx, t); err != nil {
			return err
		}
		slices.Sort(lanes)
		bt = batch{}
		if len(outcomes) > 0 {
			// No mailbox cap: the effect is finished in this transaction, so
			// its outcome must be written whatever the mailbox holds (see
			// store.EffectFinishParams). SkipFull, which nothing can trip
			// without a cap, keeps the one-statement form.
			ep := &store.MailboxEnqueueParams{Messages: outcomes, SkipFull: true}
			if err := b.enqueueWith(ctx, t, &bt, ep); err != nil {
				return err
			}
		}
		settleLanes(&bt, "effect", lanes)
		return t.commitWith(ctx, &bt)
	})
}

// EffectRetry implements store.Backend.
func (b *Backend) EffectRetry(ctx context.Context, id int64) (bool, error) {
	var ok bool
	err := b.txn(ctx, func(t *txn) error {
		var pk int64
		var ordered bool
		var bt batch
		shareActors(&bt, "retry an effect", actorsOfEffects, []int64{id})
		bt.query("retry an effect", func(rows pgx.Rows) error {
			ok = true
			return rows.Scan(&pk, &ordered)
		}, `UPDATE ductus_effects SET state = 'pending', attempts = 0, error = NULL, finished_at = NULL, lease_owner = NULL, due_at = now()
			WHERE id = $1 AND state = 'dead' RETURNING actor_pk, ordered`, id)
		if err := bt.run(ctx, t); err != nil {
			return err
		}
		bt = batch{}
		if ok && ordered {
			bt.exec("retry an effect: open the lane", sqlOpenLane, pk, "effect")
			settleLanes(&bt, "effect", []int64{pk})
		}
		return t.commitWith(ctx, &bt)
	})
	return ok, err
}

// EffectDiscard implements store.Backend. A dead effect holds no lane
// (its lane moved past it when it died), so deleting it settles nothing.
func (b *Backend) EffectDiscard(ctx context.Context, id int64) (bool, error) {
	tag, err := b.pool.Exec(ctx, `DELETE FROM ductus_effects WHERE id = $1 AND state = 'dead'`, id)
	if err != nil {
		return false, classify("discard an effect", err)
	}
	return tag.RowsAffected() > 0, nil
}

func scanEffectInfo(row sqlrow.Scanner) (store.EffectInfo, error) {
	var e store.EffectInfo
	var errText pgtype.Text
	var finished pgtype.Timestamptz
	var state string
	err := row.Scan(&e.ID, &e.UUID, &e.Ref.Type, &e.Ref.ID, &e.Name, &e.Args, &e.Ordered, &state, &e.Attempts, &e.Result, &errText,
		&e.Generation, &e.CreatedAt, &finished, &e.MessageID, &e.MaxAttempts)
	e.State, e.Error = store.EffectState(state), errText.String
	if finished.Valid {
		e.FinishedAt = finished.Time
	}
	return e, err
}

func (b *Backend) listEffects(ctx context.Context, op, query string, args ...any) ([]store.EffectInfo, error) {
	rows, err := b.pool.Query(ctx, query, args...)
	if err != nil {
		return nil, classify(op, err)
	}
	defer rows.Close()
	out, err := sqlrow.Collect(rows, scanEffectInfo)
	return out, classify(op, err)
}

// EffectList implements store.Backend. The state is written into the
// statement (one text per state and type filter) so the generic plan can
// use the partial index of that state.
func (b *Backend) EffectList(ctx context.Context, p *store.EffectListParams) ([]store.EffectInfo, error) {
	before := p.BeforeID
	if before <= 0 {
		before = 1<<63 - 1
	}
	var state string
	switch p.State {
	case store.EffectPending, store.EffectDone, store.EffectDead:
		state = "'" + string(p.State) + "'"
	default:
		return nil, nil // no effect is in any other state (as on SQLite)
	}
	q := `SELECT ` + sqlrow.EffectInfoColumns + ` FROM ductus_effects e JOIN ductus_actors a ON a.pk = e.actor_pk
		WHERE e.state = ` + state + ` AND e.id < $1`
	args := []any{before, limitOr(p.Limit, 100)}
	if p.Type != "" {
		q += ` AND a.type = $3`
		args = append(args, p.Type)
	}
	if p.ID != "" {
		args = append(args, p.ID)
		q += fmt.Sprintf(` AND a.id = $%d`, len(args))
	}
	if p.MessageID != 0 {
		args = append(args, p.MessageID)
		q += fmt.Sprintf(` AND e.message_id = $%d`, len(args))
	}
	if p.Blocking {
		// ordered written out: the partial index of pending ordered
		// effects serves it.
		q += ` AND e.ordered AND e.error IS NOT NULL`
	}
	return b.listEffects(ctx, "list effects", q+` ORDER BY e.id DESC LIMIT $2`, args...)
}

// EffectGet implements store.Backend.
func (b *Backend) EffectGet(ctx context.Context, id int64) (*store.EffectInfo, error) {
	e, err := scanEffectInfo(b.pool.QueryRow(ctx, `SELECT `+sqlrow.EffectInfoColumns+`
		FROM ductus_effects e JOIN ductus_actors a ON a.pk = e.actor_pk WHERE e.id = $1`, id))
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, fmt.Errorf("%w: effect %d", actor.ErrNotFound, id)
	}
	if err != nil {
		return nil, classify("read an effect", err)
	}
	return &e, nil
}

// EffectListByMessages implements store.Backend.
func (b *Backend) EffectListByMessages(ctx context.Context, messageIDs []int64) ([]store.EffectInfo, error) {
	if len(messageIDs) == 0 {
		return nil, nil
	}
	return b.listEffects(ctx, "list effects of messages", `SELECT `+sqlrow.EffectInfoColumns+` FROM ductus_effects e JOIN ductus_actors a ON a.pk = e.actor_pk
		WHERE e.message_id = ANY($1::bigint[]) ORDER BY e.id`, messageIDs)
}

// customPlan queues the statements add queues to run with custom plans,
// then restores the connection's generic plans. Connections force generic
// plans (see Open), and a generic plan is kept until the table's
// statistics change: the plans of the ordered-effect statements built
// while ductus_effects was empty (a fresh database, before autovacuum's
// first ANALYZE) joined the rows to update with a scan of the whole table,
// and stayed after it held thousands of rows (a run's lease took up to
// 1.3 s with 10,000 effects; one benchmark run in three was twenty times
// slower). A custom plan is made with the table's current size; these
// statements run once per claim or flush of up to 50 outcomes, so the
// planning costs little.
func customPlan(bt *batch, op string, add func()) {
	bt.exec(op+": choose the plan", sqlPlanMode, "force_custom_plan")
	add()
	bt.exec(op+": choose the plan", sqlPlanMode, "force_generic_plan")
}
