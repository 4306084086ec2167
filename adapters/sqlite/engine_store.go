package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"github.com/ductus/ductus/actor"
	"github.com/ductus/ductus/adapters/internal/readside"
	"github.com/ductus/ductus/adapters/internal/sqlrow"
	"github.com/ductus/ductus/integration/ixstore"
	"github.com/ductus/ductus/migrations"
	"github.com/ductus/ductus/runtime/store"
)

// The integration engine's store (ixstore.Store) on SQLite. Writes run on
// the writer connection, in the caller's transaction or in one of their
// own; reads run on the read pool. SQLite has one writer at a time, so a
// dedupe claim's insert and its read of the winners see no other claim in
// between. Multi-row inserts are one VALUES list per batch, as the engine
// wrote them before it had a seam.

// engineStore implements ixstore.Store over the backend: the writes and
// the message path here, the read side (the message browser, the audit
// log, accounts, tokens, pauses) by the Reader all three backends share.
type engineStore struct {
	b *Backend
	*readside.Reader
}

var _ ixstore.Backend = (*Backend)(nil)

// EngineStore implements ixstore.Backend.
func (b *Backend) EngineStore() ixstore.Store { return engineStore{b, b.readSide} }

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
	sts, err := sqlrow.IXInserts(p)
	if err != nil {
		return err
	}
	return s.b.write(ctx, outer, func(tx *wtx) error {
		for _, st := range sts {
			if _, err := s.b.exec(ctx, tx, "insert interface messages", st.SQL, st.Args...); err != nil {
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
		err := tx.QueryRowContext(ctx, sqlrow.IXByOrigin, p.Interface, p.Origin).Scan(&id)
		found = err == nil
		if errors.Is(err, sql.ErrNoRows) {
			return nil
		}
		return classify("find a message by origin", err)
	})
	return id, found, err
}

// MessageACKs implements ixstore.Store.
func (s engineStore) MessageACKs(ctx context.Context, outer store.Tx, p *ixstore.MessageACKsParams) (map[string][]byte, error) {
	out := map[string][]byte{}
	err := s.b.write(ctx, outer, func(tx *wtx) error {
		for _, st := range sqlrow.IXACKReads(p.IDs) {
			if err := queryPairs(ctx, tx, "read ACKs", st, out); err != nil {
				return err
			}
		}
		return nil
	})
	return out, err
}

// queryPairs runs st in tx and reads its (key, value) rows into into.
func queryPairs[V string | []byte](ctx context.Context, tx *wtx, op string, st sqlrow.Statement, into map[string]V) error {
	rows, err := tx.QueryContext(ctx, st.SQL, st.Args...)
	if err != nil {
		return classify(op, err)
	}
	defer rows.Close()
	return classify(op, sqlrow.ScanPairs(rows, into))
}

// DedupeClaim implements ixstore.Store.
func (s engineStore) DedupeClaim(ctx context.Context, outer store.Tx, p *ixstore.DedupeClaimParams) (map[string]string, error) {
	if outer == nil {
		return nil, fmt.Errorf("%w: DedupeClaim needs the intake's transaction", actor.ErrInvalidArguments)
	}
	out := make(map[string]string, len(p.Keys))
	err := s.b.write(ctx, outer, func(tx *wtx) error {
		for _, c := range sqlrow.IXClaims(p) {
			q := c.Insert.SQL + ` ON CONFLICT (interface, dedupe_key) DO UPDATE SET message_id = excluded.message_id, seen_at = excluded.seen_at
				WHERE ductus_ix_dedupe.seen_at < ?`
			if _, err := s.b.exec(ctx, tx, "claim dedupe keys", q, append(c.Insert.Args, p.Since.UnixMicro())...); err != nil {
				return err
			}
			if err := queryPairs(ctx, tx, "read dedupe claims", c.Read, out); err != nil {
				return err
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
			_, err := s.b.exec(ctx, tx, "delete source state", sqlrow.IXStateDelete, p.Interface, p.Key)
			return err
		}
		_, err := s.b.exec(ctx, tx, "write source state", sqlrow.IXStatePut+` ON CONFLICT (interface, state_key) DO UPDATE SET value = excluded.value, updated_at = excluded.updated_at`,
			p.Interface, p.Key, string(p.Value), p.At.UnixMicro())
		return err
	})
}

// SourceStateGet implements ixstore.Store.
func (s engineStore) SourceStateGet(ctx context.Context, p *ixstore.SourceStateGetParams) ([]byte, bool, error) {
	rows, err := s.b.read(ctx, sqlrow.IXStateGet, p.Interface, p.Key)
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

// DeliveryRelink implements ixstore.Store.
func (s engineStore) DeliveryRelink(ctx context.Context, outer store.Tx, p *ixstore.DeliveryRelinkParams) (bool, error) {
	var n int64
	err := s.b.write(ctx, outer, func(tx *wtx) error {
		var err error
		n, err = s.b.exec(ctx, tx, "relink a delivery", sqlrow.IXDeliveryRelink, p.To, p.MessageID, p.Destination, p.From)
		return err
	})
	return n > 0, err
}

// DeliveryDismiss implements ixstore.Store.
func (s engineStore) DeliveryDismiss(ctx context.Context, outer store.Tx, p *ixstore.DeliveryDismissParams) (bool, error) {
	var n int64
	err := s.b.write(ctx, outer, func(tx *wtx) error {
		var err error
		n, err = s.b.exec(ctx, tx, "dismiss a delivery", sqlrow.IXDeliveryDismiss, sqlrow.IXDeliveryDismissArgs(p)...)
		return err
	})
	return n > 0, err
}
