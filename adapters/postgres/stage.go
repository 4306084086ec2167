package postgres

import (
	"fmt"

	"github.com/jackc/pgx/v5/pgtype"

	"github.com/ductus/ductus/runtime/store"
)

const (
	// Rows are numbered in input order (WITH ORDINALITY ... ORDER BY), and
	// ids come from an uncached sequence, so a turn's effects and sends get
	// ids in staging order: the order the lanes deliver them in.
	sqlStageEffects = `INSERT INTO ductus_effects (uuid, actor_pk, name, args, ordered, generation, message_id,
    on_success, on_failure, max_attempts, due_at, created_at)
SELECT u.uuid, $1, u.name, u.args, u.ordered, $2, u.mid, NULLIF(u.ons, ''), NULLIF(u.onf, ''), u.maxa, now() + u.delay` + us + `, now()
FROM unnest($3::text[], $4::text[], $5::json[], $6::bool[], $7::bigint[], $8::text[], $9::text[], $10::int[], $11::bigint[])
    WITH ORDINALITY AS u(uuid, name, args, ordered, mid, ons, onf, maxa, delay, ord)
ORDER BY u.ord`
	sqlStageSends = `INSERT INTO ductus_outbox (source_pk, to_type, to_id, message, args, delay_us, due_at, created_at)
SELECT $1, u.tt, u.ti, u.msg, u.args, u.delay, now(), now()
FROM unnest($2::text[], $3::text[], $4::text[], $5::json[], $6::bigint[]) WITH ORDINALITY AS u(tt, ti, msg, args, delay, ord)
ORDER BY u.ord`
	sqlCancelReminders = `DELETE FROM ductus_reminders WHERE actor_pk = $1 AND name = ANY($2::text[])`
	sqlSetReminders    = `INSERT INTO ductus_reminders (actor_pk, name, message, args, schedule, next_at, due_at)
SELECT $1, u.name, u.msg, u.args, u.sched, COALESCE(u.at, now() + u.inn` + us + `), COALESCE(u.at, now() + u.inn` + us + `) + u.jit` + us + `
FROM unnest($2::text[], $3::text[], $4::json[], $5::json[], $6::timestamptz[], $7::bigint[], $8::bigint[]) AS u(name, msg, args, sched, at, inn, jit)
ON CONFLICT (actor_pk, name) DO UPDATE SET message = excluded.message, args = excluded.args, schedule = excluded.schedule,
    next_at = excluded.next_at, due_at = excluded.due_at, lease_owner = NULL`
	sqlStageBroadcasts = `INSERT INTO ductus_broadcasts (actor_pk, name, value, state_version, created_at)
SELECT $1, u.name, u.value, u.sv, now() FROM unnest($2::text[], $3::json[], $4::int[]) WITH ORDINALITY AS u(name, value, sv, ord)
ORDER BY u.ord`
	// sqlOpenLane makes sure the actor has a lane of the kind. An existing
	// lane is left as it is (its head backing off, or claimed by a worker)
	// but locked: a claim or settle in progress, which may not see the rows
	// just staged, finishes first, and if it deleted the lane this inserts
	// it again.
	sqlOpenLane = `INSERT INTO ductus_lanes (actor_pk, kind, due_at) VALUES ($1, $2, now())
ON CONFLICT (actor_pk, kind) DO UPDATE SET due_at = ductus_lanes.due_at WHERE false`
)

// stage queues what the turn staged into the commit's batch.
func stage(bt *batch, p *store.TurnCommitParams) {
	pk, gen := p.Lease.ActorPK, p.Lease.Generation
	if n := len(p.Effects); n > 0 {
		uuids, names, ons, onf := make([]string, n), make([]string, n), make([]string, n), make([]string, n)
		args := make([][]byte, n)
		ordered := make([]bool, n)
		mids, delays := make([]int64, n), make([]int64, n)
		maxa := make([]int32, n)
		anyOrdered := false
		for i, e := range p.Effects {
			uuids[i], names[i], ons[i], onf[i] = e.UUID, e.Name, e.OnSuccess, e.OnFailure
			args[i], ordered[i], mids[i], delays[i], maxa[i] = e.Args, e.Ordered, e.MessageID, store.Micros(e.Delay), int32(e.MaxAttempts)
			anyOrdered = anyOrdered || e.Ordered
		}
		bt.exec("commit: stage effects", sqlStageEffects, pk, gen, uuids, names, args, ordered, mids, ons, onf, maxa, delays)
		if anyOrdered {
			bt.exec("commit: open the effect lane", sqlOpenLane, pk, "effect")
		}
	}
	if n := len(p.Sends); n > 0 {
		tt, ti, msg := make([]string, n), make([]string, n), make([]string, n)
		args := make([][]byte, n)
		delays := make([]int64, n)
		for i, s := range p.Sends {
			tt[i], ti[i], msg[i], args[i], delays[i] = s.To.Type, s.To.ID, s.Message, s.Args, store.Micros(s.Delay)
		}
		bt.exec("commit: stage sends", sqlStageSends, pk, tt, ti, msg, args, delays)
		bt.exec("commit: open the send lane", sqlOpenLane, pk, "send")
	}
	if len(p.Reminders) > 0 {
		// Changes apply in order: the last change of each name wins.
		last := map[string]int{}
		for i, r := range p.Reminders {
			last[r.Name] = i
		}
		var cancel, names, msgs []string
		var args, scheds [][]byte
		var at []pgtype.Timestamptz
		var in, jit []int64
		for i, r := range p.Reminders {
			if last[r.Name] != i {
				continue
			}
			if r.Cancel {
				cancel = append(cancel, r.Name)
				continue
			}
			names, msgs = append(names, r.Name), append(msgs, r.Message)
			args, scheds = append(args, r.Args), append(scheds, r.Schedule)
			at, in, jit = append(at, timestamptz(r.NextAt)), append(in, store.Micros(r.NextIn)), append(jit, store.Micros(r.Jitter))
		}
		if len(cancel) > 0 {
			bt.exec("commit: cancel reminders", sqlCancelReminders, pk, cancel)
		}
		if len(names) > 0 {
			bt.exec("commit: set reminders", sqlSetReminders, pk, names, msgs, args, scheds, at, in, jit)
		}
	}
	if n := len(p.Broadcasts); n > 0 {
		names := make([]string, n)
		values := make([][]byte, n)
		svs := make([]int32, n)
		for i, bc := range p.Broadcasts {
			names[i], values[i], svs[i] = bc.Name, bc.Value, int32(bc.StateVersion)
		}
		bt.exec("commit: stage broadcasts", sqlStageBroadcasts, pk, names, values, svs)
	}
}

