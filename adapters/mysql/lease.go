package mysql

import (
	"context"
	"database/sql"
	"slices"

	"github.com/ductus/ductus/adapters/internal/sqlrow"
	"github.com/ductus/ductus/runtime/store"
	"github.com/ductus/ductus/runtime/store/sqltx"
)

// eligible is the claim condition: due head work, lease free or expired,
// not paused. lease_expires is NULL exactly when lease_owner is, which lets
// the head_due index cover the whole check.
const eligible = `head_due <= NOW(6) AND (lease_expires IS NULL OR lease_expires <= NOW(6)) AND paused = 0`

// waited is eligible for work claimable for at least a given time (the
// argument, in microseconds, twice).
const waited = `head_due <= NOW(6) - INTERVAL ? MICROSECOND AND (lease_expires IS NULL OR lease_expires <= NOW(6) - INTERVAL ? MICROSECOND) AND paused = 0`

// LeaseClaim implements store.Backend in three round trips: a read-only
// scan of the head_due index for candidates (longest waiting first), then
// SELECT ... FOR UPDATE SKIP LOCKED by primary key on those rows with the
// eligibility checked again under the lock (another claimer's rows are
// skipped, never waited for, and no lock spans a range), then the update
// of the locked rows, their read and COMMIT.
func (b *Backend) LeaseClaim(ctx context.Context, p *store.LeaseClaimParams) ([]store.Lease, error) {
	if p.Limit <= 0 || len(p.Types) == 0 {
		return nil, nil
	}
	types := sqltx.Strings(p.Types)
	var cands []int64
	scan := newBatch("claim activations: find candidates")
	cond, condArgs := eligible, []any(nil)
	if p.MinWait > 0 {
		cond, condArgs = waited, []any{store.Micros(p.MinWait), store.Micros(p.MinWait)}
	}
	if len(p.PKs) > 0 {
		scan.query(scanInts(&cands), `SELECT pk FROM ductus_actors WHERE pk IN (`+sqltx.List(len(p.PKs))+`) AND `+cond+
			` AND type IN (`+sqltx.List(len(types))+`) ORDER BY head_due LIMIT ?`,
			append(append(append(sqltx.Int64s(p.PKs), condArgs...), types...), p.Limit)...)
	} else {
		scan.query(scanInts(&cands), `SELECT pk FROM ductus_actors WHERE `+cond+
			` AND type IN (`+sqltx.List(len(types))+`) ORDER BY head_due LIMIT ?`, append(append(condArgs, types...), p.Limit)...)
	}
	if err := b.read(ctx, scan); err != nil || len(cands) == 0 {
		return nil, err
	}
	var out []store.Lease
	err := b.txn(ctx, nil, func(s *session) error {
		out = nil
		var locked []int64
		lock := newBatch("claim activations: lock candidates")
		lock.query(scanInts(&locked), `SELECT pk FROM ductus_actors WHERE pk IN (`+sqltx.List(len(cands))+`) AND `+eligible+
			` FOR UPDATE SKIP LOCKED`, sqltx.Int64s(cands)...)
		if err := s.run(ctx, lock); err != nil || len(locked) == 0 {
			return err
		}
		in := sqltx.List(len(locked))
		pks := sqltx.Int64s(locked)
		w := newBatch("claim activations: lease")
		w.exec(`UPDATE ductus_actors SET generation = generation + 1, lease_owner = ?, lease_expires = NOW(6) + INTERVAL ? MICROSECOND
			WHERE pk IN (`+in+`)`, append([]any{p.Owner, store.Micros(p.TTL)}, pks...)...)
		w.query(func(rows *sql.Rows) error {
			for rows.Next() {
				var l store.Lease
				var state sql.NullString
				var exp sql.NullTime
				if err := rows.Scan(&l.ActorPK, &l.Generation, &l.Ref.Type, &l.Ref.ID, &state, &l.StateVersion, &exp); err != nil {
					return err
				}
				if state.Valid {
					l.State = []byte(state.String)
				}
				l.ExpiresAt = exp.Time
				out = append(out, l)
			}
			return nil
		}, `SELECT pk, generation, type, id, state, state_version, lease_expires FROM ductus_actors WHERE pk IN (`+in+`)`, pks...)
		return s.commit(ctx, w)
	})
	if err != nil {
		return nil, err
	}
	// Longest waiting first, as the scan ordered them.
	rank := make(map[int64]int, len(cands))
	for i, pk := range cands {
		rank[pk] = i
	}
	slices.SortFunc(out, func(a, b store.Lease) int { return rank[a.ActorPK] - rank[b.ActorPK] })
	return out, nil
}

