package postgres

import (
	"context"

	"github.com/jackc/pgx/v5"

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

// BacklogByActor implements store.Backend with the shared statement
// (sqlrow.BacklogByActor), rebound, with Postgres's boolean literals. It
// runs with a custom plan (customPlan): the best plan depends on how many
// actors the type has and how large the backlog is, and the generic plan
// estimates "a.type = $1" without the type: with 22,000 actors of which
// 2,000 lanes, and 50,000 dead letters of another type, it scanned every
// actor and every dead letter, where the custom plan reads the type's
// actors and dead letters through their type indexes. Either way effects
// are read only through their partial indexes (TestBacklogByActorPlan).
// An operator's page runs it rarely; planning costs a millisecond or two.
func (b *Backend) BacklogByActor(ctx context.Context, p *store.BacklogByActorParams) ([]store.ActorBacklog, error) {
	if err := p.Check(); err != nil {
		return nil, err
	}
	st := sqlrow.BacklogByActor(p, sqlrow.SQLBooleans)
	var sums sqlrow.ActorBacklogs
	var bt batch
	customPlan(&bt, "count the backlog by actor", func() {
		bt.query("count the backlog by actor", func(rows pgx.Rows) error { return sums.Add(rows) }, Rebind(st.SQL), st.Args...)
	})
	if err := bt.run(ctx, b.pool); err != nil {
		return nil, err
	}
	return sums.Rows(), nil
}
