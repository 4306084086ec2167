package mysql

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
	"github.com/ductus/ductus/runtime/store/sqltx"
)

// The integration engine's store (ixstore.Store) on MySQL/MariaDB. Every
// statement runs on the caller pool (the driver's defaults, one statement
// per round trip): in the caller's transaction, in a READ COMMITTED one of
// its own, or (reads) outside any. Multi-row inserts are one VALUES list
// per batch, as the engine wrote them before it had a seam.

// engineStore implements ixstore.Store over the backend: the writes and
// the message path here, the read side (the message browser, the audit
// log, accounts, tokens, pauses) by the Reader all three backends share.
type engineStore struct {
	b *Backend
	*readside.Reader
}

// EngineStore implements ixstore.Backend.
func (b *Backend) EngineStore() ixstore.Store { return engineStore{b, b.readSide} }

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
	sts, err := sqlrow.IXInserts(p)
	if err != nil {
		return err
	}
	return s.engineTx(ctx, outer, func(tx *sql.Tx) error {
		for _, st := range sts {
			if _, err := tx.ExecContext(ctx, st.SQL, st.Args...); err != nil {
				return classify("insert interface messages", err)
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
	err := s.engineTx(ctx, outer, func(tx *sql.Tx) error {
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
func queryPairs[V string | []byte](ctx context.Context, tx *sql.Tx, op string, st sqlrow.Statement, into map[string]V) error {
	rows, err := tx.QueryContext(ctx, st.SQL, st.Args...)
	if err != nil {
		return classify(op, err)
	}
	defer rows.Close()
	return classify(op, sqlrow.ScanPairs(rows, into))
}

// DedupeClaim implements ixstore.Store: the insert-if-absent locks each
// key's row (keys sorted); a concurrent intake of the same key waits for
// this transaction and then reads the winner (READ COMMITTED), so two
// senders racing with one message can never both be queued.
func (s engineStore) DedupeClaim(ctx context.Context, outer store.Tx, p *ixstore.DedupeClaimParams) (map[string]string, error) {
	if outer == nil {
		return nil, fmt.Errorf("%w: DedupeClaim needs the intake's transaction", actor.ErrInvalidArguments)
	}
	out := make(map[string]string, len(p.Keys))
	cutoff := p.Since.UnixMicro()
	err := s.engineTx(ctx, outer, func(tx *sql.Tx) error {
		for _, c := range sqlrow.IXClaims(p) {
			// message_id first: each assignment sees the columns already
			// assigned, and seen_at must still be the old one here.
			q := c.Insert.SQL + ` ON DUPLICATE KEY UPDATE message_id = IF(seen_at < ?, VALUES(message_id), message_id),
				seen_at = IF(seen_at < ?, VALUES(seen_at), seen_at)`
			if _, err := tx.ExecContext(ctx, q, append(c.Insert.Args, cutoff, cutoff)...); err != nil {
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
			_, err := tx.ExecContext(ctx, sqlrow.IXStateDelete, p.Interface, p.Key)
			return classify("delete source state", err)
		}
		_, err := tx.ExecContext(ctx, sqlrow.IXStatePut+` ON DUPLICATE KEY UPDATE value = VALUES(value), updated_at = VALUES(updated_at)`,
			p.Interface, p.Key, string(p.Value), p.At.UnixMicro())
		return classify("write source state", err)
	})
}

// SourceStateGet implements ixstore.Store.
func (s engineStore) SourceStateGet(ctx context.Context, p *ixstore.SourceStateGetParams) ([]byte, bool, error) {
	var v string
	err := s.b.caller.QueryRowContext(ctx, sqlrow.IXStateGet, p.Interface, p.Key).Scan(&v)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, classify("read source state", err)
	}
	return []byte(v), true, nil
}

// DeliveryRelink implements ixstore.Store. To differs from From, so the
// driver's affected rows (changed, not matched) are the rows moved.
func (s engineStore) DeliveryRelink(ctx context.Context, outer store.Tx, p *ixstore.DeliveryRelinkParams) (bool, error) {
	var n int64
	err := s.engineTx(ctx, outer, func(tx *sql.Tx) error {
		res, err := tx.ExecContext(ctx, sqlrow.IXDeliveryRelink, p.To, p.MessageID, p.Destination, p.From)
		if err != nil {
			return classify("relink a delivery", err)
		}
		n, err = res.RowsAffected()
		return classify("relink a delivery", err)
	})
	return n > 0, err
}

// DeliveryDismiss implements ixstore.Store. The statement is an insert,
// so the driver's affected rows are the dismissals recorded.
func (s engineStore) DeliveryDismiss(ctx context.Context, outer store.Tx, p *ixstore.DeliveryDismissParams) (bool, error) {
	var n int64
	err := s.engineTx(ctx, outer, func(tx *sql.Tx) error {
		res, err := tx.ExecContext(ctx, sqlrow.IXDeliveryDismiss, sqlrow.IXDeliveryDismissArgs(p)...)
		if err != nil {
			return classify("dismiss a delivery", err)
		}
		n, err = res.RowsAffected()
		return classify("dismiss a delivery", err)
	})
	return n > 0, err
}
