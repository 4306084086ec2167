package mysql

import (
	"strconv"
	"strings"

	"github.com/ductus/ductus/runtime/store"
	"github.com/ductus/ductus/runtime/store/sqltx"
)

// guard is the condition every write of a commit batch carries: the fence
// matched.
const guard = `@ductus_ok = 1`

// stage adds what the turn staged to the commit batch, each statement
// guarded by the fence.
func stage(w *batch, p *store.TurnCommitParams) {
	pk, gen := p.Lease.ActorPK, p.Lease.Generation
	if len(p.Effects) > 0 {
		ordered := false
		for _, c := range sqltx.Chunks(len(p.Effects), 200) {
			part := p.Effects[c[0]:c[1]]
			args := make([]any, 0, 11*len(part))
			for _, e := range part {
				args = append(args, e.UUID, pk, e.Name, string(e.Args), e.Ordered, gen, e.MessageID,
					sqltx.NullString(e.OnSuccess), sqltx.NullString(e.OnFailure), e.MaxAttempts, store.Micros(e.Delay))
				ordered = ordered || e.Ordered
			}
			w.exec(guardedInsert(`ductus_effects (uuid, actor_pk, name, args, ordered, generation, message_id,
				on_success, on_failure, max_attempts, due_at, created_at)`, len(part),
				"?", "?", "?", "?", "?", "?", "?", "?", "?", "?", "NOW(6) + INTERVAL ? MICROSECOND", "NOW(6)"), args...)
		}
		if ordered {
			openLane(w, pk, "effect", true)
		}
	}
	if len(p.Sends) > 0 {
		for _, c := range sqltx.Chunks(len(p.Sends), 200) {
			part := p.Sends[c[0]:c[1]]
			args := make([]any, 0, 6*len(part))
			for _, s := range part {
				args = append(args, pk, s.To.Type, s.To.ID, s.Message, string(s.Args), store.Micros(s.Delay))
			}
			w.exec(guardedInsert(`ductus_outbox (source_pk, to_type, to_id, message, args, delay_us, due_at, created_at)`, len(part),
				"?", "?", "?", "?", "?", "?", "NOW(6)", "NOW(6)"), args...)
		}
		openLane(w, pk, "send", true)
	}
	for _, r := range p.Reminders {
		if r.Cancel {
			w.exec(`DELETE FROM ductus_reminders WHERE actor_pk = ? AND name = ? AND `+guard, pk, r.Name)
			continue
		}
		// Replace by name, keeping the row (its id keys the occurrences):
		// an UPDATE by the unique key, then an INSERT when no row of that
		// name exists (rows of the actor change only under its lock). This
		// takes no next-key lock, unlike INSERT ... ON DUPLICATE KEY UPDATE
		// on a secondary unique key.
		// next_at is the nominal time, due_at the jittered delivery.
		next := `COALESCE(?, NOW(6) + INTERVAL ? MICROSECOND)`
		due := next + ` + INTERVAL ? MICROSECOND`
		at := nullTime(r.NextAt)
		in, jit := store.Micros(r.NextIn), store.Micros(r.Jitter)
		w.exec(`UPDATE ductus_reminders SET message = ?, args = ?, schedule = ?, next_at = `+next+`, due_at = `+due+`, lease_owner = NULL
			WHERE actor_pk = ? AND name = ? AND `+guard, r.Message, string(r.Args), string(r.Schedule), at, in, at, in, jit, pk, r.Name)
		w.exec(`INSERT INTO ductus_reminders (actor_pk, name, message, args, schedule, next_at, due_at)
			SELECT ?, ?, ?, ?, ?, `+next+`, `+due+` FROM DUAL
			WHERE `+guard+` AND NOT EXISTS (SELECT 1 FROM ductus_reminders x WHERE x.actor_pk = ? AND x.name = ?)`,
			pk, r.Name, r.Message, string(r.Args), string(r.Schedule), at, in, at, in, jit, pk, r.Name)
	}
	if len(p.Broadcasts) > 0 {
		args := make([]any, 0, 4*len(p.Broadcasts))
		for _, bc := range p.Broadcasts {
			args = append(args, pk, bc.Name, string(bc.Value), bc.StateVersion)
		}
		w.exec(guardedInsert(`ductus_broadcasts (actor_pk, name, value, state_version, created_at)`, len(p.Broadcasts),
			"?", "?", "?", "?", "NOW(6)"), args...)
	}
}

