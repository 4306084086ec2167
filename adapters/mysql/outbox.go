package mysql

import (
	"context"
	"database/sql"
	"fmt"
	"time"

	"github.com/ductus/ductus/actor"
	"github.com/ductus/ductus/runtime/store"
	"github.com/ductus/ductus/runtime/store/sqltx"
)

// OutboxClaim implements store.Backend: due send lanes are found by a
// read-only scan and locked by primary key with SKIP LOCKED, then every
// pending row of each locked source (up to Limit in all) is leased, in
// staging order. Lanes past the limit are given back at once rather than
// at lease expiry.
func (b *Backend) OutboxClaim(ctx context.Context, p *store.OutboxClaimParams) ([]store.OutboxRow, error) {
	if p.Limit <= 0 {
		return nil, nil
	}
	var cands []int64
	scan := newBatch("claim sends: find candidates")
	scan.query(scanInts(&cands), `SELECT actor_pk FROM ductus_lanes WHERE kind = 'send' AND due_at <= NOW(6) ORDER BY due_at LIMIT ?`, p.Limit)
	if err := b.read(ctx, scan); err != nil || len(cands) == 0 {
		return nil, err
	}
	var out []store.OutboxRow
	err := b.txn(ctx, nil, func(s *session) error {
		out = nil
		var locked []int64
		pending := map[int64][]store.OutboxRow{}
		sources := map[int64]actor.Ref{}
		lock := newBatch("claim sends: lock lanes")
		lock.query(scanInts(&locked), `SELECT actor_pk FROM ductus_lanes WHERE kind = 'send' AND actor_pk IN (`+sqltx.List(len(cands))+`)
			AND due_at <= NOW(6) FOR UPDATE SKIP LOCKED`, sqltx.Int64s(cands)...)
		lock.query(func(rows *sql.Rows) error {
			for rows.Next() {
				var pk int64
				var r actor.Ref
				if err := rows.Scan(&pk, &r.Type, &r.ID); err != nil {
					return err
				}
				sources[pk] = r
			}
			return nil
		}, `SELECT pk, type, id FROM ductus_actors WHERE pk IN (`+sqltx.List(len(cands))+`)`, sqltx.Int64s(cands)...)
		for _, pk := range cands {
			lock.query(func(rows *sql.Rows) error {
				for rows.Next() {
					var r store.OutboxRow
					var args string
					var delay int64
					if err := rows.Scan(&r.ID, &r.To.Type, &r.To.ID, &r.Message, &args, &delay, &r.Attempt); err != nil {
						return err
					}
					r.Args, r.Delay, r.Attempt = []byte(args), time.Duration(delay)*time.Microsecond, r.Attempt+1
					pending[pk] = append(pending[pk], r)
				}
				return nil
			}, `SELECT id, to_type, to_id, message, args, delay_us, attempts FROM ductus_outbox
				WHERE source_pk = ? AND delivered_at IS NULL ORDER BY id LIMIT ?`, pk, p.Limit)
		}
		if err := s.run(ctx, lock); err != nil || len(locked) == 0 {
			return err
		}
		w := newBatch("claim sends: lease")
		var ids, leased []any
		for _, pk := range locked {
			rs := pending[pk]
			if room := p.Limit - len(out); len(rs) > room {
				rs = rs[:room]
			}
			if len(rs) == 0 {
				settleLane(w, pk, "send")
				continue
			}
			leased = append(leased, pk)
			for _, r := range rs {
				r.Source = sources[pk]
				out = append(out, r)
				ids = append(ids, r.ID)
			}
		}
		if len(ids) > 0 {
			w.exec(`UPDATE ductus_lanes SET due_at = NOW(6) + INTERVAL ? MICROSECOND WHERE kind = 'send' AND actor_pk IN (`+sqltx.List(len(leased))+`)`,
				append([]any{store.Micros(p.TTL)}, leased...)...)
			w.exec(`UPDATE ductus_outbox SET lease_owner = ?, attempts = attempts + 1 WHERE id IN (`+sqltx.List(len(ids))+`)`,
				append([]any{p.Owner}, ids...)...)
		}
		return s.commit(ctx, w)
	})
	return out, err
}

