package sqlrow

import (
	"fmt"
	"strings"
	"time"
	"unicode"

	"github.com/ductus/ductus/actor"
	"github.com/ductus/ductus/integration/ixstore"
)

// Local accounts (ductus_ix_users) and their browser sessions
// (ductus_ix_sessions), the statements every backend shares: ? placeholders,
// which Postgres rebinds. The insert-if-absent of an account and reading
// back a failed sign-in's count are each backend's own. Arguments are built
// and checked here, as the API tokens' are, so every backend refuses the
// same input with the same error before it writes anything.

// IXUserColumns are ductus_ix_users' columns in the order IXUserArgs
// writes them (readside reads them).
const IXUserColumns = `name, password_hash, role, perms, must_change, disabled, failed_logins, locked_until, created_at, created_by, password_at`

// IXSessionColumns are ductus_ix_sessions' columns in the order
// IXSessionArgs writes them (readside reads them).
const IXSessionColumns = `hash, user_name, address, created_at, last_seen, expires_at`

// The accounts' and sessions' fixed statements.
const (
	// IXUserInsertValues follows "INSERT INTO ductus_ix_users"; each
	// backend adds its own way of doing nothing when the name is taken.
	IXUserInsertValues = ` (` + IXUserColumns + `) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`
	IXUserUpdate       = `UPDATE ductus_ix_users SET role = ?, perms = ?, disabled = ? WHERE name = ?`
	// IXUserSetPassword also clears the failed sign-ins and the lockout:
	// whoever set the password knows it, and an admin's reset is how a
	// locked account is opened before its time.
	IXUserSetPassword = `UPDATE ductus_ix_users SET password_hash = ?, must_change = ?, password_at = ?, failed_logins = 0, locked_until = NULL WHERE name = ?`
	// IXUserLoginFailed counts a failure and, at the limit, locks the
	// account and starts the count again, in one statement, so concurrent
	// failures each count. locked_until comes first: MySQL evaluates a
	// single-table UPDATE's assignments left to right, each seeing the
	// columns assigned before it, and the lockout must test the old count.
	// The count reads back 0 exactly when this statement locked the
	// account (otherwise it is at least 1).
	IXUserLoginFailed = `UPDATE ductus_ix_users SET
	locked_until = CASE WHEN failed_logins + 1 >= ? THEN ? ELSE locked_until END,
	failed_logins = CASE WHEN failed_logins + 1 >= ? THEN 0 ELSE failed_logins + 1 END
	WHERE name = ?`
	// IXUserLoginCount reads the count back after IXUserLoginFailed, in
	// its transaction (where RETURNING is missing).
	IXUserLoginCount = `SELECT failed_logins FROM ductus_ix_users WHERE name = ?`
	// IXUserLoginSucceeded writes only when there is a count to clear:
	// most sign-ins have none, and an unchanged row is not rewritten.
	IXUserLoginSucceeded = `UPDATE ductus_ix_users SET failed_logins = 0 WHERE name = ? AND failed_logins <> 0`

	IXSessionInsert = `INSERT INTO ductus_ix_sessions (` + IXSessionColumns + `) VALUES (?, ?, ?, ?, ?, ?)`
	// IXSessionTouch never moves last_seen back: two requests of one
	// session may finish in either order.
	IXSessionTouch = `UPDATE ductus_ix_sessions SET last_seen = ? WHERE hash = ? AND last_seen < ?`
	// IXSessionDeleteUser ends a user's sessions but one (a hash, or ""
	// for none: no stored hash is empty).
	IXSessionDeleteUser = `DELETE FROM ductus_ix_sessions WHERE user_name = ? AND hash <> ?`
	ixSessionDeleteOne  = `DELETE FROM ductus_ix_sessions WHERE hash = ?`
)

// widthPasswordHash is the password hash's column: an argon2id PHC string
// is about a hundred characters.
const widthPasswordHash = 255

// checkUserName refuses a name no account can have: empty, too long, not
// UTF-8, or with white space around it. MySQL's collations ignore trailing
// spaces, so "ann" and "ann " would be one account there and two
// elsewhere; no one means to sign in with either.
func checkUserName(what, name string) error {
	if name == "" {
		return fmt.Errorf("%w: %s needs a user name", actor.ErrInvalidArguments, what)
	}
	if strings.TrimFunc(name, unicode.IsSpace) != name {
		return fmt.Errorf("%w: %s: the user name %q starts or ends with white space", actor.ErrInvalidArguments, what, name)
	}
	return checkFields(what, field{"user name", name, widthName})
}

// IXUserArgs checks a new account and returns its values in IXUserColumns
// order.
func IXUserArgs(u *ixstore.User) ([]any, error) {
	what := fmt.Sprintf("account %q", u.Name)
	if err := checkUserName(what, u.Name); err != nil {
		return nil, err
	}
	if err := checkPasswordHash(what, u.PasswordHash); err != nil {
		return nil, err
	}
	if u.FailedLogins < 0 {
		return nil, fmt.Errorf("%w: %s: %d failed sign-ins", actor.ErrInvalidArguments, what, u.FailedLogins)
	}
	if err := checkFields(what, field{"role", u.Role, widthShort}, field{"permissions", u.Perms, widthDefault},
		field{"creator", u.CreatedBy, widthDefault}); err != nil {
		return nil, err
	}
	return []any{u.Name, u.PasswordHash, u.Role, u.Perms, u.MustChange, u.Disabled, u.FailedLogins,
		nullMicros(u.LockedUntil), u.CreatedAt.UnixMicro(), u.CreatedBy, u.PasswordAt.UnixMicro()}, nil
}

