package mysql

import (
	"context"
	"database/sql"

	"github.com/ductus/ductus/adapters/internal/sqlrow"
	"github.com/ductus/ductus/integration/ixstore"
)

// PauseInsert implements ixstore.Store. INSERT IGNORE would also swallow
// errors other than the duplicate key (a value too long), so the row is
// inserted only where none is, and the primary key catches a race.
func (s engineStore) PauseInsert(ctx context.Context, p *ixstore.Pause) (bool, error) {
	var n int64
	err := s.engineTx(ctx, nil, func(tx *sql.Tx) error {
		args := append(sqlrow.IXPauseArgs(p), p.Interface, p.Destination)
		res, err := tx.ExecContext(ctx, `INSERT INTO ductus_ix_pauses (`+sqlrow.IXPauseColumns+`)
SELECT ?, ?, ?, ?, ? FROM DUAL WHERE NOT EXISTS (SELECT 1 FROM ductus_ix_pauses WHERE interface = ? AND destination = ?)`, args...)
		if err != nil {
			return classify("pause a destination", err)
		}
		n, err = res.RowsAffected()
		return classify("pause a destination", err)
	})
	return n > 0, err
}

// PauseDelete implements ixstore.Store.
func (s engineStore) PauseDelete(ctx context.Context, p *ixstore.PauseDeleteParams) (bool, error) {
	var n int64
	err := s.engineTx(ctx, nil, func(tx *sql.Tx) error {
		res, err := tx.ExecContext(ctx, sqlrow.IXPauseDelete, p.Interface, p.Destination)
		if err != nil {
			return classify("resume a destination", err)
		}
		n, err = res.RowsAffected()
		return classify("resume a destination", err)
	})
	return n > 0, err
}
