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
	var rows []userRow
	if err := r.scan(ctx, "read an account", r.db.NewSelect().Model(&rows).Where("name = ?", p.Name)); err != nil || len(rows) == 0 {
		return ixstore.User{}, false, err
	}
	return rows[0].user(), true, nil
}

// UserList implements ixstore.Store: by name, which the schema collates
// byte-wise, so every backend lists in one order.
func (r *Reader) UserList(ctx context.Context) ([]ixstore.User, error) {
	var rows []userRow
	if err := r.scan(ctx, "list accounts", r.db.NewSelect().Model(&rows).Order("name")); err != nil {
		return nil, err
	}
	out := make([]ixstore.User, len(rows))
	for i := range rows {
		out[i] = rows[i].user()
	}
	return out, nil
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

// SessionByHash implements ixstore.Store: the hash is the key, so at most
// one row.
func (r *Reader) SessionByHash(ctx context.Context, p *ixstore.SessionByHashParams) (ixstore.Session, bool, error) {
	var rows []sessionRow
	if err := r.scan(ctx, "find a session", r.db.NewSelect().Model(&rows).Where("hash = ?", p.Hash)); err != nil || len(rows) == 0 {
		return ixstore.Session{}, false, err
	}
	s := rows[0]
	return ixstore.Session{Hash: s.Hash, User: s.User, Address: s.Address, CreatedAt: micros(s.CreatedAt),
		LastSeen: micros(s.LastSeen), ExpiresAt: micros(s.ExpiresAt)}, true, nil
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

// PauseList implements ixstore.Store.
func (r *Reader) PauseList(ctx context.Context) ([]ixstore.Pause, error) {
	var rows []pauseRow
	if err := r.scan(ctx, "list pauses", r.db.NewSelect().Model(&rows).Order("interface", "destination")); err != nil {
		return nil, err
	}
	out := make([]ixstore.Pause, len(rows))
	for i, p := range rows {
		out[i] = ixstore.Pause{Interface: p.Interface, Destination: p.Destination, Reason: p.Reason, By: p.By, At: micros(p.At).UTC()}
	}
	return out, nil
}
