package mysql

import (
	"context"
	"database/sql"
	"fmt"
	"strconv"
	"strings"

	"github.com/ductus/ductus/actor"
	"github.com/ductus/ductus/runtime/store"
	"github.com/ductus/ductus/runtime/store/sqltx"
)

// The fenced operations (take, commit) are one round trip each. They open
// by locking the actor row (a no-op UPDATE by primary key, held until
// COMMIT, so nobody can claim the actor between the check and the writes:
// a claimer skips a locked row), then evaluate the fence under that lock
// into @ductus_ok: owner, generation and an unexpired lease all match.
// @ductus_ok guards every later statement of the batch, so a stale
// owner's batch writes nothing and commits an empty transaction; a SELECT
// in the batch tells the adapter which happened.
//
// The guard is computed by a query, never from ROW_COUNT(): when the
// client has gone (a SIGKILLed worker), the server still runs the whole
// multi-statement batch, but ROW_COUNT() reads -1 after a statement whose
// OK packet could not be sent, which would let a matched fence count as
// unmatched and commit the fence's row alone. (Measured on MariaDB 10.11.)

func lost(l store.LeaseRef) error {
	return fmt.Errorf("%w: actor %d generation %d", actor.ErrLostActivation, l.ActorPK, l.Generation)
}

const (
	fenceWhere = `pk = ? AND lease_owner = ? AND generation = ? AND lease_expires > NOW(6)`
	sqlLockRow = `UPDATE ductus_actors SET state_version = state_version WHERE pk = ?`
)

// idTable is a derived table "v" of IDs (column id) from one JSON array
// argument (idList). Joined first (STRAIGHT_JOIN) to a table's primary key,
// it makes a locking statement look its rows up one by one: an IN list on a
// small table may be run as a scan instead, which would lock (and wait for)
// every actor's rows. The join needs FORCE INDEX (PRIMARY): unforced, the
// optimizer read the actor's claimed rows through (actor_pk, generation)
// once per ID (128 x 129 rows examined per commit of 128, ~40 ms, a hot
// actor bounded at ~1,300 messages/s on MariaDB 10.11). JSON_TABLE (MySQL
// 8.0, MariaDB 10.6) is one argument of any length, where a UNION ALL of
// single-row SELECTs is one per ID.
const idTable = `JSON_TABLE(?, '$[*]' COLUMNS (id BIGINT PATH '$')) v`

// idList is idTable's argument.
func idList(ids []int64) string {
	var b strings.Builder
	b.WriteByte('[')
	for i, id := range ids {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(strconv.FormatInt(id, 10))
	}
	b.WriteByte(']')
	return b.String()
}

// fenceArgs are fenceWhere's arguments.
func fenceArgs(owner string, l store.LeaseRef) []any { return []any{l.ActorPK, owner, l.Generation} }

// Locking statements (UPDATE, DELETE, SET with a subquery) address rows by
// primary key or by an equality on an index prefix, never by a range on a
// secondary index: InnoDB locks the first record past such a range even at
// READ COMMITTED, which is another actor's row, and two actors' turns then
// wait on each other. "generation + 0 < ?" keeps the older-generation test
// off the index (the scan is the actor's own rows by actor_pk), and FORCE
// INDEX keeps the optimizer from scanning the (always small) claimed table
// whole, which would lock every actor's rows.
const olderClaims = `SELECT COUNT(*) FROM ductus_claimed FORCE INDEX (ductus_claimed_actor) WHERE actor_pk = ? AND generation + 0 < ?`

