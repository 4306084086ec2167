package postgres

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/ductus/ductus/actor"
	"github.com/ductus/ductus/adapters/internal/readside"
	"github.com/ductus/ductus/adapters/internal/sqlrow"
	"github.com/ductus/ductus/integration/ixstore"
	"github.com/ductus/ductus/migrations"
	"github.com/ductus/ductus/runtime/store"
)

// The integration engine's store (ixstore.Store) on PostgreSQL. Its
// statements run in the caller's transaction (plan_cache_mode auto, as
// Begin sets it), in one of their own begun the same way, or (reads) on a
// pooled connection with the server's plan choice. The statements shared
// with the other backends come from sqlrow with ? placeholders, rebound
// here; multi-row inserts are one VALUES list per batch, as the engine
// wrote them before it had a seam, so intake costs what it did.

// engineStore implements ixstore.Store over the backend: the writes and
// the message path here, the read side (the message browser, the audit
// log, accounts, tokens, pauses) by the Reader all three backends share.
type engineStore struct {
	b *Backend
	*readside.Reader
}

// EngineStore implements ixstore.Backend.
func (b *Backend) EngineStore() ixstore.Store { return engineStore{b, b.readSide} }

// engineTx runs fn in the caller's transaction, or in one of its own
// (begun as Backend.Begin begins) when outer is nil.
func (s engineStore) engineTx(ctx context.Context, outer store.Tx, fn func(tx querier) error) error {
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
	if err := fn(own.(*callerTx)); err != nil {
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
	sts, err := sqlrow.IXInserts(p)
	if err != nil {
		return err
	}
	// The messages, their search values and their deliveries go in one
	// round trip: on one connection the intake waits for each in turn,
	// and three round trips were half of its statements.
	var bt batch
	for _, st := range sts {
		bt.exec("insert interface messages", Rebind(st.SQL), st.Args...)
	}
	return s.engineTx(ctx, outer, func(tx querier) error { return bt.run(ctx, tx) })
}

// MessageByOrigin implements ixstore.Store.
func (s engineStore) MessageByOrigin(ctx context.Context, outer store.Tx, p *ixstore.MessageByOriginParams) (string, bool, error) {
	var id string
	found := false
	err := s.engineTx(ctx, outer, func(tx querier) error {
		err := tx.QueryRow(ctx, Rebind(sqlrow.IXByOrigin), p.Interface, p.Origin).Scan(&id)
		found = err == nil
		if errors.Is(err, pgx.ErrNoRows) {
			return nil
		}
		return classify("find a message by origin", err)
	})
	return id, found, err
}

// MessageACKs implements ixstore.Store.
func (s engineStore) MessageACKs(ctx context.Context, outer store.Tx, p *ixstore.MessageACKsParams) (map[string][]byte, error) {
	out := map[string][]byte{}
	err := s.engineTx(ctx, outer, func(tx querier) error {
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
func queryPairs[V string | []byte](ctx context.Context, tx querier, op string, st sqlrow.Statement, into map[string]V) error {
	rows, err := tx.Query(ctx, Rebind(st.SQL), st.Args...)
	if err != nil {
		return classify(op, err)
	}
	defer rows.Close()
	return classify(op, sqlrow.ScanPairs(rows, into))
}

// DedupeClaim implements ixstore.Store: an insert-if-absent that takes
// over expired claims locks each key's row; a concurrent intake of the same
// key waits for this transaction and then reads the winner (the read
// starts after the insert, and read committed shows it the committed
// winner), so two senders racing with one message can never both be
// queued.
func (s engineStore) DedupeClaim(ctx context.Context, outer store.Tx, p *ixstore.DedupeClaimParams) (map[string]string, error) {
	if outer == nil {
		return nil, fmt.Errorf("%w: DedupeClaim needs the intake's transaction", actor.ErrInvalidArguments)
	}
	out := make(map[string]string, len(p.Keys))
	err := s.engineTx(ctx, outer, func(tx querier) error {
		for _, c := range sqlrow.IXClaims(p) {
			q := c.Insert.SQL + ` ON CONFLICT (interface, dedupe_key) DO UPDATE SET message_id = excluded.message_id, seen_at = excluded.seen_at
				WHERE ductus_ix_dedupe.seen_at < ?`
			if _, err := tx.Exec(ctx, Rebind(q), append(c.Insert.Args, p.Since.UnixMicro())...); err != nil {
				return classify("claim dedupe keys", err)
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
	err := s.engineTx(ctx, nil, func(tx querier) error {
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
	return s.engineTx(ctx, outer, func(tx querier) error {
		if p.Value == nil {
			_, err := tx.Exec(ctx, Rebind(sqlrow.IXStateDelete), p.Interface, p.Key)
			return classify("delete source state", err)
		}
		_, err := tx.Exec(ctx, Rebind(sqlrow.IXStatePut+` ON CONFLICT (interface, state_key) DO UPDATE SET value = excluded.value, updated_at = excluded.updated_at`),
			p.Interface, p.Key, string(p.Value), p.At.UnixMicro())
		return classify("write source state", err)
	})
}

// SourceStateGet implements ixstore.Store.
func (s engineStore) SourceStateGet(ctx context.Context, p *ixstore.SourceStateGetParams) ([]byte, bool, error) {
	rows, err := s.b.read(ctx, sqlrow.IXStateGet, p.Interface, p.Key)
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

// DeliveryRelink implements ixstore.Store.
func (s engineStore) DeliveryRelink(ctx context.Context, outer store.Tx, p *ixstore.DeliveryRelinkParams) (bool, error) {
	var n int64
	err := s.engineTx(ctx, outer, func(tx querier) error {
		tag, err := tx.Exec(ctx, Rebind(sqlrow.IXDeliveryRelink), p.To, p.MessageID, p.Destination, p.From)
		n = tag.RowsAffected()
		return classify("relink a delivery", err)
	})
	return n > 0, err
}

// DeliveryDismiss implements ixstore.Store.
func (s engineStore) DeliveryDismiss(ctx context.Context, outer store.Tx, p *ixstore.DeliveryDismissParams) (bool, error) {
	var n int64
	err := s.engineTx(ctx, outer, func(tx querier) error {
		tag, err := tx.Exec(ctx, Rebind(sqlrow.IXDeliveryDismiss), sqlrow.IXDeliveryDismissArgs(p)...)
		n = tag.RowsAffected()
		return classify("dismiss a delivery", err)
	})
	return n > 0, err
}
