package readside

import (
	"context"
	"fmt"

	"github.com/uptrace/bun"

	"github.com/ductus/ductus/actor"
	"github.com/ductus/ductus/integration/ixstore"
)

// tokenRow is a row of ductus_ix_tokens (only the SHA-256 of a token is
// stored).
type tokenRow struct {
	bun.BaseModel `bun:"table:ductus_ix_tokens,alias:t"`

	ID        string `bun:"id"`
	Name      string `bun:"name"`
	Hash      string `bun:"hash"`
	Role      string `bun:"role"`
	Perms     string `bun:"perms"`
	Owner     string `bun:"owner"` // NULL for a service token
	CreatedAt int64  `bun:"created_at"`
	CreatedBy string `bun:"created_by"`
	RevokedAt int64  `bun:"revoked_at"` // NULL while valid
}

func (t *tokenRow) token() ixstore.Token {
	return ixstore.Token{ID: t.ID, Name: t.Name, Hash: t.Hash, Role: t.Role, Perms: t.Perms, Owner: t.Owner,
		CreatedAt: micros(t.CreatedAt), CreatedBy: t.CreatedBy, RevokedAt: micros(t.RevokedAt)}
}

// TokenByHash implements ixstore.Store: the hash is unique.
func (r *Reader) TokenByHash(ctx context.Context, p *ixstore.TokenByHashParams) (ixstore.Token, bool, error) {
	return one(ctx, r, "find a token", r.db.NewSelect().Model((*tokenRow)(nil)).Where("hash = ?", p.Hash), (*tokenRow).token)
}

// TokenList implements ixstore.Store: by creation, then ID, so tokens
// made in one microsecond still list in one stable order.
func (r *Reader) TokenList(ctx context.Context) ([]ixstore.Token, error) {
	return list(ctx, r, "list tokens", r.db.NewSelect().Model((*tokenRow)(nil)).Order("created_at", "id"), (*tokenRow).token)
}

// auditRow is a row of ductus_ix_audit.
type auditRow struct {
	bun.BaseModel `bun:"table:ductus_ix_audit,alias:a"`

	ID      string `bun:"id"`
	At      int64  `bun:"at"`
	Actor   string `bun:"actor"`
	Via     string `bun:"via"`
	Address string `bun:"address"`
	Action  string `bun:"action"`
	Target  string `bun:"target"`
	Outcome string `bun:"outcome"`
	Detail  string `bun:"detail"` // a JSON document, or NULL
}

func (a *auditRow) entry() ixstore.AuditEntry {
	e := ixstore.AuditEntry{ID: a.ID, At: micros(a.At), Actor: a.Actor, Via: a.Via, Address: a.Address,
		Action: a.Action, Target: a.Target, Outcome: a.Outcome}
	if a.Detail != "" {
		e.Detail = []byte(a.Detail)
	}
	return e
}

// AuditList implements ixstore.Store: a keyset page on the ID (a UUIDv7,
// so ID order is time order), newest first unless OldestFirst, with the
// optional exact filters, each served by its (column, id) index.
func (r *Reader) AuditList(ctx context.Context, p *ixstore.AuditListParams) ([]ixstore.AuditEntry, error) {
	if p.Limit < 1 {
		return nil, fmt.Errorf("%w: AuditList: limit %d is not positive", actor.ErrInvalidArguments, p.Limit)
	}
	q := r.db.NewSelect().Model((*auditRow)(nil)).Limit(int64(p.Limit))
	for _, f := range []struct{ cond, value string }{{"id < ?", p.Before}, {"id > ?", p.After}, {"action = ?", p.Action}, {"actor = ?", p.Actor}} {
		if f.value != "" {
			q = q.Where(f.cond, f.value)
		}
	}
	if p.OldestFirst {
		q = q.Order("id")
	} else {
		q = q.OrderExpr("id DESC")
	}
	return list(ctx, r, "read the audit log", q, (*auditRow).entry)
}