// MessageTake implements store.Backend in one round trip.
func (b *Backend) MessageTake(ctx context.Context, p *store.MessageTakeParams) ([]store.Message, error) {
	var out []store.Message
	err := b.txn(ctx, nil, func(s *session) error {
		out = nil
		l := p.Lease
		w := newBatch("take messages")
		w.exec(sqlLockRow, l.ActorPK)
		// A paused actor's cached activation takes nothing. The rows taken
		// now carry @ductus_at, which tells a take that moved nothing.
		w.exec(`SET @ductus_ok = (SELECT COUNT(*) FROM ductus_actors WHERE `+fenceWhere+`),
			@ductus_take = (SELECT COUNT(*) FROM ductus_actors WHERE `+fenceWhere+` AND paused = 0), @ductus_at = NOW(6)`,
			append(fenceArgs(p.Owner, l), fenceArgs(p.Owner, l)...)...)
		w.exec(`SET @ductus_readopted = @ductus_take * (`+olderClaims+`)`, l.ActorPK, l.Generation)
		w.exec(`UPDATE ductus_claimed FORCE INDEX (ductus_claimed_actor) SET generation = ?, attempt = attempt + 1, claimed_at = @ductus_at
			WHERE actor_pk = ? AND generation + 0 < ? AND @ductus_take`, l.Generation, l.ActorPK, l.Generation)
		// The window numbers the first limit ready rows, so the rows moved
		// and the rows re-adopted together stay within limit.
		w.exec(`INSERT INTO ductus_claimed (message_id, actor_pk, seq, generation, attempt, claimed_at)
			SELECT r.message_id, r.actor_pk, r.seq, ?, m.attempts + 1, @ductus_at
			FROM (SELECT message_id, actor_pk, seq, ROW_NUMBER() OVER (ORDER BY seq) AS rn
				FROM (SELECT message_id, actor_pk, seq FROM ductus_ready WHERE actor_pk = ? ORDER BY seq LIMIT ?) f) r
			JOIN ductus_messages m ON m.id = r.message_id
			WHERE @ductus_take AND r.rn <= ? - @ductus_readopted AND r.seq < `+notDue,
			l.Generation, l.ActorPK, p.Limit, p.Limit, l.ActorPK, p.Limit)
		var ok, got int64
		w.query(func(rows *sql.Rows) error {
			for rows.Next() {
				if err := rows.Scan(&ok, &got); err != nil {
					return err
				}
			}
			return nil
		}, `SELECT @ductus_ok, (SELECT COUNT(*) FROM ductus_claimed WHERE actor_pk = ? AND generation = ? AND claimed_at = @ductus_at)`,
			l.ActorPK, l.Generation)
		msgs := moveAndRead(w, l)
		if err := s.commit(ctx, w); err != nil {
			return err
		}
		if ok != 1 {
			return lost(l)
		}
		if got > 0 {
			out = *msgs
		}
		return nil
	})
	return out, err
}

// notDue bounds a take at the first ready message not yet due (a message
// backing off, or delayed, holds back every later one); only the first
// limit rows are looked at, so a take costs the same whatever the mailbox
// or the history holds. Arguments: actor, limit.
const notDue = `COALESCE((SELECT MIN(x.seq) FROM (SELECT seq, due_at FROM ductus_ready WHERE actor_pk = ? ORDER BY seq LIMIT ?) x
	WHERE x.due_at > NOW(6)), 9223372036854775807)`

// moveAndRead removes the generation's newly claimed rows from ready and
// reads the generation's claimed messages in order.
func moveAndRead(w *batch, l store.LeaseRef) *[]store.Message {
	w.exec(`DELETE r FROM ductus_claimed c FORCE INDEX (ductus_claimed_actor) STRAIGHT_JOIN ductus_ready r ON r.message_id = c.message_id
		WHERE c.actor_pk = ? AND c.generation = ? AND @ductus_take`, l.ActorPK, l.Generation)
	msgs := new([]store.Message)
	w.query(func(rows *sql.Rows) error {
		for rows.Next() {
			var m store.Message
			var args string
			if err := rows.Scan(&m.ID, &m.Seq, &m.Name, &args, &m.Attempt, &m.Ask, &m.EnqueuedAt, &m.AvailableAt); err != nil {
				return err
			}
			m.Args = []byte(args)
			*msgs = append(*msgs, m)
		}
		return nil
	}, `SELECT c.message_id, c.seq, m.name, m.args, c.attempt, m.ask, m.enqueued_at, m.available_at
		FROM ductus_claimed c JOIN ductus_messages m ON m.id = c.message_id
		WHERE c.actor_pk = ? AND c.generation = ? AND @ductus_take ORDER BY c.seq`, l.ActorPK, l.Generation)
	return msgs
}

