package postgres

import (
	"context"
	"fmt"
	"strconv"
	"strings"

	"github.com/jackc/pgx/v5"

	"github.com/ductus/ductus/actor"
	"github.com/ductus/ductus/runtime/store"
)

// lowSeq is the actor's first unfinished sequence, next_seq - unfinished:
// a lower bound of every ready and claimed row of the actor. Per-actor
// order makes the finished messages a prefix of the actor's sequence: the
// take moves ready rows in order and stops at the first not due; a commit
// finishes a prefix of what it took (completions, then a dead letter) and
// fails or returns the rest; an operator skips the head. The counters move
// together: an enqueue adds its n fresh messages to both (a refused batch
// or a duplicate gets no sequence; a retried dead letter is a fresh
// message at the tail), finishing subtracts from unfinished alone, and a
// destroy drops the row. So the bound only grows, and a statement that
// reads it from a newer row version than its snapshot's skips only rows
// that were finished meanwhile. $1 is the actor.
const lowSeq = `(SELECT next_seq - unfinished FROM ductus_actors WHERE pk = $1)`

const (
	// sqlTake is the whole take in one statement. lease checks the lease
	// and takes a key-share lock on the actor (a destroy waits for it, or
	// this waits for the destroy and finds no actor); it is the only row
	// when the lease holds and nothing is due, and absent when the lease
	// is lost. Messages left claimed by an earlier generation are re-adopted
	// first; then ready messages move to claimed in sequence order up to
	// the first one not yet due (head reads at most $4 rows off the ready
	// table's primary key). Every scan of the actor's ready and claimed
	// rows starts at lo, the actor's first unfinished sequence (see
	// sqlLowSeq), so the read costs the same whatever the history: the
	// index entries of delivered messages that vacuum has not yet removed
	// all lie below it, and a scan from the start of the actor's range
	// walked every one (228 ms per take behind 1M delivered messages).
	// A paused actor takes nothing. Each taken message's row is read by
	// its key, one lookup a row (the lateral subquery, kept apart by
	// OFFSET 0): as a plain join, the generic plan made while
	// ductus_messages was empty (a fresh database, before autovacuum's
	// first ANALYZE, or for good where autovacuum is off) hashed the taken
	// rows and scanned the whole table for them, and kept doing so as it
	// grew: 52 ms of a 94 ms take of 128 messages behind 155,000 rows
	// (auto_explain, 2026-12-07). (The owner is compared with IS NOT
	// DISTINCT FROM, which no index serves, so the generic plan finds the
	// row by its primary key rather than through the lease-owner index.)
	sqlTake = `WITH lease AS (
    SELECT pk, paused, next_seq - unfinished AS lo FROM ductus_actors
    WHERE pk = $1 AND lease_owner IS NOT DISTINCT FROM $2 AND generation = $3 AND lease_expires > now()
    FOR KEY SHARE
),
ok AS (SELECT 1 FROM lease WHERE NOT paused),
readopt AS (
    UPDATE ductus_claimed c SET generation = $3, attempt = c.attempt + 1, claimed_at = now()
    WHERE c.actor_pk = $1 AND c.seq >= (SELECT lo FROM lease) AND c.generation < $3 AND EXISTS (SELECT 1 FROM ok)
    RETURNING c.message_id, c.seq, c.attempt
),
head AS (
    SELECT r.seq, bool_or(r.due_at > now()) OVER (ORDER BY r.seq) AS blocked
    FROM (SELECT seq, due_at FROM ductus_ready WHERE actor_pk = $1 AND seq >= (SELECT lo FROM lease) ORDER BY seq LIMIT $4) r
),
moved AS (
    DELETE FROM ductus_ready r
    WHERE r.actor_pk = $1 AND EXISTS (SELECT 1 FROM ok)
        AND r.seq IN (SELECT seq FROM head WHERE NOT blocked ORDER BY seq LIMIT GREATEST($4 - (SELECT count(*) FROM readopt), 0))
    RETURNING r.message_id, r.seq, r.attempts
),
ins AS (
    INSERT INTO ductus_claimed (actor_pk, seq, message_id, generation, attempt, claimed_at)
    SELECT $1, mv.seq, mv.message_id, $3, mv.attempts + 1, now() FROM moved mv
    RETURNING message_id, seq, attempt
),
took AS (
    SELECT message_id, seq, attempt FROM readopt
    UNION ALL SELECT message_id, seq, attempt FROM ins
    UNION ALL SELECT message_id, seq, attempt FROM ductus_claimed
        WHERE actor_pk = $1 AND seq >= (SELECT lo FROM lease) AND generation = $3 AND (EXISTS (SELECT 1 FROM readopt) OR EXISTS (SELECT 1 FROM ins))
)
SELECT COALESCE(t.message_id, 0), COALESCE(t.seq, 0), COALESCE(m.name, ''), m.args, COALESCE(t.attempt, 0), COALESCE(m.ask, false),
    COALESCE(m.enqueued_at, 'epoch'), COALESCE(m.available_at, 'epoch')
FROM lease LEFT JOIN (took t CROSS JOIN LATERAL (
    SELECT name, args, ask, enqueued_at, available_at FROM ductus_messages WHERE id = t.message_id OFFSET 0
) m) ON true
ORDER BY t.seq`

	// sqlFence is the commit's first statement: the fenced check and the
	// state write in one update, which locks the actor row (so everything
	// after it is ordered by that lock: a destroy or an enqueue racing the
	// commit waits, never deadlocks) and fails the whole pipelined
	// transaction unless owner, generation and an unexpired lease still
	// match at the moment the lock is held (clock_timestamp(), not the
	// transaction's start: a commit that waited for the lock past its
	// expiry is refused). The owner is compared with IS NOT DISTINCT FROM,
	// which no index serves, so the generic plan takes the primary key.
	sqlFence = `WITH f AS (
    UPDATE ductus_actors SET state = COALESCE($4::json, state), state_version = $5, unfinished = unfinished - $6, updated_at = now()
    WHERE pk = $1 AND lease_owner IS NOT DISTINCT FROM $2 AND generation = $3 AND lease_expires > clock_timestamp()
    RETURNING 1
)
SELECT ductus_raise('` + codeLostActivation + `', 'lost activation', '') WHERE NOT EXISTS (SELECT 1 FROM f)`
	// sqlFinish records the completed messages (a result row each; the
	// message row is not rewritten) and clears the turn's claimed rows
	// (failed and returned ones are re-inserted into ready by their own
	// statements). The fence has already counted the $6 finished ones out
	// of unfinished, so the turn's rows start $6 below lowSeq.
	sqlFinish = `WITH done AS (
    INSERT INTO ductus_results (message_id, attempt, completed_at, result)
    SELECT u.id, u.attempt, now(), u.result FROM unnest($3::bigint[], $4::json[], $5::int[]) AS u(id, result, attempt)
)
DELETE FROM ductus_claimed WHERE actor_pk = $1 AND seq >= ` + lowSeq + ` - $6::int AND generation = $2`
	sqlFailDead = `WITH m AS (
    UPDATE ductus_messages SET error = $2, attempts = GREATEST(attempts, $3), dead_at = now() WHERE id = $1 RETURNING id
)
INSERT INTO ductus_dead_letters (message_id, actor_pk, type, dead_at) SELECT m.id, a.pk, a.type, now() FROM m, ductus_actors a WHERE a.pk = $4`
	sqlFailRetry = `WITH m AS (
    UPDATE ductus_messages SET error = $2, attempts = GREATEST(attempts, $3) WHERE id = $1 RETURNING id, actor_pk, seq, attempts
)
INSERT INTO ductus_ready (actor_pk, seq, message_id, due_at, attempts) SELECT actor_pk, seq, id, now() + $4::bigint` + us + `, attempts FROM m`
	sqlReturn = `INSERT INTO ductus_ready (actor_pk, seq, message_id, due_at, attempts)
SELECT actor_pk, seq, id, available_at, attempts FROM ductus_messages WHERE actor_pk = $1 AND id = ANY($2::bigint[])`
	// sqlHead points head_due at the first ready row as this transaction
	// leaves them; it runs after every membership change, with a snapshot
	// taken under the fence's lock (so it sees every enqueue that lock
	// waited for). While the new head is due and head_due already says
	// "due" (an actor working through a backlog), head_due keeps its value
	// and nothing is written: the fence's update, which changes no indexed
	// column, stays a HOT update, so a busy actor's commits add nothing to
	// the actor indexes (the claim index above all). What reads head_due
	// sees the same thing: due work or not, and when it comes due.
	sqlHead = `UPDATE ductus_actors a SET head_due = h.due
FROM (SELECT (SELECT due_at FROM ductus_ready WHERE actor_pk = $1 AND seq >= ` + lowSeq + ` ORDER BY seq LIMIT 1) AS due OFFSET 0) h
WHERE a.pk = $1 AND a.head_due IS DISTINCT FROM h.due
    AND (h.due IS NULL OR h.due > now() OR a.head_due IS NULL OR a.head_due > now())`
)

