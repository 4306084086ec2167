package postgres

import (
	"context"

	"github.com/ductus/ductus/adapters/internal/sqlrow"
	"github.com/ductus/ductus/integration/ixstore"
	"github.com/ductus/ductus/runtime/store"
)

// The operator API's part of the engine store on PostgreSQL: API tokens
// and the audit log. Writes run in a transaction of their own begun as
// Backend.Begin begins them (the audit row in the caller's transaction
// when there is one, so it commits with the change it describes); reads
// run on a pooled connection outside any transaction.

// TokenInsert implements ixstore.Store.
func (s engineStore) TokenInsert(ctx context.Context, p *ixstore.TokenInsertParams) error {
	args, err := sqlrow.IXTokenArgs(&p.Token)
	if err != nil {
		return err
	}
	return s.engineTx(ctx, nil, func(tx querier) error {
		_, err := tx.Exec(ctx, Rebind(sqlrow.IXTokenInsert), args...)
		return classify("insert a token", err)
	})
}

// TokenRevoke implements ixstore.Store.
func (s engineStore) TokenRevoke(ctx context.Context, p *ixstore.TokenRevokeParams) (bool, error) {
	args, err := sqlrow.IXTokenRevokeArgs(p)
	if err != nil {
		return false, err
	}
	var n int64
	err = s.engineTx(ctx, nil, func(tx querier) error {
		tag, err := tx.Exec(ctx, Rebind(sqlrow.IXTokenRevoke), args...)
		n = tag.RowsAffected()
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
	return s.engineTx(ctx, outer, func(tx querier) error {
		_, err := tx.Exec(ctx, Rebind(sqlrow.IXAuditInsert), args...)
		return classify("write an audit row", err)
	})
}
