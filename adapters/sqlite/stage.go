package sqlite

import (
	"context"
	"database/sql"

	"github.com/ductus/ductus/runtime/store"
	"github.com/ductus/ductus/runtime/store/sqltx"
)

// stage writes what the turn staged, inside the commit transaction.
func (b *Backend) stage(ctx context.Context, tx *wtx, p *store.TurnCommitParams) error {
	pk, gen := p.Lease.ActorPK, p.Lease.Generation
	if len(p.Effects) > 0 {
		ordered := false
		for _, c := range sqltx.Chunks(len(p.Effects), 200) {
			args := make([]any, 0, 12*(c[1]-c[0]))
			rows := ""
			for j, e := range p.Effects[c[0]:c[1]] {
				if j > 0 {
					rows += ","
				}
				rows += `(?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ` + now + ` + ?, ` + now + `)`
				args = append(args, e.UUID, pk, e.Name, string(e.Args), e.Ordered, gen, e.MessageID,
					sqltx.NullString(e.OnSuccess), sqltx.NullString(e.OnFailure), e.MaxAttempts, store.Micros(e.Delay))
				ordered = ordered || e.Ordered
			}
			if _, err := tx.ExecContext(ctx, `INSERT INTO ductus_effects (uuid, actor_pk, name, args, ordered, generation, message_id,
				on_success, on_failure, max_attempts, due_at, created_at) VALUES `+rows, args...); err != nil {
				return classify("commit: stage effects", err)
			}
		}
		if ordered {
			if err := openLane(ctx, tx, pk, "effect"); err != nil {
				return err
			}
		}
	}
	if len(p.Sends) > 0 {
		for _, c := range sqltx.Chunks(len(p.Sends), 200) {
			args := make([]any, 0, 6*(c[1]-c[0]))
			rows := ""
			for j, s := range p.Sends[c[0]:c[1]] {
				if j > 0 {
					rows += ","
				}
				rows += `(?, ?, ?, ?, ?, ?, ` + now + `, ` + now + `)`
				args = append(args, pk, s.To.Type, s.To.ID, s.Message, string(s.Args), store.Micros(s.Delay))
			}
			if _, err := tx.ExecContext(ctx, `INSERT INTO ductus_outbox (source_pk, to_type, to_id, message, args, delay_us, due_at, created_at)
				VALUES `+rows, args...); err != nil {
				return classify("commit: stage sends", err)
			}
		}
		if err := openLane(ctx, tx, pk, "send"); err != nil {
			return err
		}
	}
	for _, r := range p.Reminders {
		if r.Cancel {
			if _, err := tx.ExecContext(ctx, `DELETE FROM ductus_reminders WHERE actor_pk = ? AND name = ?`, pk, r.Name); err != nil {
				return classify("commit: cancel a reminder", err)
			}
			continue
		}
		// next_at is the nominal time, due_at the jittered delivery.
		next := `COALESCE(?, ` + now + ` + ?)`
		if _, err := tx.ExecContext(ctx, `INSERT INTO ductus_reminders (actor_pk, name, message, args, schedule, next_at, due_at)
			VALUES (?, ?, ?, ?, ?, `+next+`, `+next+` + ?)
			ON CONFLICT (actor_pk, name) DO UPDATE SET message = excluded.message, args = excluded.args, schedule = excluded.schedule,
				next_at = excluded.next_at, due_at = excluded.due_at, lease_owner = NULL`,
			pk, r.Name, r.Message, string(r.Args), string(r.Schedule),
			nullTime(r.NextAt), store.Micros(r.NextIn), nullTime(r.NextAt), store.Micros(r.NextIn), store.Micros(r.Jitter)); err != nil {
			return classify("commit: set a reminder", err)
		}
	}
	if len(p.Broadcasts) > 0 {
		args := make([]any, 0, 4*len(p.Broadcasts))
		rows := ""
		for j, bc := range p.Broadcasts {
			if j > 0 {
				rows += ","
			}
			rows += `(?, ?, ?, ?, ` + now + `)`
			args = append(args, pk, bc.Name, string(bc.Value), bc.StateVersion)
		}
		if _, err := tx.ExecContext(ctx, `INSERT INTO ductus_broadcasts (actor_pk, name, value, state_version, created_at) VALUES `+rows, args...); err != nil {
			return classify("commit: stage broadcasts", err)
		}
	}
	return nil
}

// openLane makes sure the actor has a lane row of kind; an existing lane
// (its head backing off, or claimed by a worker) is left as it is. A new
// lane's head is the earliest pending row, due when that row is.
func openLane(ctx context.Context, tx *wtx, pk int64, kind string) error {
	_, err := tx.ExecContext(ctx, `INSERT INTO ductus_lanes (actor_pk, kind, due_at) VALUES (?, ?, `+now+`)
		ON CONFLICT (actor_pk, kind) DO NOTHING`, pk, kind)
	return classify("commit: open the "+kind+" lane", err)
}

// settleLane points an actor's lane at its current head (the due time of the
// earliest pending row of that kind), or deletes it when nothing is pending.
func settleLane(ctx context.Context, tx *wtx, pk int64, kind string) error {
	head := `SELECT due_at FROM ductus_effects WHERE actor_pk = ? AND state = 'pending' AND ordered = 1 ORDER BY id LIMIT 1`
	if kind == "send" {
		head = `SELECT due_at FROM ductus_outbox WHERE source_pk = ? AND due_at IS NOT NULL ORDER BY id LIMIT 1`
	}
	var due sql.NullInt64
	err := tx.QueryRowContext(ctx, head, pk).Scan(&due)
	if err == sql.ErrNoRows {
		_, err = tx.ExecContext(ctx, `DELETE FROM ductus_lanes WHERE actor_pk = ? AND kind = ?`, pk, kind)
		return classify("settle the "+kind+" lane", err)
	}
	if err != nil {
		return classify("settle the "+kind+" lane", err)
	}
	_, err = tx.ExecContext(ctx, `UPDATE ductus_lanes SET due_at = ? WHERE actor_pk = ? AND kind = ?`, due.Int64, pk, kind)
	return classify("settle the "+kind+" lane", err)
}
