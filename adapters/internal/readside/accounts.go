package readside

import (
	"context"

	"github.com/uptrace/bun"

	"github.com/ductus/ductus/integration/ixstore"
)

// userRow is a row of ductus_ix_users: the password's argon2id hash only.
// The booleans are the database's own (PostgreSQL) or 0 and 1, which bun
// reads as booleans.
type userRow struct {
	bun.BaseModel `bun:"table:ductus_ix_users,alias:u"`

	Name         string `bun:"name"`
	PasswordHash string `bun:"password_hash"`
	Role         string `bun:"role"`
	Perms        string `bun:"perms"`
	MustChange   bool   `bun:"must_change"`
	Disabled     bool   `bun:"disabled"`
	FailedLogins int    `bun:"failed_logins"`
	LockedUntil  int64  `bun:"locked_until"` // NULL when never locked
	CreatedAt    int64  `bun:"created_at"`
	CreatedBy    string `bun:"created_by"`
	PasswordAt   int64  `bun:"password_at"`
}

func (u *userRow) user() ixstore.User {
	return ixstore.User{Name: u.Name, PasswordHash: u.PasswordHash, Role: u.Role, Perms: u.Perms, MustChange: u.MustChange,
		Disabled: u.Disabled, FailedLogins: u.FailedLogins, LockedUntil: micros(u.LockedUntil), CreatedAt: micros(u.CreatedAt),
		CreatedBy: u.CreatedBy, PasswordAt: micros(u.PasswordAt)}
}

// UserGet implements ixstore.Store.
func (r *Reader) UserGet(ctx context.Context, p *ixstore.UserGetParams) (ixstore.User, bool, error) {
	return one(ctx, r, "read an account", r.db.NewSelect().Model((*userRow)(nil)).Where("name = ?", p.Name), (*userRow).user)
}

// UserList implements ixstore.Store: by name, which the schema collates
// byte-wise, so every backend lists in one order.
func (r *Reader) UserList(ctx context.Context) ([]ixstore.User, error) {
	return list(ctx, r, "list accounts", r.db.NewSelect().Model((*userRow)(nil)).Order("name"), (*userRow).user)
}

// sessionRow is a row of ductus_ix_sessions (the SHA-256 of the cookie's
// secret is the key).
type sessionRow struct {
	bun.BaseModel `bun:"table:ductus_ix_sessions,alias:s"`

	Hash      string `bun:"hash"`
	User      string `bun:"user_name"`
	Address   string `bun:"address"`
	CreatedAt int64  `bun:"created_at"`
	LastSeen  int64  `bun:"last_seen"`
	ExpiresAt int64  `bun:"expires_at"`
}

func (s *sessionRow) session() ixstore.Session {
	return ixstore.Session{Hash: s.Hash, User: s.User, Address: s.Address, CreatedAt: micros(s.CreatedAt),
		LastSeen: micros(s.LastSeen), ExpiresAt: micros(s.ExpiresAt)}
}

// SessionByHash implements ixstore.Store: the hash is the key.
func (r *Reader) SessionByHash(ctx context.Context, p *ixstore.SessionByHashParams) (ixstore.Session, bool, error) {
	return one(ctx, r, "find a session", r.db.NewSelect().Model((*sessionRow)(nil)).Where("hash = ?", p.Hash), (*sessionRow).session)
}

// pauseRow is a row of ductus_ix_pauses: one per paused destination.
type pauseRow struct {
	bun.BaseModel `bun:"table:ductus_ix_pauses,alias:p"`

	Interface   string `bun:"interface"`
	Destination string `bun:"destination"`
	Reason      string `bun:"reason"`
	By          string `bun:"paused_by"`
	At          int64  `bun:"paused_at"`
}

func (p *pauseRow) pause() ixstore.Pause {
	return ixstore.Pause{Interface: p.Interface, Destination: p.Destination, Reason: p.Reason, By: p.By, At: micros(p.At).UTC()}
}

// PauseList implements ixstore.Store.
func (r *Reader) PauseList(ctx context.Context) ([]ixstore.Pause, error) {
	return list(ctx, r, "list pauses", r.db.NewSelect().Model((*pauseRow)(nil)).Order("interface", "destination"), (*pauseRow).pause)
}
