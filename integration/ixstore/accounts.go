package ixstore

import "time"

// User is a local account's row: a person who signs in to the API and
// the console with a password. The password itself is never stored: only
// its argon2id hash, as a PHC string.
type User struct {
	Name         string // the sign-in name, unique, at most 64 characters
	PasswordHash string // "$argon2id$v=19$m=...,t=...,p=...$salt$hash"
	Role         string // viewer | operator | admin
	Perms        string // permissions beyond the role, comma-separated ("payloads,audit")
	// MustChange is set when someone other than the user chose the
	// password (an admin, the CLI): until the user sets their own, a
	// session may only say who it is, sign out and change the password.
	MustChange bool
	// Disabled accounts cannot sign in; their sessions and tokens stop.
	Disabled bool
	// FailedLogins counts wrong passwords since the last sign-in or
	// lockout; LockedUntil, when in the future, refuses every sign-in.
	FailedLogins int
	LockedUntil  time.Time // zero when never locked
	CreatedAt    time.Time
	CreatedBy    string
	PasswordAt   time.Time // when the password was last set
}

// UserInsertParams is a new account.
type UserInsertParams struct {
	User User
}

// UserGetParams names an account.
type UserGetParams struct {
	Name string
}

// UserUpdateParams changes an account's role, permissions and whether it
// is disabled (every field is written).
type UserUpdateParams struct {
	Name     string
	Role     string
	Perms    string
	Disabled bool
}

// UserSetPasswordParams sets an account's password hash at At, clears
// its failed sign-ins and lockout, and (in the same transaction) ends
// every session of the account except KeepSession (a session hash, or ""
// to end them all).
type UserSetPasswordParams struct {
	Name        string
	Hash        string
	MustChange  bool
	At          time.Time
	KeepSession string
}

// UserLoginFailedParams counts a wrong password for Name. When the count
// reaches LockAfter, the account is locked until LockUntil and the count
// starts again from zero.
type UserLoginFailedParams struct {
	Name      string
	LockAfter int // at least 1
	LockUntil time.Time
}

// UserLoginSucceededParams clears Name's failed sign-ins.
type UserLoginSucceededParams struct {
	Name string
}

// Session is a browser session's row. The session's secret (the cookie)
// is never stored: only its SHA-256 (Hash, lower-case hex), so a copy of
// the database signs no one in.
type Session struct {
	Hash      string // hex SHA-256 of the cookie's value
	User      string // the account it acts as
	Address   string // where it was created from
	CreatedAt time.Time
	LastSeen  time.Time // the idle timeout counts from here
	ExpiresAt time.Time // the absolute end, whatever the use
}

// SessionInsertParams is a new session.
type SessionInsertParams struct {
	Session Session
}

// SessionByHashParams names a session by the hash of its secret.
type SessionByHashParams struct {
	Hash string
}

// SessionTouchParams records that a session was used at At.
type SessionTouchParams struct {
	Hash string
	At   time.Time
}

// SessionDeleteParams ends one session (Hash set) or every session of
// User except the one whose hash is Except (User set, Hash empty).
type SessionDeleteParams struct {
	Hash   string
	User   string
	Except string
}

// SessionPruneParams deletes sessions that expired before Before, or
// were last seen before IdleBefore.
type SessionPruneParams struct {
	Before     time.Time
	IdleBefore time.Time
}