// OutboxDeliver implements store.Backend. The rows are locked, then their
// targets (creating missing ones); each row is decided in order as if
// enqueued one by one, its ID as the idempotency key ("send:<id>"), so a
// row is delivered exactly once. When one cannot be delivered (the
// target's mailbox is full) it and the rows after it from the same source
// wait, so the source's order holds.
func (b *Backend) OutboxDeliver(ctx context.Context, p *store.OutboxDeliverParams) ([]store.OutboxResult, error) {
	var out []store.OutboxResult
	err := b.txn(ctx, nil, func(s *session) error {
		out = make([]store.OutboxResult, len(p.Rows))
		if len(p.Rows) == 0 {
			return nil
		}
		ids := make([]int64, len(p.Rows))
		for i, r := range p.Rows {
			ids[i] = r.ID
		}
		srcOf := map[int64]int64{}
		a := newBatch("deliver sends: lock the rows")
		a.query(func(rows *sql.Rows) error {
			for rows.Next() {
				var id, src int64
				if err := rows.Scan(&id, &src); err != nil {
					return err
				}
				srcOf[id] = src
			}
			return nil
		}, `SELECT id, source_pk FROM ductus_outbox WHERE id IN (`+sqltx.List(len(ids))+`) AND lease_owner = ? AND delivered_at IS NULL
			ORDER BY id FOR UPDATE`, append(sqltx.Int64s(ids), p.Owner)...)
		if err := s.run(ctx, a); err != nil {
			return err
		}
		msgs := make([]store.NewMessage, len(p.Rows))
		var live []store.NewMessage
		for i, r := range p.Rows {
			msgs[i] = store.NewMessage{Ref: r.To, Name: r.Message, Args: r.Args, Delay: r.Delay, IdempotencyKey: fmt.Sprintf("send:%d", r.ID)}
			if msgs[i].Args == nil {
				msgs[i].Args = []byte("null")
			}
			if _, ok := srcOf[r.ID]; ok {
				live = append(live, msgs[i])
			}
		}
		groups := store.PlanEnqueue(live)
		targets := map[actor.Ref]*actorRow{}
		locks := make([]*actorRow, len(groups))
		for i, g := range groups {
			locks[i] = groupRow(live, g)
			locks[i].create = false // created below only if a row reaches it
			targets[g.Ref] = locks[i]
		}
		if err := b.lockActors(ctx, s, "deliver sends", locks); err != nil {
			return err
		}
		var missing []*actorRow
		for _, r := range locks {
			if !r.found {
				// Decided as an empty mailbox; the row (and its key) is
				// made before the writes if a send reaches it.
				r.found, r.nextSeq, r.unfinished = true, 1, 0
				missing = append(missing, r)
			}
		}
		w := newBatch("deliver sends")
		wr := &writes{}
		ep := &store.MailboxEnqueueParams{SkipFull: true, MailboxCap: p.MailboxCap}
		blocked := map[int64]bool{}
		sources := map[int64]bool{}
		type done struct {
			i   int
			res []store.EnqueueResult
		}
		var delivered []done
		for i, r := range p.Rows {
			src, ok := srcOf[r.ID]
			if !ok {
				out[i] = store.OutboxResult{ID: r.ID, Gone: true}
				continue
			}
			sources[src] = true
			if blocked[src] {
				w.exec(`UPDATE ductus_outbox SET lease_owner = NULL, attempts = attempts - 1 WHERE id = ?`, r.ID)
				out[i] = store.OutboxResult{ID: r.ID, Retry: true}
				continue
			}
			one := []store.NewMessage{msgs[i]}
			res := make([]store.EnqueueResult, 1)
			g := store.EnqueueGroup{Ref: r.To, Indexes: []int{0}, Create: true}
			if err := planGroup(one, g, targets[r.To], ep, res, wr); err != nil {
				return err
			}
			if res[0].Full {
				blocked[src] = true
				w.exec(`UPDATE ductus_outbox SET lease_owner = NULL, due_at = NOW(6) + INTERVAL ? MICROSECOND WHERE id = ?`,
					store.Micros(p.RetryAfter), r.ID)
				out[i] = store.OutboxResult{ID: r.ID, Retry: true}
				continue
			}
			delivered = append(delivered, done{i, res})
		}
		var create []*actorRow
		for _, r := range missing {
			if r.nextSeq > 1 {
				r.found = false
				create = append(create, r)
			}
		}
		if err := b.createActors(ctx, s, "deliver sends", create); err != nil {
			return err
		}
		wr.flush(w)
		for _, d := range delivered {
			d := d
			id := p.Rows[d.i].ID
			// The message ID is known only once the batch has run; the row
			// records it by reading it back in the same statement.
			w.exec(`UPDATE ductus_outbox SET due_at = NULL, lease_owner = NULL, delivered_at = NOW(6),
				message_id = (SELECT m.id FROM ductus_messages m JOIN ductus_actors a ON a.pk = m.actor_pk
					WHERE a.type = ? AND a.id = ? AND m.idem_key = ?) WHERE id = ?`,
				p.Rows[d.i].To.Type, p.Rows[d.i].To.ID, fmt.Sprintf("send:%d", id), id)
			target := targets[p.Rows[d.i].To]
			w.after = append(w.after, func() { out[d.i] = store.OutboxResult{ID: id, MessageID: d.res[0].MessageID, TargetPK: target.pk} })
		}
		for src := range sources {
			settleLane(w, src, "send")
		}
		return s.commit(ctx, w)
	})
	return out, err
}