// read runs a batch of plain reads outside any transaction.
func (b *Backend) read(ctx context.Context, bt *batch) error {
	conn, err := b.db.Conn(ctx)
	if err != nil {
		return classify("connect", err)
	}
	defer conn.Close()
	if err := b.runMulti(ctx, conn, bt.op, bt.stmts); err != nil {
		return err
	}
	for _, f := range bt.after {
		f()
	}
	return nil
}

// leaseIn renders "pk IN (...) AND (pk, generation) IN (...)" for leases:
// the first part gives the optimizer a primary-key range.
func leaseIn(ls []store.LeaseRef) (string, []any) {
	args := make([]any, 0, 3*len(ls))
	for _, l := range ls {
		args = append(args, l.ActorPK)
	}
	for _, l := range ls {
		args = append(args, l.ActorPK, l.Generation)
	}
	return `pk IN (` + sqltx.List(len(ls)) + `) AND (pk, generation) IN (` + sqltx.Placeholders(len(ls), 2) + `)`, args
}

// LeaseRenew implements store.Backend: one round trip (the new expiry is
// computed once, so the read-back finds exactly the rows renewed).
func (b *Backend) LeaseRenew(ctx context.Context, p *store.LeaseRenewParams) ([]store.LeaseRef, error) {
	if len(p.Leases) == 0 {
		return nil, nil
	}
	var out []store.LeaseRef
	err := b.txn(ctx, nil, func(s *session) error {
		out = nil
		w := newBatch("renew leases")
		w.exec(`SET @ductus_exp = NOW(6) + INTERVAL ? MICROSECOND`, store.Micros(p.TTL))
		for _, c := range sqltx.Chunks(len(p.Leases), 400) {
			cond, args := leaseIn(p.Leases[c[0]:c[1]])
			w.exec(`UPDATE ductus_actors SET lease_expires = @ductus_exp WHERE lease_owner = ? AND lease_expires > NOW(6) AND `+cond,
				append([]any{p.Owner}, args...)...)
			w.query(func(rows *sql.Rows) error {
				for rows.Next() {
					var l store.LeaseRef
					if err := rows.Scan(&l.ActorPK, &l.Generation); err != nil {
						return err
					}
					out = append(out, l)
				}
				return nil
			}, `SELECT pk, generation FROM ductus_actors WHERE lease_owner = ? AND lease_expires = @ductus_exp AND `+cond,
				append([]any{p.Owner}, args...)...)
		}
		return s.commit(ctx, w)
	})
	return out, err
}

// LeaseRelease implements store.Backend. A yield moves the actor's due
// head work to now, behind work that has waited longer.
func (b *Backend) LeaseRelease(ctx context.Context, p *store.LeaseReleaseParams) error {
	if len(p.Leases) == 0 {
		return nil
	}
	w := newBatch("release leases")
	for _, c := range sqltx.Chunks(len(p.Leases), 400) {
		cond, args := leaseIn(p.Leases[c[0]:c[1]])
		w.exec(`UPDATE ductus_actors SET lease_owner = NULL, lease_expires = NULL,
			head_due = CASE WHEN ? AND head_due < NOW(6) THEN NOW(6) ELSE head_due END
			WHERE lease_owner = ? AND `+cond, append([]any{p.Yield, p.Owner}, args...)...)
	}
	if len(w.stmts) == 1 {
		// One autocommit statement: primary-key lookups lock single rows.
		return b.read(ctx, w)
	}
	return b.txn(ctx, nil, func(s *session) error { return s.commit(ctx, w) })
}

// LeaseOwnedDue implements store.Backend.
func (b *Backend) LeaseOwnedDue(ctx context.Context, owner string) ([]store.LeaseRef, error) {
	b.count(1)
	rows, err := b.db.QueryContext(ctx, `SELECT pk, generation FROM ductus_actors
		WHERE lease_owner = ? AND lease_expires > NOW(6) AND head_due <= NOW(6)`, owner)
	if err != nil {
		return nil, classify("list owned actors with work", err)
	}
	defer rows.Close()
	out, err := sqlrow.Collect(rows, sqlrow.ScanLeaseRef)
	return out, classify("list owned actors with work", err)
}
