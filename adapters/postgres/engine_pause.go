package postgres

import (
	"context"

	"github.com/ductus/ductus/adapters/internal/sqlrow"
	"github.com/ductus/ductus/integration/ixstore"
)

// PauseInsert implements ixstore.Store.
func (s engineStore) PauseInsert(ctx context.Context, p *ixstore.Pause) (bool, error) {
	var n int64
	err := s.engineTx(ctx, nil, func(tx querier) error {
		tag, err := tx.Exec(ctx, Rebind(`INSERT INTO ductus_ix_pauses`+sqlrow.IXPauseInsertValues+` ON CONFLICT DO NOTHING`), sqlrow.IXPauseArgs(p)...)
		n = tag.RowsAffected()
		return classify("pause a destination", err)
	})
	return n > 0, err
}

// PauseDelete implements ixstore.Store.
func (s engineStore) PauseDelete(ctx context.Context, p *ixstore.PauseDeleteParams) (bool, error) {
	var n int64
	err := s.engineTx(ctx, nil, func(tx querier) error {
		tag, err := tx.Exec(ctx, Rebind(sqlrow.IXPauseDelete), p.Interface, p.Destination)
		n = tag.RowsAffected()
		return classify("resume a destination", err)
	})
	return n > 0, err
}
