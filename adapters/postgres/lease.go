package postgres

import (
	"context"

	"github.com/jackc/pgx/v5"

	"github.com/ductus/ductus/adapters/internal/sqlrow"
	"github.com/ductus/ductus/runtime/store"
)

// The claim is one statement: a range scan of the claim index, longest
// claimable first, locking candidates with SKIP LOCKED (a row another
// claimer or a committing worker holds is passed over, never waited for),
// then the generation bump. The predicate repeats the index's, so the
// planner can use it; the update finds the locked rows through an array of
// their keys (a join would let the generic plan hash the whole table).
const (
	claimFrom = `WITH c AS (
    SELECT pk FROM ductus_actors
    WHERE GREATEST(head_due, lease_expires) <= now() - $5::bigint` + us + ` AND head_due IS NOT NULL AND NOT paused AND type = ANY($3::text[])`
	claimTail = `
    ORDER BY GREATEST(head_due, lease_expires)
    LIMIT $4
    FOR NO KEY UPDATE SKIP LOCKED
)
UPDATE ductus_actors a SET generation = a.generation + 1, lease_owner = $1, lease_expires = now() + $2::bigint` + us + `
WHERE a.pk = ANY (ARRAY (SELECT pk FROM c))
RETURNING a.pk, a.generation, a.type, a.id, a.state, a.state_version, a.lease_expires`
	sqlClaim    = claimFrom + claimTail
	sqlClaimPKs = claimFrom + ` AND pk = ANY($6::bigint[])` + claimTail

	// Renew and release lock their actors in (type, id) order, the order
	// every multi-actor locker uses.
	sqlRenew = `WITH l AS (
    SELECT a.pk FROM ductus_actors a JOIN unnest($3::bigint[], $4::bigint[]) AS u(pk, gen) ON a.pk = u.pk AND a.generation = u.gen
    WHERE a.lease_owner = $1 AND a.lease_expires > now()
    ORDER BY a.type, a.id
    FOR NO KEY UPDATE OF a
)
UPDATE ductus_actors a SET lease_expires = now() + $2::bigint` + us + `
FROM l WHERE a.pk = l.pk
RETURNING a.pk, a.generation`
	// A yield moves the actor's due head work to now, behind work that has
	// waited longer.
	sqlRelease = `WITH l AS (
    SELECT a.pk FROM ductus_actors a JOIN unnest($3::bigint[], $4::bigint[]) AS u(pk, gen) ON a.pk = u.pk AND a.generation = u.gen
    WHERE a.lease_owner = $1
    ORDER BY a.type, a.id
    FOR NO KEY UPDATE OF a
)
UPDATE ductus_actors a SET lease_owner = NULL, lease_expires = NULL,
    head_due = CASE WHEN $2::bool AND a.head_due < now() THEN now() ELSE a.head_due END
FROM l WHERE a.pk = l.pk`
	sqlOwnedDue = `SELECT pk, generation FROM ductus_actors WHERE lease_owner = $1 AND lease_expires > now() AND head_due <= now()`
)

// LeaseClaim implements store.Backend (one round trip).
func (b *Backend) LeaseClaim(ctx context.Context, p *store.LeaseClaimParams) ([]store.Lease, error) {
	if p.Limit <= 0 || len(p.Types) == 0 {
		return nil, nil
	}
	var rows pgx.Rows
	var err error
	if len(p.PKs) > 0 {
		rows, err = b.pool.Query(ctx, sqlClaimPKs, p.Owner, store.Micros(p.TTL), p.Types, p.Limit, store.Micros(p.MinWait), p.PKs)
	} else {
		rows, err = b.pool.Query(ctx, sqlClaim, p.Owner, store.Micros(p.TTL), p.Types, p.Limit, store.Micros(p.MinWait))
	}
	if err != nil {
		return nil, classify("claim activations", err)
	}
	defer rows.Close()
	var out []store.Lease
	for rows.Next() {
		var l store.Lease
		if err := rows.Scan(&l.ActorPK, &l.Generation, &l.Ref.Type, &l.Ref.ID, &l.State, &l.StateVersion, &l.ExpiresAt); err != nil {
			return nil, classify("claim activations", err)
		}
		out = append(out, l)
	}
	return out, classify("claim activations", rows.Err())
}

func leaseArrays(ls []store.LeaseRef) (pks, gens []int64) {
	pks, gens = make([]int64, len(ls)), make([]int64, len(ls))
	for i, l := range ls {
		pks[i], gens[i] = l.ActorPK, l.Generation
	}
	return pks, gens
}

// LeaseRenew implements store.Backend (one round trip).
func (b *Backend) LeaseRenew(ctx context.Context, p *store.LeaseRenewParams) ([]store.LeaseRef, error) {
	if len(p.Leases) == 0 {
		return nil, nil
	}
	pks, gens := leaseArrays(p.Leases)
	rows, err := b.pool.Query(ctx, sqlRenew, p.Owner, store.Micros(p.TTL), pks, gens)
	if err != nil {
		return nil, classify("renew leases", err)
	}
	defer rows.Close()
	out, err := sqlrow.Collect(rows, sqlrow.ScanLeaseRef)
	return out, classify("renew leases", err)
}

// LeaseRelease implements store.Backend (one round trip).
func (b *Backend) LeaseRelease(ctx context.Context, p *store.LeaseReleaseParams) error {
	if len(p.Leases) == 0 {
		return nil
	}
	pks, gens := leaseArrays(p.Leases)
	_, err := b.pool.Exec(ctx, sqlRelease, p.Owner, p.Yield, pks, gens)
	return classify("release leases", err)
}

// LeaseOwnedDue implements store.Backend.
func (b *Backend) LeaseOwnedDue(ctx context.Context, owner string) ([]store.LeaseRef, error) {
	rows, err := b.pool.Query(ctx, sqlOwnedDue, owner)
	if err != nil {
		return nil, classify("list owned actors with work", err)
	}
	defer rows.Close()
	out, err := sqlrow.Collect(rows, sqlrow.ScanLeaseRef)
	return out, classify("list owned actors with work", err)
}