// sqlTakeAsync lets the take's transaction commit without waiting for its
// WAL flush. The take changes nothing a caller was promised: if the server
// crashes before the flush, the taken messages are ready again and their
// attempt is not counted, as if the take never ran. Whatever is durable and
// depends on it (the turn's commit, whose take it was) is later in the WAL,
// so a synchronous commit of it flushes the take first. It saves an fsync
// wait on the way of every pass that starts with a take: an Ask answered
// by a worker that was idle.
const sqlTakeAsync = `SELECT set_config('synchronous_commit', 'off', true)`

// MessageTake implements store.Backend (one round trip).
func (b *Backend) MessageTake(ctx context.Context, p *store.MessageTakeParams) ([]store.Message, error) {
	var bt batch
	var out []store.Message
	rows := 0
	bt.exec("take messages: commit without waiting for the flush", sqlTakeAsync)
	queueTake(&bt, p.Owner, p.Lease, p.Limit, &out, &rows)
	if err := bt.run(ctx, b.pool); err != nil {
		return nil, err
	}
	if rows == 0 {
		return nil, fmt.Errorf("%w: actor %d generation %d", actor.ErrLostActivation, p.Lease.ActorPK, p.Lease.Generation)
	}
	return out, nil
}

// queueTake adds the take to a batch; rows counts result rows (none means
// the lease is lost).
func queueTake(bt *batch, owner string, l store.LeaseRef, limit int, out *[]store.Message, rows *int) {
	bt.query("take messages", func(r pgx.Rows) error {
		*rows++
		var m store.Message
		if err := r.Scan(&m.ID, &m.Seq, &m.Name, &m.Args, &m.Attempt, &m.Ask, &m.EnqueuedAt, &m.AvailableAt); err != nil {
			return err
		}
		if m.ID != 0 {
			*out = append(*out, m)
		}
		return nil
	}, sqlTake, l.ActorPK, owner, l.Generation, limit)
}

