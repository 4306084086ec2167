package sqlite

import (
	"context"
	"database/sql"
	"strconv"
	"strings"

	"github.com/ductus/ductus/adapters/internal/sqlrow"
	"github.com/ductus/ductus/runtime/store"
	"github.com/ductus/ductus/runtime/store/sqltx"
)

// The claim is one statement: the candidate scan walks the head_due index
// (longest-waiting first) and the update bumps each chosen actor's
// generation. SQLite's write lock makes the pair atomic.
const (
	claimSet = `UPDATE ductus_actors SET generation = generation + 1, lease_owner = ?, lease_expires = ` + now + ` + ?
		WHERE pk IN (SELECT pk FROM ductus_actors WHERE head_due <= ` + now + ` - ?
			AND (lease_owner IS NULL OR lease_expires <= ` + now + ` - ?) AND paused = 0 AND `
	claimReturning = ` RETURNING pk, generation, type, id, state, state_version, lease_expires`
	sqlClaim       = claimSet + `type IN (SELECT value FROM json_each(?)) ORDER BY head_due LIMIT ?)` + claimReturning
	sqlClaimPKs    = claimSet + `type IN (SELECT value FROM json_each(?)) AND pk IN (SELECT value FROM json_each(?)) LIMIT ?)` + claimReturning
	sqlLeaseValid  = `SELECT 1 FROM ductus_actors WHERE pk = ? AND lease_owner = ? AND generation = ? AND lease_expires > ` + now
)

// LeaseClaim implements store.Backend.
func (b *Backend) LeaseClaim(ctx context.Context, p *store.LeaseClaimParams) ([]store.Lease, error) {
	if p.Limit <= 0 || len(p.Types) == 0 {
		return nil, nil
	}
	var out []store.Lease
	err := b.write(ctx, nil, func(tx *wtx) error {
		types := jsonList(p.Types)
		wait := store.Micros(p.MinWait)
		var rows *sql.Rows
		var err error
		if len(p.PKs) > 0 {
			rows, err = b.query(ctx, tx, "claim activations", sqlClaimPKs, p.Owner, store.Micros(p.TTL), wait, wait, types, jsonInts(p.PKs), p.Limit)
		} else {
			rows, err = b.query(ctx, tx, "claim activations", sqlClaim, p.Owner, store.Micros(p.TTL), wait, wait, types, p.Limit)
		}
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			var l store.Lease
			var state sql.NullString
			var exp sql.NullInt64
			if err := rows.Scan(&l.ActorPK, &l.Generation, &l.Ref.Type, &l.Ref.ID, &state, &l.StateVersion, &exp); err != nil {
				return classify("claim activations", err)
			}
			if state.Valid {
				l.State = []byte(state.String)
			}
			l.ExpiresAt = micros(exp)
			out = append(out, l)
		}
		return classify("claim activations", rows.Err())
	})
	return out, err
}

// LeaseRenew implements store.Backend.
func (b *Backend) LeaseRenew(ctx context.Context, p *store.LeaseRenewParams) ([]store.LeaseRef, error) {
	if len(p.Leases) == 0 {
		return nil, nil
	}
	var out []store.LeaseRef
	err := b.write(ctx, nil, func(tx *wtx) error {
		for _, c := range sqltx.Chunks(len(p.Leases), 400) {
			q := `UPDATE ductus_actors SET lease_expires = ` + now + ` + ? WHERE lease_owner = ? AND lease_expires > ` + now +
				` AND (pk, generation) IN (VALUES ` + sqltx.Placeholders(c[1]-c[0], 2) + `) RETURNING pk, generation`
			args := []any{store.Micros(p.TTL), p.Owner}
			for _, l := range p.Leases[c[0]:c[1]] {
				args = append(args, l.ActorPK, l.Generation)
			}
			rows, err := tx.QueryContext(ctx, q, args...)
			if err != nil {
				return classify("renew leases", err)
			}
			for rows.Next() {
				var l store.LeaseRef
				if err := rows.Scan(&l.ActorPK, &l.Generation); err != nil {
					rows.Close()
					return classify("renew leases", err)
				}
				out = append(out, l)
			}
			if err := rows.Close(); err != nil {
				return classify("renew leases", err)
			}
		}
		return nil
	})
	return out, err
}

// LeaseRelease implements store.Backend. A yield moves the actor's due
// head work to now, behind work that has waited longer.
func (b *Backend) LeaseRelease(ctx context.Context, p *store.LeaseReleaseParams) error {
	if len(p.Leases) == 0 {
		return nil
	}
	return b.write(ctx, nil, func(tx *wtx) error {
		for _, c := range sqltx.Chunks(len(p.Leases), 400) {
			q := `UPDATE ductus_actors SET lease_owner = NULL, lease_expires = NULL,
				head_due = CASE WHEN ? AND head_due < ` + now + ` THEN ` + now + ` ELSE head_due END
				WHERE lease_owner = ? AND (pk, generation) IN (VALUES ` + sqltx.Placeholders(c[1]-c[0], 2) + `)`
			args := []any{p.Yield, p.Owner}
			for _, l := range p.Leases[c[0]:c[1]] {
				args = append(args, l.ActorPK, l.Generation)
			}
			if _, err := tx.ExecContext(ctx, q, args...); err != nil {
				return classify("release leases", err)
			}
		}
		return nil
	})
}

// LeaseOwnedDue implements store.Backend.
func (b *Backend) LeaseOwnedDue(ctx context.Context, owner string) ([]store.LeaseRef, error) {
	rows, err := b.r.QueryContext(ctx, `SELECT pk, generation FROM ductus_actors
		WHERE lease_owner = ? AND lease_expires > `+now+` AND head_due <= `+now, owner)
	if err != nil {
		return nil, classify("list owned actors with work", err)
	}
	defer rows.Close()
	out, err := sqlrow.Collect(rows, sqlrow.ScanLeaseRef)
	return out, classify("list owned actors with work", err)
}

// jsonList encodes strings as a JSON array for json_each, so a statement
// with a variable-length IN list stays one prepared statement.
func jsonList(vs []string) string {
	var b strings.Builder
	b.WriteByte('[')
	for i, v := range vs {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteByte('"')
		for _, r := range v {
			switch {
			case r == '"' || r == '\\':
				b.WriteByte('\\')
				b.WriteRune(r)
			case r < 0x20:
				b.WriteString(`\u00`)
				b.WriteByte("0123456789abcdef"[r>>4])
				b.WriteByte("0123456789abcdef"[r&15])
			default:
				b.WriteRune(r)
			}
		}
		b.WriteByte('"')
	}
	b.WriteByte(']')
	return b.String()
}

func jsonInts(vs []int64) string {
	var b strings.Builder
	b.WriteByte('[')
	for i, v := range vs {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(strconv.FormatInt(v, 10))
	}
	b.WriteByte(']')
	return b.String()
}