// guardedInsert is a multi-row INSERT that writes nothing unless the
// fence matched: the rows are a derived table (UNION ALL of SELECTs, which
// both servers accept; their VALUES table constructors differ), inserted
// in order.
func guardedInsert(target string, n int, exprs ...string) string {
	var q strings.Builder
	q.WriteString("INSERT INTO " + target + " SELECT ")
	for i := range exprs {
		if i > 0 {
			q.WriteString(", ")
		}
		q.WriteString("v.c" + strconv.Itoa(i))
	}
	q.WriteString(" FROM (")
	for r := 0; r < n; r++ {
		if r > 0 {
			q.WriteString(" UNION ALL ")
		}
		q.WriteString("SELECT ")
		q.WriteString(strconv.Itoa(r))
		if r == 0 {
			q.WriteString(" AS k")
		}
		for i, e := range exprs {
			q.WriteString(", ")
			q.WriteString(e)
			if r == 0 {
				q.WriteString(" AS c" + strconv.Itoa(i))
			}
		}
	}
	q.WriteString(") v WHERE " + guard + " ORDER BY v.k")
	return q.String()
}

// rows repeats a VALUES group n times.
func rows(n int, group string) string {
	return strings.TrimSuffix(strings.Repeat(group+",", n), ",")
}

// openLane makes sure the actor has a lane row of kind; an existing lane
// (its head backing off, or claimed by a worker) is left as it is. The
// duplicate is on the primary key, so InnoDB locks just that record.
func openLane(w *batch, pk int64, kind string, guarded bool) {
	cond := ""
	if guarded {
		cond = " WHERE " + guard
	}
	w.exec(`INSERT INTO ductus_lanes (actor_pk, kind, due_at) SELECT ?, ?, NOW(6) FROM DUAL`+cond+` ON DUPLICATE KEY UPDATE actor_pk = actor_pk`, pk, kind)
}

// laneEnd marks a lane with nothing pending between the two statements of
// settleLane.
const laneEnd = `'9999-12-31 23:59:59.999999'`

// settleLane points an actor's lane at its current head (the due time of
// the earliest pending row of that kind) or deletes it when nothing is
// pending. Both statements lock only the lane row: the UPDATE's subquery
// is a consistent read at READ COMMITTED, and the DELETE has none.
func settleLane(w *batch, pk int64, kind string) {
	head := `SELECT e.due_at FROM ductus_effects e WHERE e.actor_pk = ? AND e.state = 'pending' AND e.ordered = 1 ORDER BY e.id LIMIT 1`
	if kind == "send" {
		head = `SELECT o.due_at FROM ductus_outbox o WHERE o.source_pk = ? AND o.delivered_at IS NULL ORDER BY o.id LIMIT 1`
	}
	w.exec(`UPDATE ductus_lanes SET due_at = COALESCE((`+head+`), `+laneEnd+`) WHERE actor_pk = ? AND kind = ?`, pk, pk, kind)
	w.exec(`DELETE FROM ductus_lanes WHERE actor_pk = ? AND kind = ? AND due_at = `+laneEnd, pk, kind)
}

// publishDone tells other processes' listeners that messages finished
// (guarded by the commit's fence).
func publishDone(w *batch, ids []int64) {
	for _, c := range sqltx.Chunks(len(ids), 500) {
		w.exec(guardedInsert(`ductus_signals (kind, message_id, created_at)`, c[1]-c[0], "2", "?", "NOW(6)"), sqltx.Int64s(ids[c[0]:c[1]])...)
	}
}
