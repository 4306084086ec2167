package mysql

import (
	"context"
	"database/sql"

	"github.com/ductus/ductus/adapters/internal/sqlrow"
	"github.com/ductus/ductus/integration/ixstore"
	"github.com/ductus/ductus/runtime/store"
)

// The operator API's part of the engine store on MySQL/MariaDB: API
// tokens and the audit log. Writes run in a READ COMMITTED transaction of
// their own (the audit row in the caller's transaction when there is one,
// so it commits with the change it describes); reads run on the caller
// pool outside any transaction.

// TokenInsert implements ixstore.Store.
func (s engineStore) TokenInsert(ctx context.Context, p *ixstore.TokenInsertParams) error {
	args, err := sqlrow.IXTokenArgs(&p.Token)
	if err != nil {
		return err
	}
	return s.engineTx(ctx, nil, func(tx *sql.Tx) error {
		_, err := tx.ExecContext(ctx, sqlrow.IXTokenInsert, args...)
		return classify("insert a token", err)
	})
}

// TokenRevoke implements ixstore.Store. The update only ever turns NULL
// into a time, so the driver's affected rows (changed, not matched) are
// the rows revoked.
func (s engineStore) TokenRevoke(ctx context.Context, p *ixstore.TokenRevokeParams) (bool, error) {
	args, err := sqlrow.IXTokenRevokeArgs(p)
	if err != nil {
		return false, err
	}
	var n int64
	err = s.engineTx(ctx, nil, func(tx *sql.Tx) error {
		res, err := tx.ExecContext(ctx, sqlrow.IXTokenRevoke, args...)
		if err != nil {
			return classify("revoke a token", err)
		}
		n, err = res.RowsAffected()
		return classify("revoke a token", err)
	})
	return n > 0, err
}

// AuditInsert implements ixstore.Store.
func (s engineStore) AuditInsert(ctx context.Context, outer store.Tx, p *ixstore.AuditInsertParams) error {
	args, err := sqlrow.IXAuditArgs(&p.Entry)
	if err != nil {
		return err
	}
	return s.engineTx(ctx, outer, func(tx *sql.Tx) error {
		_, err := tx.ExecContext(ctx, sqlrow.IXAuditInsert, args...)
		return classify("write an audit row", err)
	})
}
