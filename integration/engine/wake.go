package engine

import "slices"

// Waking lanes after an intake.
//
// An intake's commit wakes every lane it queued to (Host.Notify): a cached
// activation takes the new message at once, an idle lane is claimed by its
// key. A paused destination's lanes run nothing, so waking them is work
// with no result: a take that finds the actor paused, or a claim that
// skips it and then signals the other processes, each a write transaction
// of its own; on SQLite's single writer that was about a third of the
// writer's work while a destination was paused (2.3 of 7.5 s of CPU in a
// profile of mllp_ingest_1conn, 2026-12-06). So the lanes of
// a destination this engine knows to be paused are not woken. Nothing
// waits on that wake-up: a resumed lane is found by the runtime's claim
// scan or its poll of the activations it holds (Host.Resume wakes a cached
// one at once), and a pause made through another engine is learnt within
// pauseRefresh, until when its lanes are woken as before.

// wakeable is the actors to wake after an intake committed: pks as TellTx
// returned them, less those whose lane message held marks as queued to a
// paused destination. held is by lane message; pks has one entry per lane
// message unless some were duplicates, and then (the two no longer line
// up) every actor is woken, as before.
func wakeable(pks []int64, held []bool) []int64 {
	if len(pks) != len(held) || !slices.Contains(held, true) {
		return pks
	}
	out := pks[:0:0]
	for i, pk := range pks {
		if !held[i] {
			out = append(out, pk)
		}
	}
	return out
}