// TurnCommit implements store.Backend in one round trip. The fence also
// requires every completed, failed and returned message to be claimed by
// this generation, so a commit retried after its first attempt landed is
// refused (ErrLostActivation) instead of applied twice.
func (b *Backend) TurnCommit(ctx context.Context, p *store.TurnCommitParams) (store.TurnCommitResult, error) {
	var res store.TurnCommitResult
	err := b.txn(ctx, nil, func(s *session) error {
		res = store.TurnCommitResult{}
		l := p.Lease
		finished := int64(len(p.Completed))
		if p.Failed != nil && p.Failed.Dead {
			finished++
		}
		seen := map[int64]bool{}
		var ids []int64
		mark := func(id int64) {
			if !seen[id] {
				seen[id] = true
				ids = append(ids, id)
			}
		}
		for _, c := range p.Completed {
			mark(c.MessageID)
		}
		if p.Failed != nil {
			mark(p.Failed.MessageID)
		}
		for _, id := range p.Returned {
			mark(id)
		}
		// With no failure and nothing returned the commit leaves the ready
		// rows as they are, so the state write computes head_due too.
		readyChanges := p.Failed != nil || len(p.Returned) > 0
		head := `(SELECT r.due_at FROM ductus_ready r WHERE r.actor_pk = ? ORDER BY r.seq LIMIT 1)`
		w := newBatch("commit: write the turn")
		w.exec(sqlLockRow, l.ActorPK)
		fence, args := `SET @ductus_ok = (SELECT COUNT(*) FROM ductus_actors WHERE `+fenceWhere+`)`, fenceArgs(p.Owner, l)
		if len(ids) > 0 {
			// The claimed rows are read by primary key, one lookup each (a
			// derived table of the IDs joined in that order), so this locking
			// read touches no other actor's rows.
			fence += ` AND (SELECT COUNT(*) FROM ` + idTable + ` STRAIGHT_JOIN ductus_claimed c FORCE INDEX (PRIMARY) ON c.message_id = v.id
				WHERE c.actor_pk = ? AND c.generation = ?) = ?`
			args = append(args, idList(ids), l.ActorPK, l.Generation, len(ids))
		}
		w.exec(fence, args...)
		var ok int64
		w.query(scanInt(&ok), `SELECT @ductus_ok`)
		state := `UPDATE ductus_actors SET state = COALESCE(?, state), state_version = ?, unfinished = unfinished - ?, updated_at = NOW(6)`
		sargs := []any{sqltx.NullBytes(p.State), p.StateVersion, finished}
		if !readyChanges {
			state += `, head_due = ` + head
			sargs = append(sargs, l.ActorPK)
		}
		w.exec(state+` WHERE pk = ? AND `+guard, append(sargs, l.ActorPK)...)
		complete(w, p.Completed)
		if f := p.Failed; f != nil {
			fail(w, l.ActorPK, f, true)
		}
		if len(p.Returned) > 0 {
			w.exec(`INSERT INTO ductus_ready (message_id, actor_pk, seq, due_at)
				SELECT id, actor_pk, seq, available_at FROM ductus_messages WHERE actor_pk = ? AND id IN (`+sqltx.List(len(p.Returned))+`) AND @ductus_ok = 1`,
				append([]any{l.ActorPK}, sqltx.Int64s(p.Returned)...)...)
		}
		// By primary key: the runtime names every message it took
		// (completed, failed or returned).
		if len(ids) > 0 {
			w.exec(`DELETE c FROM `+idTable+` STRAIGHT_JOIN ductus_claimed c FORCE INDEX (PRIMARY) ON c.message_id = v.id
				WHERE c.actor_pk = ? AND c.generation = ? AND @ductus_ok = 1`,
				idList(ids), l.ActorPK, l.Generation)
		}
		stage(w, p)
		if readyChanges {
			// head_due from the final ready rows (before the take below, as
			// on SQLite: taken messages keep the actor due).
			w.exec(`UPDATE ductus_actors SET head_due = `+head+` WHERE pk = ? AND @ductus_ok = 1`, l.ActorPK, l.ActorPK)
		}
		var next *[]store.Message
		if p.TakeNext > 0 {
			// Messages an earlier generation left claimed are re-adopted by
			// MessageTake only (they exist just before a generation's first
			// take); with any, TakeNext takes nothing and the runtime's next
			// MessageTake runs them first.
			w.exec(`SET @ductus_take = @ductus_ok = 1 AND (SELECT paused FROM ductus_actors WHERE pk = ?) = 0 AND (`+olderClaims+`) = 0`,
				l.ActorPK, l.ActorPK, l.Generation)
			w.exec(`INSERT INTO ductus_claimed (message_id, actor_pk, seq, generation, attempt, claimed_at)
				SELECT r.message_id, r.actor_pk, r.seq, ?, m.attempts + 1, NOW(6)
				FROM ductus_ready r JOIN ductus_messages m ON m.id = r.message_id
				WHERE r.actor_pk = ? AND @ductus_take AND r.seq < `+notDue+` ORDER BY r.seq LIMIT ?`,
				l.Generation, l.ActorPK, l.ActorPK, p.TakeNext, p.TakeNext)
			next = moveAndRead(w, l)
		}
		publishDone(w, p.SignalDone)
		if err := s.commit(ctx, w); err != nil {
			return err
		}
		if ok != 1 {
			return fmt.Errorf("%w: actor %d generation %d (the lease is lost, or the turn's messages are no longer claimed by it)",
				actor.ErrLostActivation, l.ActorPK, l.Generation)
		}
		if next != nil {
			res.Next = *next
		}
		return nil
	})
	return res, err
}

