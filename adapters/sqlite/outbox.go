package sqlite

import (
	"context"
	"database/sql"
	"fmt"
	"time"

	"github.com/ductus/ductus/runtime/store"
)

// OutboxClaim implements store.Backend: due send lanes are leased, then
// every pending row of each claimed source (up to Limit in all) in staging
// order.
func (b *Backend) OutboxClaim(ctx context.Context, p *store.OutboxClaimParams) ([]store.OutboxRow, error) {
	if p.Limit <= 0 {
		return nil, nil
	}
	var out []store.OutboxRow
	err := b.write(ctx, nil, func(tx *wtx) error {
		const op = "claim sends"
		ttl := store.Micros(p.TTL)
		lanes, err := tx.QueryContext(ctx, `UPDATE ductus_lanes SET due_at = `+now+` + ?
			WHERE kind = 'send' AND actor_pk IN (SELECT actor_pk FROM ductus_lanes WHERE kind = 'send' AND due_at <= `+now+`
				ORDER BY due_at LIMIT ?) RETURNING actor_pk`, ttl, p.Limit)
		if err != nil {
			return classify(op, err)
		}
		pks, err := scanIDs(lanes, nil)
		if err != nil {
			return classify(op, err)
		}
		for _, pk := range pks {
			if len(out) >= p.Limit {
				// Give the lane back at once rather than at lease expiry.
				if err := settleLane(ctx, tx, pk, "send"); err != nil {
					return err
				}
				continue
			}
			rows, err := tx.QueryContext(ctx, `UPDATE ductus_outbox SET lease_owner = ?, attempts = attempts + 1
				WHERE id IN (SELECT id FROM ductus_outbox WHERE source_pk = ? AND due_at IS NOT NULL ORDER BY id LIMIT ?)
				RETURNING id, to_type, to_id, message, args, delay_us, attempts`, p.Owner, pk, p.Limit-len(out))
			if err != nil {
				return classify(op, err)
			}
			var src store.OutboxRow
			if err := tx.QueryRowContext(ctx, `SELECT type, id FROM ductus_actors WHERE pk = ?`, pk).Scan(&src.Source.Type, &src.Source.ID); err != nil {
				rows.Close()
				return classify(op, err)
			}
			start := len(out)
			for rows.Next() {
				r := src
				var args string
				var delay int64
				if err := rows.Scan(&r.ID, &r.To.Type, &r.To.ID, &r.Message, &args, &delay, &r.Attempt); err != nil {
					rows.Close()
					return classify(op, err)
				}
				r.Args, r.Delay = []byte(args), time.Duration(delay)*time.Microsecond
				out = append(out, r)
			}
			if err := rows.Close(); err != nil {
				return classify(op, err)
			}
			sortByID(out[start:])
		}
		return nil
	})
	return out, err
}

func sortByID(rows []store.OutboxRow) {
	for i := 1; i < len(rows); i++ {
		for j := i; j > 0 && rows[j].ID < rows[j-1].ID; j-- {
			rows[j], rows[j-1] = rows[j-1], rows[j]
		}
	}
}