// TurnCommit implements store.Backend: the whole fenced transaction,
// staged rows, the next take and the NOTIFY of finished asks are one
// pipelined batch, one round trip.
func (b *Backend) TurnCommit(ctx context.Context, p *store.TurnCommitParams) (store.TurnCommitResult, error) {
	var res store.TurnCommitResult
	l := p.Lease
	var bt batch
	finished := len(p.Completed)
	if p.Failed != nil && p.Failed.Dead {
		finished++
	}
	bt.exec("commit: fenced state write", sqlFence, l.ActorPK, p.Owner, l.Generation, p.State, int32(p.StateVersion), int32(finished))
	ids := make([]int64, len(p.Completed))
	results := make([][]byte, len(p.Completed))
	attempts := make([]int32, len(p.Completed))
	for i, c := range p.Completed {
		ids[i], results[i], attempts[i] = c.MessageID, c.Result, int32(c.Attempt)
	}
	bt.exec("commit: complete messages", sqlFinish, l.ActorPK, l.Generation, ids, results, attempts, int32(finished))
	if f := p.Failed; f != nil {
		if f.Dead {
			bt.exec("commit: dead-letter the message", sqlFailDead, f.MessageID, f.Error, int32(f.Attempt), l.ActorPK)
		} else {
			bt.exec("commit: schedule the retry", sqlFailRetry, f.MessageID, f.Error, int32(f.Attempt), store.Micros(f.RetryAfter))
		}
	}
	if len(p.Returned) > 0 {
		bt.exec("commit: return untouched messages", sqlReturn, l.ActorPK, p.Returned)
	}
	stage(&bt, p)
	bt.exec("commit: point at the next head", sqlHead, l.ActorPK)
	rows := 0
	if p.TakeNext > 0 {
		queueTake(&bt, p.Owner, l, p.TakeNext, &res.Next, &rows)
	}
	for _, payload := range donePayloads(p.SignalDone) {
		bt.exec("commit: notify", sqlNotify, b.channel, payload)
	}
	if err := bt.run(ctx, b.pool); err != nil {
		if sqlState(err) == codeLostActivation {
			return store.TurnCommitResult{}, fmt.Errorf("%w: actor %d generation %d", actor.ErrLostActivation, l.ActorPK, l.Generation)
		}
		return store.TurnCommitResult{}, err
	}
	return res, nil
}

