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

// TokenByHash implements ixstore.Store.
func (s engineStore) TokenByHash(ctx context.Context, p *ixstore.TokenByHashParams) (ixstore.Token, bool, error) {
	// The hash is unique: at most one row.
	toks, err := readAll(ctx, s.b, "find a token", sqlrow.ScanIXToken, sqlrow.IXTokenByHash, p.Hash)
	if err != nil || len(toks) == 0 {
		return ixstore.Token{}, false, err
	}
	return toks[0], true, nil
}

// TokenList implements ixstore.Store.
func (s engineStore) TokenList(ctx context.Context) ([]ixstore.Token, error) {
	return readAll(ctx, s.b, "list tokens", sqlrow.ScanIXToken, sqlrow.IXTokenList)
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

// AuditList implements ixstore.Store.
func (s engineStore) AuditList(ctx context.Context, p *ixstore.AuditListParams) ([]ixstore.AuditEntry, error) {
	st, err := sqlrow.IXAuditList(p)
	if err != nil {
		return nil, err
	}
	return readAll(ctx, s.b, "read the audit log", sqlrow.ScanIXAudit, st.SQL, st.Args...)
}

// readAll runs query on the caller pool and reads every row with scan.
func readAll[T any](ctx context.Context, b *Backend, op string, scan func(sqlrow.Scanner) (T, error), query string, args ...any) ([]T, error) {
	rows, err := b.caller.QueryContext(ctx, query, args...)
	if err != nil {
		return nil, classify(op, err)
	}
	defer rows.Close()
	out, err := sqlrow.Collect(rows, scan)
	return out, classify(op, err)
}