// BroadcastRead implements store.Backend.
func (b *Backend) BroadcastRead(ctx context.Context, p *store.BroadcastReadParams) ([]store.Broadcast, error) {
	b.count(1)
	rows, err := b.db.QueryContext(ctx, `SELECT b.id, a.type, a.id, b.name, b.value, b.state_version, b.created_at
		FROM ductus_broadcasts b JOIN ductus_actors a ON a.pk = b.actor_pk WHERE b.id > ? ORDER BY b.id LIMIT ?`, p.AfterID, limitOr(p.Limit, 500))
	if err != nil {
		return nil, classify("read broadcasts", err)
	}
	defer rows.Close()
	var out []store.Broadcast
	for rows.Next() {
		var bc store.Broadcast
		var value string
		if err := rows.Scan(&bc.ID, &bc.Ref.Type, &bc.Ref.ID, &bc.Name, &value, &bc.StateVersion, &bc.CreatedAt); err != nil {
			return nil, classify("read broadcasts", err)
		}
		bc.Value = []byte(value)
		out = append(out, bc)
	}
	return out, classify("read broadcasts", rows.Err())
}

// BroadcastLatestID implements store.Backend.
func (b *Backend) BroadcastLatestID(ctx context.Context) (int64, error) {
	var id sql.NullInt64
	b.count(1)
	err := b.db.QueryRowContext(ctx, `SELECT MAX(id) FROM ductus_broadcasts`).Scan(&id)
	return id.Int64, classify("read the latest broadcast", err)
}

// BroadcastMarkDelivered implements store.Backend.
func (b *Backend) BroadcastMarkDelivered(ctx context.Context, ids []int64) error {
	if len(ids) == 0 {
		return nil
	}
	w := newBatch("mark broadcasts delivered")
	for _, c := range sqltx.Chunks(len(ids), 500) {
		w.exec(`UPDATE ductus_broadcasts SET delivered_at = NOW(6) WHERE delivered_at IS NULL AND id IN (`+sqltx.List(c[1]-c[0])+`)`,
			sqltx.Int64s(ids[c[0]:c[1]])...)
	}
	return b.txn(ctx, nil, func(s *session) error { return s.commit(ctx, w) })
}
