package sqlite

import (
	"context"

	"github.com/ductus/ductus/adapters/internal/sqlrow"
	"github.com/ductus/ductus/integration/ixstore"
)

// PauseInsert implements ixstore.Store.
func (s engineStore) PauseInsert(ctx context.Context, p *ixstore.Pause) (bool, error) {
	var n int64
	err := s.b.write(ctx, nil, func(tx *wtx) error {
		var err error
		n, err = s.b.exec(ctx, tx, "pause a destination", `INSERT INTO ductus_ix_pauses`+sqlrow.IXPauseInsertValues+` ON CONFLICT DO NOTHING`, sqlrow.IXPauseArgs(p)...)
		return err
	})
	return n > 0, err
}

// PauseDelete implements ixstore.Store.
func (s engineStore) PauseDelete(ctx context.Context, p *ixstore.PauseDeleteParams) (bool, error) {
	var n int64
	err := s.b.write(ctx, nil, func(tx *wtx) error {
		var err error
		n, err = s.b.exec(ctx, tx, "resume a destination", sqlrow.IXPauseDelete, p.Interface, p.Destination)
		return err
	})
	return n > 0, err
}
