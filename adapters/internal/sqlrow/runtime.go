package sqlrow

import "github.com/ductus/ductus/runtime/store"

// Column lists the adapters' runtime statements share, each in the order
// the adapter's scan function of that row reads it. Tables are aliased a
// (ductus_actors), m (ductus_messages), d (ductus_dead_letters) and e
// (ductus_effects).
const (
	// ActorColumns are a store.ActorInfo's.
	ActorColumns = `a.pk, a.type, a.id, a.state, a.state_version, a.generation, COALESCE(a.lease_owner, ''), a.lease_expires,
	a.paused, a.unfinished, a.head_due, a.created_at, a.updated_at`
	// DeadLetterColumns are a store.DeadLetter's.
	DeadLetterColumns = `d.message_id, a.type, a.id, m.seq, m.name, m.args, COALESCE(m.error, ''), m.attempts, d.dead_at`
	// EffectColumns are a claimed store.Effect's (SQLite and MySQL; the
	// Postgres claim returns its rows from the UPDATE itself).
	EffectColumns = `e.id, e.uuid, e.actor_pk, a.type, a.id, e.name, e.args, e.ordered, e.generation, a.generation,
	e.attempts, e.max_attempts, COALESCE(e.on_success, ''), COALESCE(e.on_failure, ''), e.message_id, e.created_at`
	// EffectInfoColumns are a store.EffectInfo's.
	EffectInfoColumns = `e.id, e.uuid, a.type, a.id, e.name, e.args, e.ordered, e.state, e.attempts, e.result, e.error,
	e.generation, e.created_at, e.finished_at, e.message_id, e.max_attempts`
)

// MessageStatus is a message's durable outcome from its row: completed
// (with its result) if done, dead (with its error) if dead, else pending.
func MessageStatus(id int64, done, dead bool, result []byte, errText string) store.MessageStatus {
	st := store.MessageStatus{ID: id}
	switch {
	case done:
		st.State, st.Result = store.MessageCompleted, result
	case dead:
		st.State, st.Error = store.MessageDead, errText
	default:
		st.State = store.MessagePending
	}
	return st
}

// InOrder returns the statuses of ids in their order, from those found;
// an ID without a row is store.MessageMissing (pruned, or never existed).
func InOrder(ids []int64, found map[int64]store.MessageStatus) []store.MessageStatus {
	out := make([]store.MessageStatus, 0, len(ids))
	for _, id := range ids {
		st, ok := found[id]
		if !ok {
			st = store.MessageStatus{ID: id, State: store.MessageMissing}
		}
		out = append(out, st)
	}
	return out
}

// ScanLeaseRef reads a row of (actor pk, generation).
func ScanLeaseRef(sc Scanner) (store.LeaseRef, error) {
	var l store.LeaseRef
	err := sc.Scan(&l.ActorPK, &l.Generation)
	return l, err
}

// Versions reads the applied versions of a migration line's record.
func Versions(rows Rows) (map[int]bool, error) {
	out := map[int]bool{}
	for rows.Next() {
		var v int
		if err := rows.Scan(&v); err != nil {
			return nil, err
		}
		out[v] = true
	}
	return out, rows.Err()
}
