package api

import (
	"context"
	"encoding/json"
	"time"

	"github.com/ductus/ductus/integration/access"
	"github.com/ductus/ductus/integration/ixstore"
)

// tokenView is a stored token as the API shows it (never its hash).
func tokenView(t ixstore.Token) Token {
	perms := []TokenPermissions{}
	ps, _ := access.ParsePerms(t.Perms)
	for _, p := range ps {
		perms = append(perms, TokenPermissions(p))
	}
	out := Token{Id: t.ID, Name: t.Name, Role: TokenRole(t.Role), Permissions: perms, CreatedAt: t.CreatedAt,
		CreatedBy: t.CreatedBy, Revoked: !t.RevokedAt.IsZero()}
	if t.Owner != "" {
		out.Owner = &t.Owner
	}
	if !t.RevokedAt.IsZero() {
		at := t.RevokedAt.UTC()
		out.RevokedAt = &at
	}
	return out
}

func (s *server) ListTokens(ctx context.Context, _ ListTokensRequestObject) (ListTokensResponseObject, error) {
	toks, err := s.acc.Tokens(ctx)
	if err != nil {
		return nil, err
	}
	out := TokenList{Tokens: make([]Token, len(toks))}
	for i, t := range toks {
		out.Tokens[i] = tokenView(t)
	}
	return ListTokens200JSONResponse(out), nil
}

func (s *server) CreateToken(ctx context.Context, req CreateTokenRequestObject) (CreateTokenResponseObject, error) {
	role, err := access.ParseRole(string(req.Body.Role))
	if err != nil {
		return nil, err
	}
	perms, err := permsOf(req.Body.Permissions)
	if err != nil {
		return nil, err
	}
	nt := access.NewToken{Name: req.Body.Name, Role: role, Perms: perms}
	if req.Body.Owner != nil {
		nt.Owner = *req.Body.Owner
	}
	tok, secret, err := s.acc.CreateToken(ctx, principalFrom(ctx), nt)
	if err != nil {
		return nil, err
	}
	return CreateToken201JSONResponse{Token: tokenView(tok), Secret: secret}, nil
}

func (s *server) RevokeToken(ctx context.Context, req RevokeTokenRequestObject) (RevokeTokenResponseObject, error) {
	if err := s.acc.RevokeToken(ctx, principalFrom(ctx), req.Id); err != nil {
		return nil, err
	}
	return RevokeToken204Response{}, nil
}

func (s *server) ListAudit(ctx context.Context, req ListAuditRequestObject) (ListAuditResponseObject, error) {
	limit := pageSize(req.Params.Limit)
	q := ixstore.AuditListParams{Limit: limit + 1}
	if req.Params.Before != nil {
		q.Before = *req.Params.Before
	}
	if req.Params.Action != nil {
		q.Action = *req.Params.Action
	}
	if req.Params.Actor != nil {
		q.Actor = *req.Params.Actor
	}
	rows, err := s.acc.AuditLog(ctx, q)
	if err != nil {
		return nil, err
	}
	page := AuditPage{Entries: []AuditEntry{}}
	for i, e := range rows {
		if i == limit {
			next := rows[limit-1].ID
			page.Next = &next
			break
		}
		page.Entries = append(page.Entries, auditView(e))
	}
	return ListAudit200JSONResponse(page), nil
}

func auditView(e ixstore.AuditEntry) AuditEntry {
	out := AuditEntry{Id: e.ID, At: e.At.UTC().Truncate(time.Microsecond), Actor: e.Actor, Via: e.Via,
		Action: e.Action, Outcome: AuditEntryOutcome(e.Outcome)}
	if e.Address != "" {
		out.Address = &e.Address
	}
	if e.Target != "" {
		out.Target = &e.Target
	}
	if len(e.Detail) > 0 {
		var d map[string]any
		if json.Unmarshal(e.Detail, &d) == nil {
			out.Detail = &d
		}
	}
	return out
}
