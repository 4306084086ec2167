package postgres

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/ductus/ductus/actor"
	"github.com/ductus/ductus/adapters/internal/sqlrow"
	"github.com/ductus/ductus/integration/ixstore"
	"github.com/ductus/ductus/migrations"
	"github.com/ductus/ductus/runtime/store"
)

// The integration engine's store (ixstore.Store) on PostgreSQL. Its
// statements run in the caller's transaction (plan_cache_mode auto, as
// Begin sets it) or on a pooled connection with the server's plan choice
// (read); multi-row inserts are one VALUES list per batch, as the engine
// wrote them before it had a seam, so intake costs what it did.

// Batch sizes of the engine's multi-row statements.
const (
	ixMessageBatch = 100
	ixKeyBatch     = 300
)

// engineStore implements ixstore.Store over the backend.
type engineStore struct{ b *Backend }

// EngineStore implements ixstore.Backend.
func (b *Backend) EngineStore() ixstore.Store { return engineStore{b} }

// engineTx runs fn in the caller's transaction, or in one of its own
// (begun as Backend.Begin begins) when outer is nil.
func (s engineStore) engineTx(ctx context.Context, outer store.Tx, fn func(tx pgx.Tx) error) error {
	if outer != nil {
		tx, err := outerTx(outer)
		if err != nil {
			return err
		}
		return fn(tx)
	}
	own, err := s.b.Begin(ctx, store.TxOptions{})
	if err != nil {
		return err
	}
	defer own.Rollback(context.WithoutCancel(ctx))
	if err := fn(own.(*callerTx).tx); err != nil {
		return err
	}
	return own.Commit(ctx)
}

// SchemaMigrate implements ixstore.Store.
func (s engineStore) SchemaMigrate(ctx context.Context) error {
	fsys, err := migrations.Engine("postgres")
	if err == nil {
		err = store.Migrate(ctx, migrator{b: s.b, table: "ductus_ix_schema_migrations"}, fsys)
	}
	if err != nil {
		return fmt.Errorf("postgres: schema %s: the engine's migrations: %w", s.b.schema, err)
	}
	return nil
}

// MessageInsert implements ixstore.Store.
func (s engineStore) MessageInsert(ctx context.Context, outer store.Tx, p *ixstore.MessageInsertParams) error {
	if outer == nil {
		return fmt.Errorf("%w: MessageInsert needs the intake's transaction", actor.ErrInvalidArguments)
	}
	return s.engineTx(ctx, outer, func(tx pgx.Tx) error {
		for _, c := range sqlrow.Chunks(len(p.Messages), ixMessageBatch) {
			args := make([]any, 0, sqlrow.IXMessageWidth*(c[1]-c[0]))
			for i := c[0]; i < c[1]; i++ {
				var err error
				if args, err = sqlrow.IXMessageArgs(args, &p.Messages[i]); err != nil {
					return err
				}
			}
			q := `INSERT INTO ductus_ix_messages (` + sqlrow.IXMessageColumns + `) VALUES ` + sqlrow.Values(c[1]-c[0], sqlrow.IXMessageWidth)
			if _, err := tx.Exec(ctx, Rebind(q), args...); err != nil {
				return classify("insert interface messages", err)
			}
		}
		for _, c := range sqlrow.Chunks(len(p.Deliveries), ixKeyBatch) {
			args := make([]any, 0, 3*(c[1]-c[0]))
			for _, d := range p.Deliveries[c[0]:c[1]] {
				args = append(args, d.MessageID, d.Destination, d.LaneMessageID)
			}
			q := `INSERT INTO ductus_ix_deliveries (message_id, destination, lane_message_id) VALUES ` + sqlrow.Values(c[1]-c[0], 3)
			if _, err := tx.Exec(ctx, Rebind(q), args...); err != nil {
				return classify("insert deliveries", err)
			}
		}
		return nil
	})
}

// MessageByOrigin implements ixstore.Store.
func (s engineStore) MessageByOrigin(ctx context.Context, outer store.Tx, p *ixstore.MessageByOriginParams) (string, bool, error) {
	var id string
	found := false
	err := s.engineTx(ctx, outer, func(tx pgx.Tx) error {
		err := tx.QueryRow(ctx, `SELECT id FROM ductus_ix_messages WHERE interface = $1 AND origin = $2`, p.Interface, p.Origin).Scan(&id)
		switch {
		case errors.Is(err, pgx.ErrNoRows):
			return nil
		case err != nil:
			return classify("find a message by origin", err)
		}
		found = true
		return nil
	})
	return id, found, err
}