// complete marks messages done with their results: a single UPDATE by
// primary key, with CASE for a batch.
func complete(w *batch, done []store.Completion) {
	if len(done) == 1 {
		c := done[0]
		w.exec(`UPDATE ductus_messages SET completed_at = NOW(6), result = ?, attempts = ? WHERE id = ? AND @ductus_ok = 1`, sqltx.NullBytes(c.Result), c.Attempt, c.MessageID)
		return
	}
	for _, ch := range sqltx.Chunks(len(done), 300) {
		part := done[ch[0]:ch[1]]
		var results, attempts strings.Builder
		var ra, aa, ids []any
		for _, c := range part {
			results.WriteString(" WHEN ? THEN ?")
			attempts.WriteString(" WHEN ? THEN ?")
			ra = append(ra, c.MessageID, sqltx.NullBytes(c.Result))
			aa = append(aa, c.MessageID, c.Attempt)
			ids = append(ids, c.MessageID)
		}
		w.exec(`UPDATE ductus_messages SET completed_at = NOW(6), result = CASE id`+results.String()+` END,
			attempts = CASE id`+attempts.String()+` END WHERE id IN (`+sqltx.List(len(part))+`) AND @ductus_ok = 1`, append(append(ra, aa...), ids...)...)
	}
}

// fail records a failed attempt: back to ready after the back-off, or
// dead. guarded statements carry the commit's fence.
func fail(w *batch, actorPK int64, f *store.Failure, guarded bool) {
	g := ""
	if guarded {
		g = " AND @ductus_ok = 1"
	}
	if f.Dead {
		w.exec(`UPDATE ductus_messages SET error = ?, attempts = GREATEST(attempts, ?), dead_at = NOW(6) WHERE id = ?`+g, f.Error, f.Attempt, f.MessageID)
		w.exec(`INSERT INTO ductus_dead_letters (message_id, actor_pk, type, dead_at) SELECT ?, pk, type, NOW(6) FROM ductus_actors WHERE pk = ?`+g,
			f.MessageID, actorPK)
		return
	}
	w.exec(`UPDATE ductus_messages SET error = ?, attempts = GREATEST(attempts, ?) WHERE id = ?`+g, f.Error, f.Attempt, f.MessageID)
	w.exec(`INSERT INTO ductus_ready (message_id, actor_pk, seq, due_at)
		SELECT id, actor_pk, seq, NOW(6) + INTERVAL ? MICROSECOND FROM ductus_messages WHERE id = ?`+g, store.Micros(f.RetryAfter), f.MessageID)
}

// ActorDestroy implements store.Backend: the actor row is locked, then
// every row hanging off it is deleted by index (the schema has no
// cascading foreign keys), then the row itself.
func (b *Backend) ActorDestroy(ctx context.Context, ref actor.Ref) (bool, error) {
	var existed bool
	err := b.txn(ctx, nil, func(s *session) error {
		var pk int64
		existed = false
		a := newBatch("destroy the actor: lock it")
		a.query(func(rows *sql.Rows) error {
			for rows.Next() {
				existed = true
				if err := rows.Scan(&pk); err != nil {
					return err
				}
			}
			return nil
		}, `SELECT pk FROM ductus_actors WHERE type = ? AND id = ? FOR UPDATE`, ref.Type, ref.ID)
		if err := s.run(ctx, a); err != nil || !existed {
			return err
		}
		w := newBatch("destroy the actor")
		destroyStmts(w, pk)
		return s.commit(ctx, w)
	})
	b.pks.Drop(ref)
	return existed, err
}

func destroyStmts(w *batch, pk int64) {
	for _, q := range []string{
		`DELETE FROM ductus_ready WHERE actor_pk = ?`,
		`DELETE FROM ductus_claimed WHERE actor_pk = ?`,
		`DELETE FROM ductus_dead_letters WHERE actor_pk = ?`,
		`DELETE FROM ductus_messages WHERE actor_pk = ?`,
		`DELETE FROM ductus_effects WHERE actor_pk = ?`,
		`DELETE FROM ductus_outbox WHERE source_pk = ?`,
		`DELETE FROM ductus_lanes WHERE actor_pk = ?`,
		`DELETE FROM ductus_reminders WHERE actor_pk = ?`,
		`DELETE FROM ductus_broadcasts WHERE actor_pk = ?`,
		`DELETE FROM ductus_actors WHERE pk = ?`,
	} {
		w.exec(q, pk)
	}
}
