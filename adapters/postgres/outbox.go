package postgres

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/ductus/ductus/runtime/store"
)

const (
	// sqlClaimSends leases up to $3 pending rows of the claimed sources,
	// in lane order and then staging order.
	sqlClaimSends = `WITH src AS (SELECT s.pk, s.ord FROM unnest($1::bigint[]) WITH ORDINALITY AS s(pk, ord)),
cand AS (
    SELECT c.id, src.ord, row_number() OVER (ORDER BY src.ord, c.id) AS rn
    FROM src CROSS JOIN LATERAL (
        SELECT id FROM ductus_outbox WHERE source_pk = src.pk AND due_at IS NOT NULL ORDER BY id LIMIT $3) c
)
UPDATE ductus_outbox o SET lease_owner = $2, attempts = o.attempts + 1
FROM cand, ductus_actors a WHERE o.id = cand.id AND cand.rn <= $3 AND a.pk = o.source_pk
RETURNING cand.ord, o.source_pk, o.id, a.type, a.id, o.to_type, o.to_id, o.message, o.args, o.delay_us, o.attempts`
	sqlLockSends = `SELECT id, source_pk FROM ductus_outbox WHERE id = ANY($1::bigint[]) AND lease_owner = $2 AND due_at IS NOT NULL
ORDER BY id FOR UPDATE`
	// Delivered rows find their message by its idempotency key (written
	// earlier in the same transaction, or by an earlier delivery).
	sqlDelivered = `UPDATE ductus_outbox o SET due_at = NULL, lease_owner = NULL, delivered_at = now(),
    message_id = (SELECT m.id FROM ductus_actors a JOIN ductus_messages m ON m.actor_pk = a.pk
        WHERE a.type = o.to_type AND a.id = o.to_id AND m.idem_key = 'send:' || o.id::text)
WHERE o.id = ANY($1::bigint[])`
	sqlSendFull    = `UPDATE ductus_outbox SET lease_owner = NULL, due_at = now() + $2::bigint` + us + ` WHERE id = ANY($1::bigint[])`
	sqlSendBlocked = `UPDATE ductus_outbox SET lease_owner = NULL, attempts = attempts - 1 WHERE id = ANY($1::bigint[])`
)

// OutboxClaim implements store.Backend: due send lanes are leased (one
// round trip, committed at once like the effect lanes), then every pending
// row of each claimed source, up to Limit in all, in staging order; a lane
// that got no rows is given back at once rather than at lease expiry.
func (b *Backend) OutboxClaim(ctx context.Context, p *store.OutboxClaimParams) ([]store.OutboxRow, error) {
	if p.Limit <= 0 {
		return nil, nil
	}
	ttl := store.Micros(p.TTL)
	var lanes []int64
	var bt batch
	bt.query("claim send lanes", func(rows pgx.Rows) error {
		var pk int64
		if err := rows.Scan(&pk); err != nil {
			return err
		}
		lanes = append(lanes, pk)
		return nil
	}, sqlClaimLanes, ttl, p.Limit, "send")
	if err := bt.run(ctx, b.pool); err != nil || len(lanes) == 0 {
		return nil, err
	}
	slices.Sort(lanes)
	type claimed struct {
		ord int64
		row store.OutboxRow
	}
	var got []claimed
	took := map[int64]bool{}
	bt = batch{}
	shareActors(&bt, "claim sends", actorsOfPKs, lanes)
	bt.exec("claim sends", sqlLockLanes, "send", lanes)
	// A custom plan: the generic one made on an empty ductus_outbox
	// updates the claimed rows through a scan of the whole table (see
	// customPlan).
	customPlan(&bt, "claim sends", func() {
		bt.query("claim sends", func(rows pgx.Rows) error {
			var c claimed
			var src, delay int64
			r := &c.row
			if err := rows.Scan(&c.ord, &src, &r.ID, &r.Source.Type, &r.Source.ID, &r.To.Type, &r.To.ID, &r.Message, &r.Args, &delay, &r.Attempt); err != nil {
				return err
			}
			r.Delay = time.Duration(delay) * time.Microsecond
			took[src] = true
			got = append(got, c)
			return nil
		}, sqlClaimSends, lanes, p.Owner, p.Limit)
	})
	if err := bt.run(ctx, b.pool); err != nil {
		return nil, err
	}
	var idle []int64
	for _, pk := range lanes {
		if !took[pk] {
			idle = append(idle, pk)
		}
	}
	if len(idle) > 0 {
		bt = batch{}
		shareActors(&bt, "give back send lanes", actorsOfPKs, idle)
		settleLanes(&bt, "send", idle)
		if err := bt.run(ctx, b.pool); err != nil {
			return nil, err
		}
	}
	slices.SortFunc(got, func(a, b claimed) int {
		if a.ord != b.ord {
			return int(a.ord - b.ord)
		}
		return int(a.row.ID - b.row.ID)
	})
	out := make([]store.OutboxRow, len(got))
	for i, c := range got {
		out[i] = c.row
	}
	return out, nil
}

