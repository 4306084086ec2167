package mysql

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
	"github.com/ductus/ductus/runtime/store/sqltx"
)

// The integration engine's store (ixstore.Store) on MySQL/MariaDB. Every
// statement runs on the caller pool (the driver's defaults, one statement
// per round trip): in the caller's transaction, in a READ COMMITTED one of
// its own, or (reads) outside any. Multi-row inserts are one VALUES list
// per batch, as the engine wrote them before it had a seam.

// Batch sizes of the engine's multi-row statements.
const (
	ixMessageBatch = 100
	ixKeyBatch     = 300
)

// engineStore implements ixstore.Store over the backend.
type engineStore struct{ b *Backend }

// EngineStore implements ixstore.Backend.
func (b *Backend) EngineStore() ixstore.Store { return engineStore{b} }

// engineTx runs fn in the caller's transaction, or in one of its own (as
// Backend.Begin begins them) when outer is nil.
func (s engineStore) engineTx(ctx context.Context, outer store.Tx, fn func(tx *sql.Tx) error) error {
	if t, ok := outer.(*sqltx.Tx); outer != nil && (!ok || t.Name != "mysql") {
		return errors.New("mysql: the transaction does not belong to this backend")
	}
	return sqltx.Run(ctx, s.b.caller, &sql.TxOptions{Isolation: sql.LevelReadCommitted}, outer, classify, fn)
}

// SchemaMigrate implements ixstore.Store.
func (s engineStore) SchemaMigrate(ctx context.Context) error {
	if err := s.b.migrate(ctx, migrations.Engine, engineMigrations); err != nil {
		return fmt.Errorf("the engine's migrations: %w", err)
	}
	return nil
}

