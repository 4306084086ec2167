package access

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"runtime"
	"time"

	"github.com/ductus/ductus/actor"
	"github.com/ductus/ductus/integration/ixstore"
)

// Policy bounds sign-ins and sessions. Zero fields take the defaults
// written beside them.
type Policy struct {
	// LockAfter wrong passwords in a row lock an account (5) for LockFor
	// (15 minutes). The count is per account name and shared by every
	// engine on the database.
	LockAfter int
	LockFor   time.Duration
	// A session unused for SessionIdle (12 hours) ends, and every session
	// ends SessionMax (7 days) after its sign-in.
	SessionIdle time.Duration
	SessionMax  time.Duration
}

func (p Policy) withDefaults() Policy {
	if p.LockAfter <= 0 {
		p.LockAfter = 5
	}
	if p.LockFor <= 0 {
		p.LockFor = 15 * time.Minute
	}
	if p.SessionIdle <= 0 {
		p.SessionIdle = 12 * time.Hour
	}
	if p.SessionMax <= 0 {
		p.SessionMax = 7 * 24 * time.Hour
	}
	return p
}

// hashSlots is how many password hashes may run at once: half the cores,
// so sign-ins never take the intake's.
func hashSlots() int {
	return max(1, runtime.GOMAXPROCS(0)/2)
}

// ErrTaken is an account name that exists already (HTTP 409).
var ErrTaken = errors.New("access: the name is taken")

// ErrLastAdmin refuses a change that would leave no enabled admin, since
// nobody could then manage accounts without the server's shell (409).
var ErrLastAdmin = errors.New("access: the last enabled admin")

// maxUserName bounds an account's name (the column is 64 wide).
const maxUserName = 64