// OutboxDeliver implements store.Backend. A source's rows go in order; when
// one cannot be delivered (the target's mailbox is full) it and the rows
// after it wait, so the source's order holds.
func (b *Backend) OutboxDeliver(ctx context.Context, p *store.OutboxDeliverParams) ([]store.OutboxResult, error) {
	var out []store.OutboxResult
	err := b.write(ctx, nil, func(tx *wtx) error {
		const op = "deliver sends"
		out = out[:0]
		blocked := map[string]bool{}
		sources := map[string]int64{}
		for _, r := range p.Rows {
			var srcPK int64
			err := tx.QueryRowContext(ctx, `SELECT source_pk FROM ductus_outbox WHERE id = ? AND lease_owner = ? AND due_at IS NOT NULL`,
				r.ID, p.Owner).Scan(&srcPK)
			if err == sql.ErrNoRows {
				out = append(out, store.OutboxResult{ID: r.ID, Gone: true})
				continue
			}
			if err != nil {
				return classify(op, err)
			}
			key := r.Source.Type + "\x00" + r.Source.ID
			sources[key] = srcPK
			if blocked[key] {
				if _, err := tx.ExecContext(ctx, `UPDATE ductus_outbox SET lease_owner = NULL, attempts = attempts - 1 WHERE id = ?`, r.ID); err != nil {
					return classify(op, err)
				}
				out = append(out, store.OutboxResult{ID: r.ID, Retry: true})
				continue
			}
			res, err := b.enqueue(ctx, tx, &store.MailboxEnqueueParams{SkipFull: true, MailboxCap: p.MailboxCap, Messages: []store.NewMessage{{
				Ref: r.To, Name: r.Message, Args: r.Args, Delay: r.Delay, IdempotencyKey: fmt.Sprintf("send:%d", r.ID),
			}}})
			if err != nil {
				return err
			}
			if res[0].Full {
				blocked[key] = true
				if _, err := tx.ExecContext(ctx, `UPDATE ductus_outbox SET lease_owner = NULL, due_at = `+now+` + ? WHERE id = ?`,
					store.Micros(p.RetryAfter), r.ID); err != nil {
					return classify(op, err)
				}
				out = append(out, store.OutboxResult{ID: r.ID, Retry: true})
				continue
			}
			if _, err := tx.ExecContext(ctx, `UPDATE ductus_outbox SET due_at = NULL, lease_owner = NULL, delivered_at = `+now+`, message_id = ? WHERE id = ?`,
				res[0].MessageID, r.ID); err != nil {
				return classify(op, err)
			}
			out = append(out, store.OutboxResult{ID: r.ID, MessageID: res[0].MessageID, TargetPK: res[0].ActorPK})
		}
		for _, pk := range sources {
			if err := settleLane(ctx, tx, pk, "send"); err != nil {
				return err
			}
		}
		return nil
	})
	return out, err
}

// BroadcastRead implements store.Backend.
func (b *Backend) BroadcastRead(ctx context.Context, p *store.BroadcastReadParams) ([]store.Broadcast, error) {
	rows, err := b.r.QueryContext(ctx, `SELECT b.id, a.type, a.id, b.name, b.value, b.state_version, b.created_at
		FROM ductus_broadcasts b JOIN ductus_actors a ON a.pk = b.actor_pk WHERE b.id > ? ORDER BY b.id LIMIT ?`, p.AfterID, limitOr(p.Limit, 500))
	if err != nil {
		return nil, classify("read broadcasts", err)
	}
	defer rows.Close()
	var out []store.Broadcast
	for rows.Next() {
		var bc store.Broadcast
		var value string
		var created int64
		if err := rows.Scan(&bc.ID, &bc.Ref.Type, &bc.Ref.ID, &bc.Name, &value, &bc.StateVersion, &created); err != nil {
			return nil, classify("read broadcasts", err)
		}
		bc.Value = []byte(value)
		bc.CreatedAt = micros(sql.NullInt64{Int64: created, Valid: true})
		out = append(out, bc)
	}
	return out, classify("read broadcasts", rows.Err())
}

// BroadcastLatestID implements store.Backend.
func (b *Backend) BroadcastLatestID(ctx context.Context) (int64, error) {
	var id sql.NullInt64
	err := b.r.QueryRowContext(ctx, `SELECT MAX(id) FROM ductus_broadcasts`).Scan(&id)
	return id.Int64, classify("read the latest broadcast", err)
}

// BroadcastMarkDelivered implements store.Backend.
func (b *Backend) BroadcastMarkDelivered(ctx context.Context, ids []int64) error {
	if len(ids) == 0 {
		return nil
	}
	return b.write(ctx, nil, func(tx *wtx) error {
		_, err := tx.ExecContext(ctx, `UPDATE ductus_broadcasts SET delivered_at = `+now+`
			WHERE delivered_at IS NULL AND id IN (SELECT value FROM json_each(?))`, jsonInts(ids))
		return classify("mark broadcasts delivered", err)
	})
}