// shareActors is the first statement of every transaction that changes
// rows hanging off actors without going through the actor's fenced path
// (effect outcomes, reminder fires, outbox deliveries, lane claims, dead
// letter retries): a key-share lock on those actors, in (type, id) order.
// It orders the transaction behind a destroy of the actor (which locks the
// actor, then deletes its rows) instead of against it: without it a
// destroy could hold the actor and wait for a child row this transaction
// holds while this one waits for the actor. Key share does not conflict
// with commits or enqueues (they take no-key update locks).
func shareActors(bt *batch, op, from string, arg any) {
	bt.exec(op, `SELECT 1 FROM ductus_actors WHERE pk IN (`+from+`) ORDER BY type, id FOR KEY SHARE`, arg)
}

// The subqueries shareActors takes, per kind of row.
const (
	actorsOfPKs         = `SELECT unnest($1::bigint[])`
	actorsOfEffects     = `SELECT actor_pk FROM ductus_effects WHERE id = ANY($1::bigint[])`
	actorsOfReminders   = `SELECT actor_pk FROM ductus_reminders WHERE id = ANY($1::bigint[])`
	actorsOfSends       = `SELECT source_pk FROM ductus_outbox WHERE id = ANY($1::bigint[])`
	actorsOfDeadLetters = `SELECT actor_pk FROM ductus_dead_letters WHERE message_id = ANY($1::bigint[])`
)

// Settling a lane points it at its current head (the due time of the
// earliest pending row of its kind) or deletes it when nothing is pending.
// The lanes are locked by one statement and settled by the next, whose
// snapshot is taken under the locks, so rows staged by a commit the lock
// waited for are seen.
const (
	sqlLockLanes   = `SELECT actor_pk FROM ductus_lanes WHERE kind = $1 AND actor_pk = ANY($2::bigint[]) ORDER BY actor_pk FOR UPDATE`
	settleLanesFmt = `WITH h AS (
    SELECT l.pk, e.due_at FROM unnest($1::bigint[]) AS l(pk) LEFT JOIN LATERAL (%s) e ON true
), d AS (
    DELETE FROM ductus_lanes x USING h WHERE x.kind = '%s' AND x.actor_pk = h.pk AND h.due_at IS NULL
)
UPDATE ductus_lanes x SET due_at = h.due_at FROM h WHERE x.kind = '%s' AND x.actor_pk = h.pk AND h.due_at IS NOT NULL`
	effectHead = `SELECT due_at FROM ductus_effects WHERE actor_pk = l.pk AND state = 'pending' AND ordered ORDER BY id LIMIT 1`
	sendHead   = `SELECT due_at FROM ductus_outbox WHERE source_pk = l.pk AND due_at IS NOT NULL ORDER BY id LIMIT 1`
)

var (
	sqlSettleEffectLanes = fmt.Sprintf(settleLanesFmt, effectHead, "effect", "effect")
	sqlSettleSendLanes   = fmt.Sprintf(settleLanesFmt, sendHead, "send", "send")
)

// settleLanes queues the lock and the settle of the given lanes.
func settleLanes(bt *batch, kind string, pks []int64) {
	if len(pks) == 0 {
		return
	}
	bt.exec("settle the "+kind+" lanes", sqlLockLanes, kind, pks)
	q := sqlSettleEffectLanes
	if kind == "send" {
		q = sqlSettleSendLanes
	}
	bt.exec("settle the "+kind+" lanes", q, pks)
}