// checkPasswordHash refuses an empty hash (no password could match it, or
// a careless check would match any) and one wider than its column.
func checkPasswordHash(what, hash string) error {
	if hash == "" {
		return fmt.Errorf("%w: %s needs a password hash", actor.ErrInvalidArguments, what)
	}
	return checkFields(what, field{"password hash", hash, widthPasswordHash})
}

// IXUserUpdateArgs returns IXUserUpdate's arguments.
func IXUserUpdateArgs(p *ixstore.UserUpdateParams) ([]any, error) {
	what := fmt.Sprintf("updating account %q", p.Name)
	if err := checkUserName(what, p.Name); err != nil {
		return nil, err
	}
	if err := checkFields(what, field{"role", p.Role, widthShort}, field{"permissions", p.Perms, widthDefault}); err != nil {
		return nil, err
	}
	return []any{p.Role, p.Perms, p.Disabled, p.Name}, nil
}

// IXUserSetPasswordArgs returns IXUserSetPassword's arguments, then
// IXSessionDeleteUser's (the sessions it ends). A zero time is refused:
// it would read back as a password never set.
func IXUserSetPasswordArgs(p *ixstore.UserSetPasswordParams) (set, endSessions []any, err error) {
	what := fmt.Sprintf("setting the password of account %q", p.Name)
	if err := checkUserName(what, p.Name); err != nil {
		return nil, nil, err
	}
	if err := checkPasswordHash(what, p.Hash); err != nil {
		return nil, nil, err
	}
	if p.At.IsZero() {
		return nil, nil, fmt.Errorf("%w: %s needs the time it is set", actor.ErrInvalidArguments, what)
	}
	if p.KeepSession != "" && !isHexSHA256(p.KeepSession) {
		return nil, nil, fmt.Errorf("%w: %s: the session to keep must be 64 lower-case hex digits", actor.ErrInvalidArguments, what)
	}
	return []any{p.Hash, p.MustChange, p.At.UnixMicro(), p.Name}, []any{p.Name, p.KeepSession}, nil
}

// IXUserLoginFailedArgs returns IXUserLoginFailed's arguments.
func IXUserLoginFailedArgs(p *ixstore.UserLoginFailedParams) ([]any, error) {
	if p.LockAfter < 1 {
		return nil, fmt.Errorf("%w: UserLoginFailed: LockAfter %d is not positive", actor.ErrInvalidArguments, p.LockAfter)
	}
	if p.LockUntil.IsZero() {
		return nil, fmt.Errorf("%w: UserLoginFailed needs the end of a lockout", actor.ErrInvalidArguments)
	}
	return []any{p.LockAfter, p.LockUntil.UnixMicro(), p.LockAfter, p.Name}, nil
}

// IXSessionArgs checks a new session and returns its values in
// IXSessionColumns order. The hash must be a SHA-256 in lower-case hex,
// as a token's: the lookup compares it exactly.
func IXSessionArgs(s *ixstore.Session) ([]any, error) {
	if !isHexSHA256(s.Hash) {
		return nil, fmt.Errorf("%w: a session's hash must be 64 lower-case hex digits", actor.ErrInvalidArguments)
	}
	what := fmt.Sprintf("a session of %q", s.User)
	if err := checkUserName(what, s.User); err != nil {
		return nil, err
	}
	if err := checkFields(what, field{"address", s.Address, widthDefault}); err != nil {
		return nil, err
	}
	return []any{s.Hash, s.User, s.Address, s.CreatedAt.UnixMicro(), s.LastSeen.UnixMicro(), s.ExpiresAt.UnixMicro()}, nil
}

// IXSessionTouchArgs returns IXSessionTouch's arguments. A zero time is
// refused: it could never move a session forward.
func IXSessionTouchArgs(p *ixstore.SessionTouchParams) ([]any, error) {
	if p.At.IsZero() {
		return nil, fmt.Errorf("%w: SessionTouch needs the time the session was used", actor.ErrInvalidArguments)
	}
	at := p.At.UnixMicro()
	return []any{at, p.Hash, at}, nil
}

// IXSessionDelete returns the statement that ends the sessions p names:
// one by its hash, or every one of a user but Except.
func IXSessionDelete(p *ixstore.SessionDeleteParams) (Statement, error) {
	switch {
	case p.Hash != "":
		return Statement{ixSessionDeleteOne, []any{p.Hash}}, nil
	case p.User != "":
		return Statement{IXSessionDeleteUser, []any{p.User, p.Except}}, nil
	}
	return Statement{}, fmt.Errorf("%w: SessionDelete needs a session's hash or a user", actor.ErrInvalidArguments)
}

// IXSessionPrune returns the statement that deletes the sessions expired
// before p.Before or last seen before p.IdleBefore; a zero time sets no
// condition, and with neither the statement is empty (nothing to delete).
func IXSessionPrune(p *ixstore.SessionPruneParams) Statement {
	var where []string
	var args []any
	for _, c := range []struct {
		cond string
		at   time.Time
	}{{"expires_at < ?", p.Before}, {"last_seen < ?", p.IdleBefore}} {
		if !c.at.IsZero() {
			where, args = append(where, c.cond), append(args, c.at.UnixMicro())
		}
	}
	if len(where) == 0 {
		return Statement{}
	}
	return Statement{`DELETE FROM ductus_ix_sessions WHERE ` + strings.Join(where, ` OR `), args}
}
