package mysql

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
	b.count(1)
	out, err := sqlrow.ScanBacklog(b.db.QueryRowContext(ctx, st.SQL, st.Args...))
	if err != nil {
		return store.Backlog{}, classify("count the backlog", err)
	}
	return out, nil
}

// BacklogByActor implements store.Backend with the shared statement
// (sqlrow.BacklogByActor), one round trip like BacklogCount.
func (b *Backend) BacklogByActor(ctx context.Context, p *store.BacklogByActorParams) ([]store.ActorBacklog, error) {
	if err := p.Check(); err != nil {
		return nil, err
	}
	st := sqlrow.BacklogByActor(p, sqlrow.IntBooleans)
	b.count(1)
	rows, err := b.db.QueryContext(ctx, st.SQL, st.Args...)
	if err != nil {
		return nil, classify("count the backlog by actor", err)
	}
	defer rows.Close()
	out, err := sqlrow.ScanBacklogByActor(rows)
	if err != nil {
		return nil, classify("count the backlog by actor", err)
	}
	return out, nil
}