// MessageGetMany implements ixstore.Store.
func (s engineStore) MessageGetMany(ctx context.Context, p *ixstore.MessageGetManyParams) ([]ixstore.Message, error) {
	var out []ixstore.Message
	for _, c := range sqlrow.Chunks(len(p.IDs), ixKeyBatch) {
		args := make([]any, 0, c[1]-c[0])
		for _, id := range p.IDs[c[0]:c[1]] {
			args = append(args, id)
		}
		rows, err := s.b.read(ctx, `SELECT `+sqlrow.IXMessageColumns+` FROM ductus_ix_messages WHERE id IN (`+sqlrow.List(len(args))+`)`, args...)
		if err != nil {
			return nil, err
		}
		if out, err = scanIXMessages(rows, out); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// MessageList implements ixstore.Store.
func (s engineStore) MessageList(ctx context.Context, p *ixstore.MessageListParams) ([]ixstore.Message, error) {
	if p.Limit < 1 {
		return nil, fmt.Errorf("%w: MessageList: limit %d is not positive", actor.ErrInvalidArguments, p.Limit)
	}
	q, args := `SELECT `+sqlrow.IXMessageColumns+` FROM ductus_ix_messages WHERE interface = ?`, []any{p.Interface}
	if p.Before != "" {
		q, args = q+` AND id < ?`, append(args, p.Before)
	}
	rows, err := s.b.read(ctx, q+` ORDER BY id DESC LIMIT ?`, append(args, p.Limit)...)
	if err != nil {
		return nil, err
	}
	return scanIXMessages(rows, nil)
}

func scanIXMessages(rows *callerRows, out []ixstore.Message) ([]ixstore.Message, error) {
	defer rows.Close()
	for rows.Next() {
		m, err := sqlrow.ScanIXMessage(rows)
		if err != nil {
			return nil, classify("read interface messages", err)
		}
		out = append(out, m)
	}
	return out, classify("read interface messages", rows.Close())
}

// MessageACKs implements ixstore.Store.
func (s engineStore) MessageACKs(ctx context.Context, outer store.Tx, p *ixstore.MessageACKsParams) (map[string][]byte, error) {
	out := map[string][]byte{}
	if len(p.IDs) == 0 {
		return out, nil
	}
	err := s.engineTx(ctx, outer, func(tx pgx.Tx) error {
		for _, c := range sqlrow.Chunks(len(p.IDs), ixKeyBatch) {
			args := make([]any, 0, c[1]-c[0])
			for _, id := range p.IDs[c[0]:c[1]] {
				args = append(args, id)
			}
			rows, err := tx.Query(ctx, Rebind(`SELECT id, ack FROM ductus_ix_messages WHERE id IN (`+sqlrow.List(len(args))+`)`), args...)
			if err != nil {
				return classify("read ACKs", err)
			}
			for rows.Next() {
				var id string
				var ack []byte
				if err := rows.Scan(&id, &ack); err != nil {
					rows.Close()
					return classify("read ACKs", err)
				}
				out[id] = ack
			}
			rows.Close()
			if err := rows.Err(); err != nil {
				return classify("read ACKs", err)
			}
		}
		return nil
	})
	return out, err
}

// DeliveryList implements ixstore.Store.
func (s engineStore) DeliveryList(ctx context.Context, p *ixstore.DeliveryListParams) ([]ixstore.Delivery, error) {
	rows, err := s.b.read(ctx, `SELECT destination, lane_message_id FROM ductus_ix_deliveries WHERE message_id = ? ORDER BY destination`, p.MessageID)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []ixstore.Delivery
	for rows.Next() {
		d := ixstore.Delivery{MessageID: p.MessageID}
		if err := rows.Scan(&d.Destination, &d.LaneMessageID); err != nil {
			return nil, classify("read deliveries", err)
		}
		out = append(out, d)
	}
	return out, classify("read deliveries", rows.Close())
}

// DedupeClaim implements ixstore.Store: an insert-if-absent that takes
// over expired claims locks each key's row; a concurrent intake of the same
// key waits for this transaction and then reads the winner, so two
// senders racing with one message can never both be queued.
func (s engineStore) DedupeClaim(ctx context.Context, outer store.Tx, p *ixstore.DedupeClaimParams) (map[string]string, error) {
	if outer == nil {
		return nil, fmt.Errorf("%w: DedupeClaim needs the intake's transaction", actor.ErrInvalidArguments)
	}
	sorted := sqlrow.SortedKeys(p.Keys)
	out := make(map[string]string, len(p.Keys))
	at, cutoff := p.At.UnixMicro(), p.Since.UnixMicro()
	err := s.engineTx(ctx, outer, func(tx pgx.Tx) error {
		for _, c := range sqlrow.Chunks(len(sorted), ixKeyBatch) {
			part := sorted[c[0]:c[1]]
			args := make([]any, 0, 4*len(part)+1)
			for _, k := range part {
				args = append(args, p.Interface, k, p.Keys[k], at)
			}
			args = append(args, cutoff)
			q := `INSERT INTO ductus_ix_dedupe (interface, dedupe_key, message_id, seen_at) VALUES ` + sqlrow.Values(len(part), 4) +
				` ON CONFLICT (interface, dedupe_key) DO UPDATE SET message_id = excluded.message_id, seen_at = excluded.seen_at WHERE ductus_ix_dedupe.seen_at < ?`
			if _, err := tx.Exec(ctx, Rebind(q), args...); err != nil {
				return classify("claim dedupe keys", err)
			}
			// The rows are locked by this transaction now; a statement
			// that starts after the insert sees the committed winner of a
			// key another transaction held (read committed).
			args = append(args[:0], p.Interface)
			for _, k := range part {
				args = append(args, k)
			}
			rows, err := tx.Query(ctx, Rebind(`SELECT dedupe_key, message_id FROM ductus_ix_dedupe WHERE interface = ? AND dedupe_key IN (`+sqlrow.List(len(part))+`)`), args...)
			if err != nil {
				return classify("read dedupe claims", err)
			}
			for rows.Next() {
				var k, id string
				if err := rows.Scan(&k, &id); err != nil {
					rows.Close()
					return classify("read dedupe claims", err)
				}
				out[k] = id
			}
			rows.Close()
			if err := rows.Err(); err != nil {
				return classify("read dedupe claims", err)
			}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out, sqlrow.CheckClaimed(p, out)
}

// DedupePrune implements ixstore.Store. The outer seen_at test matters: a
// claim that took over an expired key after the subquery chose it must
// survive (PostgreSQL rechecks the outer condition on the row's newest
// version).
func (s engineStore) DedupePrune(ctx context.Context, p *ixstore.DedupePruneParams) (int64, error) {
	if p.Limit < 1 {
		return 0, fmt.Errorf("%w: DedupePrune: limit %d is not positive", actor.ErrInvalidArguments, p.Limit)
	}
	var n int64
	cutoff := p.Before.UnixMicro()
	err := s.engineTx(ctx, nil, func(tx pgx.Tx) error {
		tag, err := tx.Exec(ctx, `DELETE FROM ductus_ix_dedupe WHERE interface = $1 AND seen_at < $2 AND dedupe_key IN
			(SELECT dedupe_key FROM ductus_ix_dedupe WHERE interface = $3 AND seen_at < $4 ORDER BY seen_at LIMIT $5)`,
			p.Interface, cutoff, p.Interface, cutoff, p.Limit)
		n = tag.RowsAffected()
		return classify("prune dedupe keys", err)
	})
	return n, err
}

// SourceStatePut implements ixstore.Store.
func (s engineStore) SourceStatePut(ctx context.Context, outer store.Tx, p *ixstore.SourceStatePutParams) error {
	return s.engineTx(ctx, outer, func(tx pgx.Tx) error {
		if p.Value == nil {
			_, err := tx.Exec(ctx, `DELETE FROM ductus_ix_source_state WHERE interface = $1 AND state_key = $2`, p.Interface, p.Key)
			return classify("delete source state", err)
		}
		_, err := tx.Exec(ctx, `INSERT INTO ductus_ix_source_state (interface, state_key, value, updated_at) VALUES ($1, $2, $3, $4)
			ON CONFLICT (interface, state_key) DO UPDATE SET value = excluded.value, updated_at = excluded.updated_at`,
			p.Interface, p.Key, string(p.Value), p.At.UnixMicro())
		return classify("write source state", err)
	})
}

// SourceStateGet implements ixstore.Store.
func (s engineStore) SourceStateGet(ctx context.Context, p *ixstore.SourceStateGetParams) ([]byte, bool, error) {
	rows, err := s.b.read(ctx, `SELECT value FROM ductus_ix_source_state WHERE interface = ? AND state_key = ?`, p.Interface, p.Key)
	if err != nil {
		return nil, false, err
	}
	defer rows.Close()
	if !rows.Next() {
		return nil, false, classify("read source state", rows.Close())
	}
	var v string
	if err := rows.Scan(&v); err != nil {
		return nil, false, classify("read source state", err)
	}
	return []byte(v), true, classify("read source state", rows.Close())
}
