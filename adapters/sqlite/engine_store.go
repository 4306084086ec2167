package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"github.com/ductus/ductus/actor"
	"github.com/ductus/ductus/adapters/internal/sqlrow"
	"github.com/ductus/ductus/integration/ixstore"
	"github.com/ductus/ductus/migrations"
	"github.com/ductus/ductus/runtime/store"
)

// The integration engine's store (ixstore.Store) on SQLite. Writes run on
// the writer connection, in the caller's transaction or in one of their
// own; reads run on the read pool. Multi-row inserts are one VALUES list
// per batch, as the engine wrote them before it had a seam.

// Batch sizes of the engine's multi-row statements.
const (
	ixMessageBatch = 100
	ixKeyBatch     = 300
)

// engineStore implements ixstore.Store over the backend.
type engineStore struct{ b *Backend }

var _ ixstore.Backend = (*Backend)(nil)

// EngineStore implements ixstore.Backend.
func (b *Backend) EngineStore() ixstore.Store { return engineStore{b} }

// SchemaMigrate implements ixstore.Store.
func (s engineStore) SchemaMigrate(ctx context.Context) error {
	fsys, err := migrations.Engine("sqlite")
	if err == nil {
		err = store.Migrate(ctx, migrator{b: s.b, table: "ductus_ix_schema_migrations"}, fsys)
	}
	if err != nil {
		return fmt.Errorf("sqlite: the engine's migrations: %w", err)
	}
	return nil
}

// MessageInsert implements ixstore.Store.
func (s engineStore) MessageInsert(ctx context.Context, outer store.Tx, p *ixstore.MessageInsertParams) error {
	if outer == nil {
		return fmt.Errorf("%w: MessageInsert needs the intake's transaction", actor.ErrInvalidArguments)
	}
	return s.b.write(ctx, outer, func(tx *wtx) error {
		for _, c := range sqlrow.Chunks(len(p.Messages), ixMessageBatch) {
			args := make([]any, 0, sqlrow.IXMessageWidth*(c[1]-c[0]))
			for i := c[0]; i < c[1]; i++ {
				var err error
				if args, err = sqlrow.IXMessageArgs(args, &p.Messages[i]); err != nil {
					return err
				}
			}
			q := `INSERT INTO ductus_ix_messages (` + sqlrow.IXMessageColumns + `) VALUES ` + sqlrow.Values(c[1]-c[0], sqlrow.IXMessageWidth)
			if _, err := s.b.exec(ctx, tx, "insert interface messages", q, args...); err != nil {
				return err
			}
		}
		for _, c := range sqlrow.Chunks(len(p.Deliveries), ixKeyBatch) {
			args := make([]any, 0, 3*(c[1]-c[0]))
			for _, d := range p.Deliveries[c[0]:c[1]] {
				args = append(args, d.MessageID, d.Destination, d.LaneMessageID)
			}
			q := `INSERT INTO ductus_ix_deliveries (message_id, destination, lane_message_id) VALUES ` + sqlrow.Values(c[1]-c[0], 3)
			if _, err := s.b.exec(ctx, tx, "insert deliveries", q, args...); err != nil {
				return err
			}
		}
		return nil
	})
}

