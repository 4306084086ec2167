package postgres

import (
	"context"

	"github.com/ductus/ductus/adapters/internal/sqlrow"
	"github.com/ductus/ductus/runtime/store"
)

// BacklogCount implements store.Backend: the statement is the three
// adapters' shared one (sqlrow.Backlog).
func (b *Backend) BacklogCount(ctx context.Context, p *store.BacklogCountParams) (store.Backlog, error) {
	if err := p.Check(); err != nil {
		return store.Backlog{}, err
	}
	st := sqlrow.Backlog(p)
	out, err := sqlrow.ScanBacklog(b.pool.QueryRow(ctx, Rebind(st.SQL), st.Args...))
	if err != nil {
		return store.Backlog{}, classify("count the backlog", err)
	}
	return out, nil
}