// MessageInsert implements ixstore.Store.
func (s engineStore) MessageInsert(ctx context.Context, outer store.Tx, p *ixstore.MessageInsertParams) error {
	if outer == nil {
		return fmt.Errorf("%w: MessageInsert needs the intake's transaction", actor.ErrInvalidArguments)
	}
	return s.engineTx(ctx, outer, func(tx *sql.Tx) error {
		for _, c := range sqlrow.Chunks(len(p.Messages), ixMessageBatch) {
			args := make([]any, 0, sqlrow.IXMessageWidth*(c[1]-c[0]))
			for i := c[0]; i < c[1]; i++ {
				var err error
				if args, err = sqlrow.IXMessageArgs(args, &p.Messages[i]); err != nil {
					return err
				}
			}
			q := `INSERT INTO ductus_ix_messages (` + sqlrow.IXMessageColumns + `) VALUES ` + sqlrow.Values(c[1]-c[0], sqlrow.IXMessageWidth)
			if _, err := tx.ExecContext(ctx, q, args...); err != nil {
				return classify("insert interface messages", err)
			}
		}
		for _, c := range sqlrow.Chunks(len(p.Deliveries), ixKeyBatch) {
			args := make([]any, 0, 3*(c[1]-c[0]))
			for _, d := range p.Deliveries[c[0]:c[1]] {
				args = append(args, d.MessageID, d.Destination, d.LaneMessageID)
			}
			q := `INSERT INTO ductus_ix_deliveries (message_id, destination, lane_message_id) VALUES ` + sqlrow.Values(c[1]-c[0], 3)
			if _, err := tx.ExecContext(ctx, q, args...); err != nil {
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
	err := s.engineTx(ctx, outer, func(tx *sql.Tx) error {
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
		rows, err := s.b.caller.QueryContext(ctx, `SELECT `+sqlrow.IXMessageColumns+` FROM ductus_ix_messages WHERE id IN (`+sqlrow.List(len(args))+`)`, args...)
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
	rows, err := s.b.caller.QueryContext(ctx, q+` ORDER BY id DESC LIMIT ?`, append(args, p.Limit)...)
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
	err := s.engineTx(ctx, outer, func(tx *sql.Tx) error {
		for _, c := range sqlrow.Chunks(len(p.IDs), ixKeyBatch) {
			args := make([]any, 0, c[1]-c[0])
			for _, id := range p.IDs[c[0]:c[1]] {
				args = append(args, id)
			}
			rows, err := tx.QueryContext(ctx, `SELECT id, ack FROM ductus_ix_messages WHERE id IN (`+sqlrow.List(len(args))+`)`, args...)
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
	rows, err := s.b.caller.QueryContext(ctx, `SELECT destination, lane_message_id FROM ductus_ix_deliveries WHERE message_id = ? ORDER BY destination`, p.MessageID)
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

// DedupeClaim implements ixstore.Store: the insert-if-absent locks each
// key's row (keys sorted); a concurrent intake of the same key waits for
// this transaction and then reads the winner (READ COMMITTED), so two
// senders racing with one message can never both be queued.
func (s engineStore) DedupeClaim(ctx context.Context, outer store.Tx, p *ixstore.DedupeClaimParams) (map[string]string, error) {
	if outer == nil {
		return nil, fmt.Errorf("%w: DedupeClaim needs the intake's transaction", actor.ErrInvalidArguments)
	}
	sorted := sqlrow.SortedKeys(p.Keys)
	out := make(map[string]string, len(p.Keys))
	at, cutoff := p.At.UnixMicro(), p.Since.UnixMicro()
	err := s.engineTx(ctx, outer, func(tx *sql.Tx) error {
		for _, c := range sqlrow.Chunks(len(sorted), ixKeyBatch) {
			part := sorted[c[0]:c[1]]
			args := make([]any, 0, 4*len(part)+2)
			for _, k := range part {
				args = append(args, p.Interface, k, p.Keys[k], at)
			}
			args = append(args, cutoff, cutoff)
			// message_id first: each assignment sees the columns already
			// assigned, and seen_at must still be the old one here.
			q := `INSERT INTO ductus_ix_dedupe (interface, dedupe_key, message_id, seen_at) VALUES ` + sqlrow.Values(len(part), 4) +
				` ON DUPLICATE KEY UPDATE message_id = IF(seen_at < ?, VALUES(message_id), message_id), seen_at = IF(seen_at < ?, VALUES(seen_at), seen_at)`
			if _, err := tx.ExecContext(ctx, q, args...); err != nil {
				return classify("claim dedupe keys", err)
			}
			args = append(args[:0], p.Interface)
			for _, k := range part {
				args = append(args, k)
			}
			rows, err := tx.QueryContext(ctx, `SELECT dedupe_key, message_id FROM ductus_ix_dedupe WHERE interface = ? AND dedupe_key IN (`+sqlrow.List(len(part))+`)`, args...)
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
	err := s.engineTx(ctx, nil, func(tx *sql.Tx) error {
		res, err := tx.ExecContext(ctx, `DELETE FROM ductus_ix_dedupe WHERE interface = ? AND seen_at < ? ORDER BY seen_at LIMIT ?`,
			p.Interface, p.Before.UnixMicro(), p.Limit)
		if err != nil {
			return classify("prune dedupe keys", err)
		}
		n, err = res.RowsAffected()
		return err
	})
	return n, err
}

// SourceStatePut implements ixstore.Store.
func (s engineStore) SourceStatePut(ctx context.Context, outer store.Tx, p *ixstore.SourceStatePutParams) error {
	return s.engineTx(ctx, outer, func(tx *sql.Tx) error {
		if p.Value == nil {
			_, err := tx.ExecContext(ctx, `DELETE FROM ductus_ix_source_state WHERE interface = ? AND state_key = ?`, p.Interface, p.Key)
			return classify("delete source state", err)
		}
		_, err := tx.ExecContext(ctx, `INSERT INTO ductus_ix_source_state (interface, state_key, value, updated_at) VALUES (?, ?, ?, ?)
			ON DUPLICATE KEY UPDATE value = VALUES(value), updated_at = VALUES(updated_at)`,
			p.Interface, p.Key, string(p.Value), p.At.UnixMicro())
		return classify("write source state", err)
	})
}

// SourceStateGet implements ixstore.Store.
func (s engineStore) SourceStateGet(ctx context.Context, p *ixstore.SourceStateGetParams) ([]byte, bool, error) {
	var v string
	err := s.b.caller.QueryRowContext(ctx, `SELECT value FROM ductus_ix_source_state WHERE interface = ? AND state_key = ?`, p.Interface, p.Key).Scan(&v)
	switch {
	case errors.Is(err, sql.ErrNoRows):
		return nil, false, nil
	case err != nil:
		return nil, false, classify("read source state", err)
	}
	return []byte(v), true, nil
}