// OutboxDeliver implements store.Backend in three round trips: lock the
// rows, lock and read every target (the enqueuer), then write the messages
// and retire the rows. A source's rows go in order, each as its own
// enqueue against the targets' state; when one cannot be delivered (the
// target's mailbox is full) it and the source's later rows wait, so the
// source's order holds. Each row's ID is its idempotency key at the
// target ("send:<id>"), so a row is delivered once.
func (b *Backend) OutboxDeliver(ctx context.Context, p *store.OutboxDeliverParams) ([]store.OutboxResult, error) {
	if len(p.Rows) == 0 {
		return nil, nil
	}
	var out []store.OutboxResult
	err := b.txn(ctx, func(t *txn) error {
		out = out[:0]
		ids := make([]int64, len(p.Rows))
		for i, r := range p.Rows {
			ids[i] = r.ID
		}
		sources := map[int64]int64{} // row -> source pk
		var bt batch
		shareActors(&bt, "deliver sends: lock the sources", actorsOfSends, ids)
		bt.query("deliver sends: lock the rows", func(rows pgx.Rows) error {
			var id, src int64
			if err := rows.Scan(&id, &src); err != nil {
				return err
			}
			sources[id] = src
			return nil
		}, sqlLockSends, ids, p.Owner)
		if err := bt.run(ctx, t); err != nil {
			return err
		}
		msgs := make([]store.NewMessage, 0, len(p.Rows))
		for _, r := range p.Rows {
			if _, ok := sources[r.ID]; ok {
				msgs = append(msgs, sendMessage(r))
			}
		}
		var e *enqueuer
		if len(msgs) > 0 {
			var err error
			if e, err = b.newEnqueuer(ctx, t, msgs); err != nil {
				return err
			}
		}
		blocked := map[int64]bool{}
		var delivered, full, held, lanes []int64
		results := make([]*store.EnqueueResult, len(p.Rows))
		for i, r := range p.Rows {
			src, ok := sources[r.ID]
			if !ok {
				out = append(out, store.OutboxResult{ID: r.ID, Gone: true})
				continue
			}
			if !slices.Contains(lanes, src) {
				lanes = append(lanes, src)
			}
			if blocked[src] {
				held = append(held, r.ID)
				out = append(out, store.OutboxResult{ID: r.ID, Retry: true})
				continue
			}
			m := sendMessage(r)
			res, err := e.decide(&store.MailboxEnqueueParams{SkipFull: true, MailboxCap: p.MailboxCap, Messages: []store.NewMessage{m}},
				store.PlanEnqueue([]store.NewMessage{m}))
			if err != nil {
				return err
			}
			if res[0].Full {
				blocked[src] = true
				full = append(full, r.ID)
				out = append(out, store.OutboxResult{ID: r.ID, Retry: true})
				continue
			}
			results[i] = &res[0]
			delivered = append(delivered, r.ID)
			out = append(out, store.OutboxResult{ID: r.ID})
		}
		bt = batch{}
		if e != nil {
			e.queue(&bt, false)
		}
		if len(delivered) > 0 {
			bt.exec("deliver sends: retire the rows", sqlDelivered, delivered)
		}
		if len(full) > 0 {
			bt.exec("deliver sends: retry later", sqlSendFull, full, store.Micros(p.RetryAfter))
		}
		if len(held) > 0 {
			bt.exec("deliver sends: hold the later rows", sqlSendBlocked, held)
		}
		slices.Sort(lanes)
		settleLanes(&bt, "send", lanes)
		if err := t.commitWith(ctx, &bt); err != nil {
			return err
		}
		if e != nil {
			e.finish()
		}
		for i, r := range results { // out holds one result per row, in order
			if r != nil {
				out[i].MessageID, out[i].TargetPK = r.MessageID, r.ActorPK
			}
		}
		return nil
	})
	return out, err
}

func sendMessage(r store.OutboxRow) store.NewMessage {
	return store.NewMessage{Ref: r.To, Name: r.Message, Args: r.Args, Delay: r.Delay, IdempotencyKey: fmt.Sprintf("send:%d", r.ID)}
}

// BroadcastRead implements store.Backend.
func (b *Backend) BroadcastRead(ctx context.Context, p *store.BroadcastReadParams) ([]store.Broadcast, error) {
	rows, err := b.pool.Query(ctx, `SELECT bc.id, a.type, a.id, bc.name, bc.value, bc.state_version, bc.created_at
		FROM ductus_broadcasts bc JOIN ductus_actors a ON a.pk = bc.actor_pk WHERE bc.id > $1 ORDER BY bc.id LIMIT $2`, p.AfterID, limitOr(p.Limit, 500))
	if err != nil {
		return nil, classify("read broadcasts", err)
	}
	defer rows.Close()
	var out []store.Broadcast
	for rows.Next() {
		var bc store.Broadcast
		if err := rows.Scan(&bc.ID, &bc.Ref.Type, &bc.Ref.ID, &bc.Name, &bc.Value, &bc.StateVersion, &bc.CreatedAt); err != nil {
			return nil, classify("read broadcasts", err)
		}
		out = append(out, bc)
	}
	return out, classify("read broadcasts", rows.Err())
}

// BroadcastLatestID implements store.Backend.
func (b *Backend) BroadcastLatestID(ctx context.Context) (int64, error) {
	var id int64
	err := b.pool.QueryRow(ctx, `SELECT COALESCE(MAX(id), 0) FROM ductus_broadcasts`).Scan(&id)
	return id, classify("read the latest broadcast", err)
}

// BroadcastMarkDelivered implements store.Backend.
func (b *Backend) BroadcastMarkDelivered(ctx context.Context, ids []int64) error {
	if len(ids) == 0 {
		return nil
	}
	_, err := b.pool.Exec(ctx, `UPDATE ductus_broadcasts SET delivered_at = now() WHERE delivered_at IS NULL AND id = ANY($1::bigint[])`, ids)
	return classify("mark broadcasts delivered", err)
}
