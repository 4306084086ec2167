package access

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/google/uuid"

	"github.com/ductus/ductus/actor"
	"github.com/ductus/ductus/integration/ixstore"
	"github.com/ductus/ductus/runtime/store"
)

// Store keeps accounts, sessions, tokens and the audit log in the
// engine's database.
type Store struct {
	ix      ixstore.Store
	policy  Policy
	hashers chan struct{} // a slot per password hash running
	dummy   struct {
		once sync.Once
		hash string
	} // a hash verified for unknown names (see Login)
}

// New returns a Store over the engine's store; zero fields of p take
// their defaults.
func New(ix ixstore.Store, p Policy) *Store {
	return &Store{ix: ix, policy: p.withDefaults(), hashers: make(chan struct{}, hashSlots())}
}

// NewToken is a token to create.
type NewToken struct {
	Name  string
	Role  Role
	Perms Perms
	Owner string // "" for a service token
}

// maxTokenName bounds a token's name (the column is 64 wide).
const maxTokenName = 64

// CreateToken stores a new token and writes its audit row; it returns the
// stored row and the secret, which is never stored and cannot be shown
// again.
func (s *Store) CreateToken(ctx context.Context, by *Principal, nt NewToken) (ixstore.Token, string, error) {
	name := strings.TrimSpace(nt.Name)
	if name == "" || len(name) > maxTokenName {
		return ixstore.Token{}, "", fmt.Errorf("%w: a token's name must be 1 to %d characters", actor.ErrInvalidArguments, maxTokenName)
	}
	if nt.Role < Viewer || nt.Role > Admin {
		return ixstore.Token{}, "", fmt.Errorf("%w: a token needs a role (viewer, operator or admin)", actor.ErrInvalidArguments)
	}
	if nt.Owner != "" {
		if _, err := s.User(ctx, nt.Owner); err != nil {
			return ixstore.Token{}, "", fmt.Errorf("%w: the token's owner: %v", actor.ErrInvalidArguments, err)
		}
	}
	secret := newSecret()
	tok := ixstore.Token{
		ID: newTokenID(), Name: name, Hash: HashToken(secret), Role: nt.Role.String(), Perms: nt.Perms.String(),
		Owner: nt.Owner, CreatedAt: time.Now().UTC().Truncate(time.Microsecond), CreatedBy: by.Name,
	}
	// The audit row first: if it cannot be written, no token exists that
	// the log does not know about. A failure after it gets a second row.
	detail := map[string]any{"name": tok.Name, "role": tok.Role, "permissions": tok.Perms}
	if err := s.Audit(ctx, nil, by, "createToken", tok.ID, "ok", detail); err != nil {
		return ixstore.Token{}, "", err
	}
	if err := s.ix.TokenInsert(ctx, &ixstore.TokenInsertParams{Token: tok}); err != nil {
		err = fmt.Errorf("access: store the token: %w", err)
		s.auditFailure(ctx, by, "createToken", tok.ID, err)
		return ixstore.Token{}, "", err
	}
	return tok, secret, nil
}

// Tokens lists every token, revoked ones included, oldest first.
func (s *Store) Tokens(ctx context.Context) ([]ixstore.Token, error) {
	out, err := s.ix.TokenList(ctx)
	if err != nil {
		return nil, fmt.Errorf("access: list tokens: %w", err)
	}
	return out, nil
}

// RevokeToken revokes a valid token by its public ID; an unknown or
// already revoked ID is actor.ErrNotFound.
func (s *Store) RevokeToken(ctx context.Context, by *Principal, id string) error {
	if err := s.Audit(ctx, nil, by, "revokeToken", id, "ok", nil); err != nil {
		return err
	}
	ok, err := s.ix.TokenRevoke(ctx, &ixstore.TokenRevokeParams{ID: id, At: time.Now().UTC()})
	switch {
	case err != nil:
		err = fmt.Errorf("access: revoke token %s: %w", id, err)
	case !ok:
		err = fmt.Errorf("%w: no valid token %s", actor.ErrNotFound, id)
	}
	if err != nil {
		s.auditFailure(ctx, by, "revokeToken", id, err)
	}
	return err
}

