package sqlite

import (
	"context"

	"github.com/ductus/ductus/adapters/internal/sqlrow"
	"github.com/ductus/ductus/integration/ixstore"
	"github.com/ductus/ductus/runtime/store"
)

// The operator API's part of the engine store on SQLite: API tokens and
// the audit log. Writes run on the writer connection (the audit row in
// the caller's transaction when there is one, so it commits with the
// change it describes); reads run on the read pool.

// TokenInsert implements ixstore.Store.
func (s engineStore) TokenInsert(ctx context.Context, p *ixstore.TokenInsertParams) error {
	args, err := sqlrow.IXTokenArgs(&p.Token)
	if err != nil {
		return err
	}
	return s.b.write(ctx, nil, func(tx *wtx) error {
		_, err := s.b.exec(ctx, tx, "insert a token", sqlrow.IXTokenInsert, args...)
		return err
	})
}

// TokenRevoke implements ixstore.Store.
func (s engineStore) TokenRevoke(ctx context.Context, p *ixstore.TokenRevokeParams) (bool, error) {
	args, err := sqlrow.IXTokenRevokeArgs(p)
	if err != nil {
		return false, err
	}
	var n int64
	err = s.b.write(ctx, nil, func(tx *wtx) error {
		var err error
		n, err = s.b.exec(ctx, tx, "revoke a token", sqlrow.IXTokenRevoke, args...)
		return err
	})
	return n > 0, err
}

// AuditInsert implements ixstore.Store.
func (s engineStore) AuditInsert(ctx context.Context, outer store.Tx, p *ixstore.AuditInsertParams) error {
	args, err := sqlrow.IXAuditArgs(&p.Entry)
	if err != nil {
		return err
	}
	return s.b.write(ctx, outer, func(tx *wtx) error {
		_, err := s.b.exec(ctx, tx, "write an audit row", sqlrow.IXAuditInsert, args...)
		return err
	})
}