// userName is what an account's name may hold: letters, digits and
// . _ @ - (an e-mail address fits), so it is safe in logs and URLs.
var userName = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._@-]*$`)

// CheckUserName refuses a name that cannot be an account's, saying why.
func CheckUserName(name string) error {
	if name == "" || len(name) > maxUserName {
		return fmt.Errorf("%w: an account's name must be 1 to %d characters", actor.ErrInvalidArguments, maxUserName)
	}
	if !userName.MatchString(name) {
		return fmt.Errorf("%w: an account's name may hold letters, digits, '.', '_', '@' and '-', and starts with a letter or digit", actor.ErrInvalidArguments)
	}
	return nil
}

// NewUser is an account to create.
type NewUser struct {
	Name     string
	Password string
	Role     Role
	Perms    Perms
	// MustChange makes the first sign-in change the password: set it
	// whenever the password was chosen by someone other than its user.
	MustChange bool
}

// CreateUser stores a new account and writes its audit row.
func (s *Store) CreateUser(ctx context.Context, by *Principal, nu NewUser) (ixstore.User, error) {
	if err := CheckUserName(nu.Name); err != nil {
		return ixstore.User{}, err
	}
	if nu.Role < Viewer || nu.Role > Admin {
		return ixstore.User{}, fmt.Errorf("%w: an account needs a role (viewer, operator or admin)", actor.ErrInvalidArguments)
	}
	if err := CheckPassword(nu.Name, nu.Password); err != nil {
		return ixstore.User{}, err
	}
	hash, err := s.hashPassword(ctx, nu.Password)
	if err != nil {
		return ixstore.User{}, err
	}
	now := time.Now().UTC().Truncate(time.Microsecond)
	u := ixstore.User{Name: nu.Name, PasswordHash: hash, Role: nu.Role.String(), Perms: nu.Perms.String(),
		MustChange: nu.MustChange, CreatedAt: now, CreatedBy: by.Name, PasswordAt: now}
	detail := map[string]any{"role": u.Role, "permissions": u.Perms, "must_change_password": u.MustChange}
	if err := s.Audit(ctx, nil, by, "createUser", u.Name, "ok", detail); err != nil {
		return ixstore.User{}, err
	}
	ok, err := s.ix.UserInsert(ctx, &ixstore.UserInsertParams{User: u})
	switch {
	case err != nil:
		err = fmt.Errorf("access: store the account %s: %w", u.Name, err)
	case !ok:
		err = fmt.Errorf("%w: an account named %s exists already", ErrTaken, u.Name)
	}
	if err != nil {
		s.auditFailure(ctx, by, "createUser", u.Name, err)
		return ixstore.User{}, err
	}
	return u, nil
}

// Users lists every account by name.
func (s *Store) Users(ctx context.Context) ([]ixstore.User, error) {
	out, err := s.ix.UserList(ctx)
	if err != nil {
		return nil, fmt.Errorf("access: list accounts: %w", err)
	}
	return out, nil
}

// User reads one account; an unknown name is actor.ErrNotFound.
func (s *Store) User(ctx context.Context, name string) (ixstore.User, error) {
	if CheckUserName(name) != nil {
		// Not looked up: MySQL compares "ana " equal to "ana".
		return ixstore.User{}, fmt.Errorf("%w: no account %q", actor.ErrNotFound, name)
	}
	u, found, err := s.ix.UserGet(ctx, &ixstore.UserGetParams{Name: name})
	if err != nil {
		return u, fmt.Errorf("access: read the account %s: %w", name, err)
	}
	if !found {
		return u, fmt.Errorf("%w: no account %s", actor.ErrNotFound, name)
	}
	return u, nil
}

// UserChange is a change to an account; nil fields stay as they are.
type UserChange struct {
	Role     *Role
	Perms    *Perms
	Disabled *bool
}

// UpdateUser changes an account's role, permissions or disabled flag.
// Disabling an account ends its sessions and stops its tokens. A change
// that would leave no enabled admin is refused with ErrLastAdmin.
func (s *Store) UpdateUser(ctx context.Context, by *Principal, name string, c UserChange) (ixstore.User, error) {
	u, err := s.User(ctx, name)
	if err != nil {
		return u, err
	}
	p := ixstore.UserUpdateParams{Name: name, Role: u.Role, Perms: u.Perms, Disabled: u.Disabled}
	if c.Role != nil {
		if *c.Role < Viewer || *c.Role > Admin {
			return u, fmt.Errorf("%w: role must be viewer, operator or admin", actor.ErrInvalidArguments)
		}
		p.Role = c.Role.String()
	}
	if c.Perms != nil {
		p.Perms = c.Perms.String()
	}
	if c.Disabled != nil {
		p.Disabled = *c.Disabled
	}
	if u.Role == Admin.String() && !u.Disabled && (p.Role != Admin.String() || p.Disabled) {
		if err := s.checkOtherAdmin(ctx, name); err != nil {
			return u, err
		}
	}
	detail := map[string]any{"role": p.Role, "permissions": p.Perms, "disabled": p.Disabled}
	if err := s.Audit(ctx, nil, by, "updateUser", name, "ok", detail); err != nil {
		return u, err
	}
	ok, err := s.ix.UserUpdate(ctx, &p)
	switch {
	case err != nil:
		err = fmt.Errorf("access: update the account %s: %w", name, err)
	case !ok:
		err = fmt.Errorf("%w: no account %s", actor.ErrNotFound, name)
	}
	if err != nil {
		s.auditFailure(ctx, by, "updateUser", name, err)
		return u, err
	}
	u.Role, u.Perms, u.Disabled = p.Role, p.Perms, p.Disabled
	return u, nil
}

// checkOtherAdmin refuses when no enabled admin but name would remain.
// Two admins demoting each other at the same moment could still both
// pass; the server's `ductus user` commands are the way back from that.
func (s *Store) checkOtherAdmin(ctx context.Context, name string) error {
	users, err := s.Users(ctx)
	if err != nil {
		return err
	}
	for _, o := range users {
		if o.Name != name && o.Role == Admin.String() && !o.Disabled {
			return nil
		}
	}
	return fmt.Errorf("%w: %s is the only enabled admin; make another admin first", ErrLastAdmin, name)
}

// SetPassword sets an account's password for it: its lockout is cleared
// and every session of it ends. With mustChange (an admin chose it), the
// account must choose its own at the next sign-in; the CLI may leave it
// unset, since the server's shell may be the account's holder.
func (s *Store) SetPassword(ctx context.Context, by *Principal, name, password string, mustChange bool) error {
	if err := CheckPassword(name, password); err != nil {
		return err
	}
	return s.setPassword(ctx, by, "resetPassword", name, password, mustChange, "")
}

// ChangeOwnPassword is a signed-in user choosing their own password: the
// current one must match; the account's other sessions end, the caller's
// stays and may do everything its role allows again.
func (s *Store) ChangeOwnPassword(ctx context.Context, p *Principal, current, password string) error {
	if p.Via != ViaSession {
		return fmt.Errorf("%w: a password is changed from a signed-in session, not with a token", ErrNoSession)
	}
	u, err := s.User(ctx, p.Name)
	if err != nil {
		return err
	}
	ok, err := s.verifyPassword(ctx, u.PasswordHash, current)
	if err != nil {
		return fmt.Errorf("access: check the password of %s: %w", p.Name, err)
	}
	if !ok {
		_ = s.Audit(ctx, nil, p, "changePassword", p.Name, "refused", map[string]any{"reason": "wrong current password"})
		return fmt.Errorf("%w: the current password is wrong", actor.ErrInvalidArguments)
	}
	if err := CheckPassword(p.Name, password); err != nil {
		return err
	}
	if current == password {
		return fmt.Errorf("%w: the new password must differ from the current one", actor.ErrInvalidArguments)
	}
	return s.setPassword(ctx, p, "changePassword", p.Name, password, false, p.Session)
}

func (s *Store) setPassword(ctx context.Context, by *Principal, action, name, password string, mustChange bool, keep string) error {
	hash, err := s.hashPassword(ctx, password)
	if err != nil {
		return err
	}
	if err := s.Audit(ctx, nil, by, action, name, "ok", map[string]any{"must_change_password": mustChange}); err != nil {
		return err
	}
	ok, err := s.ix.UserSetPassword(ctx, &ixstore.UserSetPasswordParams{Name: name, Hash: hash, MustChange: mustChange,
		At: time.Now().UTC(), KeepSession: keep})
	switch {
	case err != nil:
		err = fmt.Errorf("access: set the password of %s: %w", name, err)
	case !ok:
		err = fmt.Errorf("%w: no account %s", actor.ErrNotFound, name)
	}
	if err != nil {
		s.auditFailure(ctx, by, action, name, err)
	}
	return err
}

// lower is the principal a user's token acts as: at most its user, that
// is the lower role and the permissions both have.
func lower(tokRole Role, tokPerms Perms, u ixstore.User) (Role, Perms, error) {
	uRole, err := ParseRole(u.Role)
	if err != nil {
		return RoleNone, nil, err
	}
	uPerms, err := ParsePerms(u.Perms)
	if err != nil {
		return RoleNone, nil, err
	}
	var both Perms
	for _, p := range tokPerms {
		if uPerms.Has(p) {
			both = append(both, p)
		}
	}
	return min(tokRole, uRole), both, nil
}