// auditFailure records that an action audited as begun failed. The
// action has failed already, so an error writing this row is not the
// caller's: the first row stands, and the caller gets the action's error.
func (s *Store) auditFailure(ctx context.Context, by *Principal, action, target string, cause error) {
	_ = s.Audit(ctx, nil, by, action, target, "failed", map[string]any{"error": cause.Error()})
}

// Authenticate finds the principal of a bearer token. An unknown,
// malformed or revoked token is ErrUnauthenticated (saying which, but
// never echoing the token).
func (s *Store) Authenticate(ctx context.Context, token, address string) (*Principal, error) {
	if err := checkTokenSyntax(token); err != nil {
		return nil, err
	}
	tok, found, err := s.ix.TokenByHash(ctx, &ixstore.TokenByHashParams{Hash: HashToken(token)})
	if err != nil {
		return nil, fmt.Errorf("access: look the token up: %w", err)
	}
	if !found {
		return nil, fmt.Errorf("%w: unknown bearer token", ErrUnauthenticated)
	}
	if !tok.RevokedAt.IsZero() {
		return nil, fmt.Errorf("%w: token %s was revoked", ErrUnauthenticated, tok.ID)
	}
	role, err := ParseRole(tok.Role)
	if err != nil {
		return nil, fmt.Errorf("%w: token %s: %v", ErrUnauthenticated, tok.ID, err)
	}
	perms, err := ParsePerms(tok.Perms)
	if err != nil {
		return nil, fmt.Errorf("%w: token %s: %v", ErrUnauthenticated, tok.ID, err)
	}
	if tok.Owner != "" {
		// A user's token acts as that user at most, and stops with them.
		u, found, err := s.ix.UserGet(ctx, &ixstore.UserGetParams{Name: tok.Owner})
		if err != nil {
			return nil, fmt.Errorf("access: read the account %s: %w", tok.Owner, err)
		}
		if !found || u.Disabled {
			return nil, fmt.Errorf("%w: token %s belongs to %s, whose account is disabled", ErrUnauthenticated, tok.ID, tok.Owner)
		}
		if role, perms, err = lower(role, perms, u); err != nil {
			return nil, fmt.Errorf("%w: token %s: %v", ErrUnauthenticated, tok.ID, err)
		}
	}
	return &Principal{Name: tok.Name, Via: ViaToken, TokenID: tok.ID, Role: role, Perms: perms, Address: address}, nil
}

// Audit writes one audit row for what by did, in tx (so it commits with
// the change) or, with a nil tx, on its own. detail is marshalled to JSON.
func (s *Store) Audit(ctx context.Context, tx store.Tx, by *Principal, action, target, outcome string, detail any) error {
	if by == nil {
		return errors.New("access: an audit row needs its principal")
	}
	var raw []byte
	if detail != nil {
		var err error
		if raw, err = json.Marshal(detail); err != nil {
			return fmt.Errorf("access: the audit detail of %s: %w", action, err)
		}
	}
	id, err := uuid.NewV7()
	if err != nil {
		return fmt.Errorf("access: an audit ID: %w", err)
	}
	e := ixstore.AuditEntry{
		ID: id.String(), At: time.Now().UTC().Truncate(time.Microsecond), Actor: by.Name, Via: by.Via,
		Address: by.Address, Action: action, Target: target, Outcome: outcome, Detail: raw,
	}
	if err := s.ix.AuditInsert(ctx, tx, &ixstore.AuditInsertParams{Entry: e}); err != nil {
		return fmt.Errorf("%w: access: write the audit row of %s: %w", ErrAuditUnavailable, action, err)
	}
	return nil
}

// AuditLog pages the audit log, newest first.
func (s *Store) AuditLog(ctx context.Context, p ixstore.AuditListParams) ([]ixstore.AuditEntry, error) {
	if p.Limit <= 0 {
		p.Limit = 50
	}
	out, err := s.ix.AuditList(ctx, &p)
	if err != nil {
		return nil, fmt.Errorf("access: read the audit log: %w", err)
	}
	return out, nil
}