// MessageByOrigin implements ixstore.Store.
func (s engineStore) MessageByOrigin(ctx context.Context, outer store.Tx, p *ixstore.MessageByOriginParams) (string, bool, error) {
	var id string
	found := false
	err := s.b.write(ctx, outer, func(tx *wtx) error {
		err := tx.QueryRowContext(ctx, `SELECT id FROM ductus_ix_messages WHERE interface = ? AND origin = ?`, p.Interface, p.Origin).Scan(&id)
		switch {
		case errors.Is(err, sql.ErrNoRows):
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
		// One text per IN-list length: not kept among the prepared reads.
		rows, err := s.b.r.QueryContext(ctx, `SELECT `+sqlrow.IXMessageColumns+` FROM ductus_ix_messages WHERE id IN (`+sqlrow.List(len(args))+`)`, args...)
		if err != nil {
			return nil, classify("read interface messages", err)
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
		return nil, classify("list interface messages", err)
	}
	return scanIXMessages(rows, nil)
}

func scanIXMessages(rows *sql.Rows, out []ixstore.Message) ([]ixstore.Message, error) {
	defer rows.Close()
	for rows.Next() {
		m, err := sqlrow.ScanIXMessage(rows)
		if err != nil {
			return nil, classify("read interface messages", err)
		}
		out = append(out, m)
	}
	return out, classify("read interface messages", rows.Err())
}

// MessageACKs implements ixstore.Store.
func (s engineStore) MessageACKs(ctx context.Context, outer store.Tx, p *ixstore.MessageACKsParams) (map[string][]byte, error) {
	out := map[string][]byte{}
	if len(p.IDs) == 0 {
		return out, nil
	}
	err := s.b.write(ctx, outer, func(tx *wtx) error {
		for _, c := range sqlrow.Chunks(len(p.IDs), ixKeyBatch) {
			args := make([]any, 0, c[1]-c[0])
			for _, id := range p.IDs[c[0]:c[1]] {
				args = append(args, id)
			}
			rows, err := s.b.query(ctx, tx, "read ACKs", `SELECT id, ack FROM ductus_ix_messages WHERE id IN (`+sqlrow.List(len(args))+`)`, args...)
			if err != nil {
				return err
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
			if err := rows.Close(); err != nil {
				return classify("read ACKs", err)
			}
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
		return nil, classify("read deliveries", err)
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
	return out, classify("read deliveries", rows.Err())
}

// DedupeClaim implements ixstore.Store. SQLite has one writer at a time,
// so the insert-if-absent and the read of the winners see no other claim
// in between.
func (s engineStore) DedupeClaim(ctx context.Context, outer store.Tx, p *ixstore.DedupeClaimParams) (map[string]string, error) {
	if outer == nil {
		return nil, fmt.Errorf("%w: DedupeClaim needs the intake's transaction", actor.ErrInvalidArguments)
	}
	sorted := sqlrow.SortedKeys(p.Keys)
	out := make(map[string]string, len(p.Keys))
	at, cutoff := p.At.UnixMicro(), p.Since.UnixMicro()
	err := s.b.write(ctx, outer, func(tx *wtx) error {
		for _, c := range sqlrow.Chunks(len(sorted), ixKeyBatch) {
			part := sorted[c[0]:c[1]]
			args := make([]any, 0, 4*len(part)+1)
			for _, k := range part {
				args = append(args, p.Interface, k, p.Keys[k], at)
			}
			args = append(args, cutoff)
			q := `INSERT INTO ductus_ix_dedupe (interface, dedupe_key, message_id, seen_at) VALUES ` + sqlrow.Values(len(part), 4) +
				` ON CONFLICT (interface, dedupe_key) DO UPDATE SET message_id = excluded.message_id, seen_at = excluded.seen_at WHERE ductus_ix_dedupe.seen_at < ?`
			if _, err := s.b.exec(ctx, tx, "claim dedupe keys", q, args...); err != nil {
				return err
			}
			args = append(args[:0], p.Interface)
			for _, k := range part {
				args = append(args, k)
			}
			rows, err := s.b.query(ctx, tx, "read dedupe claims", `SELECT dedupe_key, message_id FROM ductus_ix_dedupe WHERE interface = ? AND dedupe_key IN (`+sqlrow.List(len(part))+`)`, args...)
			if err != nil {
				return err
			}
			for rows.Next() {
				var k, id string
				if err := rows.Scan(&k, &id); err != nil {
					rows.Close()
					return classify("read dedupe claims", err)
				}
				out[k] = id
			}
			if err := rows.Close(); err != nil {
				return classify("read dedupe claims", err)
			}
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

// DedupePrune implements ixstore.Store.
func (s engineStore) DedupePrune(ctx context.Context, p *ixstore.DedupePruneParams) (int64, error) {
	if p.Limit < 1 {
		return 0, fmt.Errorf("%w: DedupePrune: limit %d is not positive", actor.ErrInvalidArguments, p.Limit)
	}
	var n int64
	cutoff := p.Before.UnixMicro()
	err := s.b.write(ctx, nil, func(tx *wtx) error {
		var err error
		n, err = s.b.exec(ctx, tx, "prune dedupe keys", `DELETE FROM ductus_ix_dedupe WHERE interface = ? AND seen_at < ? AND dedupe_key IN
			(SELECT dedupe_key FROM ductus_ix_dedupe WHERE interface = ? AND seen_at < ? ORDER BY seen_at LIMIT ?)`,
			p.Interface, cutoff, p.Interface, cutoff, p.Limit)
		return err
	})
	return n, err
}

// SourceStatePut implements ixstore.Store.
func (s engineStore) SourceStatePut(ctx context.Context, outer store.Tx, p *ixstore.SourceStatePutParams) error {
	return s.b.write(ctx, outer, func(tx *wtx) error {
		if p.Value == nil {
			_, err := s.b.exec(ctx, tx, "delete source state", `DELETE FROM ductus_ix_source_state WHERE interface = ? AND state_key = ?`, p.Interface, p.Key)
			return err
		}
		_, err := s.b.exec(ctx, tx, "write source state", `INSERT INTO ductus_ix_source_state (interface, state_key, value, updated_at) VALUES (?, ?, ?, ?)
			ON CONFLICT (interface, state_key) DO UPDATE SET value = excluded.value, updated_at = excluded.updated_at`,
			p.Interface, p.Key, string(p.Value), p.At.UnixMicro())
		return err
	})
}

// SourceStateGet implements ixstore.Store.
func (s engineStore) SourceStateGet(ctx context.Context, p *ixstore.SourceStateGetParams) ([]byte, bool, error) {
	rows, err := s.b.read(ctx, `SELECT value FROM ductus_ix_source_state WHERE interface = ? AND state_key = ?`, p.Interface, p.Key)
	if err != nil {
		return nil, false, classify("read source state", err)
	}
	defer rows.Close()
	if !rows.Next() {
		return nil, false, classify("read source state", rows.Err())
	}
	var v string
	if err := rows.Scan(&v); err != nil {
		return nil, false, classify("read source state", err)
	}
	return []byte(v), true, nil
}