// donePayloads encodes finished message IDs as "d:1,2,3" payloads under
// NOTIFY's 8000-byte limit.
func donePayloads(ids []int64) []string {
	var out []string
	var sb strings.Builder
	for _, id := range ids {
		s := strconv.FormatInt(id, 10)
		if sb.Len() > 0 && sb.Len()+1+len(s) > 7900 {
			out = append(out, sb.String())
			sb.Reset()
		}
		if sb.Len() == 0 {
			sb.WriteString("d:")
		} else {
			sb.WriteByte(',')
		}
		sb.WriteString(s)
	}
	if sb.Len() > 0 {
		out = append(out, sb.String())
	}
	return out
}

// ActorDestroy implements store.Backend (one round trip). The first
// statement locks the actor; the deletes run after it, each with a
// snapshot taken under the lock, so rows committed by a transaction the
// lock waited for are deleted too. The cold tables go by cascade.
func (b *Backend) ActorDestroy(ctx context.Context, ref actor.Ref) (bool, error) {
	if !storable(ref) {
		return false, nil
	}
	const pk = `(SELECT pk FROM ductus_actors WHERE type = $1 AND id = $2)`
	var existed bool
	var bt batch
	bt.query("destroy: lock the actor", func(pgx.Rows) error { existed = true; return nil },
		`SELECT pk FROM ductus_actors WHERE type = $1 AND id = $2 FOR UPDATE`, ref.Type, ref.ID)
	bt.exec("destroy: delete ready rows", `DELETE FROM ductus_ready WHERE actor_pk = `+pk, ref.Type, ref.ID)
	bt.exec("destroy: delete claimed rows", `DELETE FROM ductus_claimed WHERE actor_pk = `+pk, ref.Type, ref.ID)
	bt.exec("destroy: delete results", `DELETE FROM ductus_results WHERE message_id IN (SELECT id FROM ductus_messages WHERE actor_pk = `+pk+`)`, ref.Type, ref.ID)
	bt.exec("destroy: delete messages", `DELETE FROM ductus_messages WHERE actor_pk = `+pk, ref.Type, ref.ID)
	bt.exec("destroy: delete the actor", `DELETE FROM ductus_actors WHERE type = $1 AND id = $2`, ref.Type, ref.ID)
	b.pks.Drop(ref)
	if err := bt.run(ctx, b.pool); err != nil {
		return false, err
	}
	return existed, nil
}
