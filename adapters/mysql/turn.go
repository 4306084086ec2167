package mysql

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
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

// fenceArgs are fenceWhere's arguments.
func fenceArgs(owner string, l store.LeaseRef) []any { return []any{l.ActorPK, owner, l.Generation} }

// Locking statements (UPDATE, DELETE, SET with a subquery) address rows by
// primary key or by an equality on an index prefix, never by a range on a
// secondary index: InnoDB locks the first record past such a range even at
// READ COMMITTED, which is another actor's row, and two actors' turns then
// wait on each other. FORCE INDEX keeps the optimizer from scanning the
// (always small) claimed table whole, which would lock every actor's rows.
// (ductus_take_1 keeps the same rules for the take.)

// MessageTake implements store.Backend in one round trip: START
// TRANSACTION, one CALL of ductus_take_1 (migrations/mysql/
// 0004_take_procedure.sql), COMMIT.
func (b *Backend) MessageTake(ctx context.Context, p *store.MessageTakeParams) ([]store.Message, error) {
	var out []store.Message
	err := b.txn(ctx, nil, func(s *session) error {
		w := newBatch("take messages")
		t := callTake(w, p.Owner, p.Lease, p.Limit, "TRUE")
		if err := s.commit(ctx, w); err != nil {
			return err
		}
		if t.ok != 1 {
			return lost(p.Lease)
		}
		out = t.msgs
		return nil
	})
	return out, err
}

// take is what ductus_take_1 answered: whether the fence held, and the
// messages taken (the count it also returns is len(msgs)).
type take struct {
	ok   int64
	msgs []store.Message
}

// callTake adds a CALL of ductus_take_1 to w; guard is an SQL boolean (the
// commit's fence, or TRUE). Its answer is in the returned take once w ran.
func callTake(w *batch, owner string, l store.LeaseRef, limit int, guard string) *take {
	t := &take{}
	w.query(func(rows *sql.Rows) error {
		t.msgs = nil
		var taken int64
		for rows.Next() {
			if err := rows.Scan(&t.ok, &taken); err != nil {
				return err
			}
		}
		if err := rows.Err(); err != nil {
			return err
		}
		if !rows.NextResultSet() {
			if err := rows.Err(); err != nil {
				return err
			}
			return errors.New("ductus_take_1 returned no messages result set")
		}
		for rows.Next() {
			var m store.Message
			var args string
			if err := rows.Scan(&m.ID, &m.Seq, &m.Name, &args, &m.Attempt, &m.Ask, &m.EnqueuedAt, &m.AvailableAt); err != nil {
				return err
			}
			m.Args = []byte(args)
			t.msgs = append(t.msgs, m)
		}
		return nil
	}, `CALL ductus_take_1(?, ?, ?, ?, `+guard+`)`, l.ActorPK, owner, l.Generation, limit)
	return t
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
		// The turn's claimed rows: the generation's range of the claimed
		// index, filtered by the IDs: one pass over at most the rows the
		// generation took, and no other actor's rows. (A JSON_TABLE of the
		// IDs joined to the primary key looked each ID up on its own; joined
		// unforced, the optimizer walked this range once per ID: 128 x 129
		// rows per commit of 128.) The fence counts them, the DELETE below
		// removes them.
		claimed := `ductus_claimed c FORCE INDEX (ductus_claimed_actor)
			WHERE c.actor_pk = ? AND c.generation = ? AND c.message_id IN (` + sqltx.List(len(ids)) + `)`
		claimedArgs := append([]any{l.ActorPK, l.Generation}, sqltx.Int64s(ids)...)
		if len(ids) > 0 {
			fence += ` AND (SELECT COUNT(*) FROM ` + claimed + `) = ?`
			args = append(append(args, claimedArgs...), len(ids))
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
		// The runtime names every message it took (completed, failed or
		// returned).
		if len(ids) > 0 {
			w.exec(`DELETE c FROM `+claimed+` AND @ductus_ok = 1`, claimedArgs...)
		}
		stage(w, p)
		if readyChanges {
			// head_due from the final ready rows (before the take below, as
			// on SQLite: taken messages keep the actor due).
			w.exec(`UPDATE ductus_actors SET head_due = `+head+` WHERE pk = ? AND @ductus_ok = 1`, l.ActorPK, l.ActorPK)
		}
		var next *take
		if p.TakeNext > 0 {
			// The same procedure as MessageTake, guarded by the commit's
			// fence. (It would re-adopt an earlier generation's claims as
			// MessageTake does, but there are none after a generation's
			// first take.)
			next = callTake(w, p.Owner, l, p.TakeNext, "@ductus_ok = 1")
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
			res.Next = next.msgs
		}
		return nil
	})
	return res, err
}

// complete marks messages done with their results. Messages that share a
// result and an attempt (a turn of Tells: no result, first attempt) are one
// UPDATE by an IN list of their keys (group.go); only a batch with many
// distinct results (Asks) needs the CASE form (100 rows: 2.2 ms against
// 1.4 ms as one group in one scratch timing of each, MariaDB 10.11,
// 2026-12-03).
func complete(w *batch, done []store.Completion) {
	type key struct {
		result  string
		null    bool
		attempt int
	}
	groups := grouped(len(done), func(i int) (key, any) {
		c := done[i]
		return key{result: string(c.Result), null: c.Result == nil, attempt: c.Attempt}, c.MessageID
	})
	if len(groups) <= maxGroups {
		for _, g := range groups {
			var result any
			if !g.key.null {
				result = g.key.result
			}
			for _, ch := range sqltx.Chunks(len(g.ids), 1000) {
				part := g.ids[ch[0]:ch[1]]
				w.exec(`UPDATE ductus_messages SET completed_at = NOW(6), result = ?, attempts = ? WHERE id IN (`+sqltx.List(len(part))+`) AND @ductus_ok = 1`,
					append([]any{result, g.key.attempt}, part...)...)
			}
		}
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
