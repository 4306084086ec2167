package access

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/ductus/ductus/integration/ixstore"
)

// SessionPrefix starts every session secret (the cookie's value).
const SessionPrefix = "dus_"

// touchEvery is how stale a session's LastSeen may get before a request
// moves it: the idle timeout is hours, so a write per minute is enough
// and a write per request would be a commit per page load.
const touchEvery = time.Minute

// ErrPasswordChange is a call from a session whose password was chosen
// by someone else: until its user changes it, only signing out, saying
// who it is and changing the password are allowed (HTTP 403, code
// password_change_required).
var ErrPasswordChange = errors.New("access: the password must be changed first")

// ErrNoSession is a session operation called with a token (HTTP 409):
// there is no session to end or password to change.
var ErrNoSession = errors.New("access: no session")

// Login checks a name and password and opens a session. It returns the
// session's secret (for the cookie; only its hash is stored) and who the
// session acts as. A wrong name or password is ErrUnauthenticated
// with one message for both, so names cannot be probed; a locked or
// disabled account says so.
func (s *Store) Login(ctx context.Context, name, password, address string) (string, *Principal, error) {
	who := &Principal{Name: name, Via: ViaSession, Address: address}
	wrong := fmt.Errorf("%w: wrong name or password", ErrUnauthenticated)
	var u ixstore.User
	found := false
	if CheckUserName(name) != nil {
		// No account has such a name, and it must not reach the log: it
		// may be a password typed in the name field. (Nor is it looked up:
		// MySQL would match "ana " to "ana".)
		who.Name = "(invalid name)"
	} else {
		var err error
		if u, found, err = s.ix.UserGet(ctx, &ixstore.UserGetParams{Name: name}); err != nil {
			return "", nil, fmt.Errorf("access: read the account %s: %w", name, err)
		}
	}
	if !found {
		// The same work as a wrong password, so time tells nothing either.
		_, _ = s.verifyPassword(ctx, s.dummyHash(ctx), password)
		_ = s.Audit(ctx, nil, who, "createSession", who.Name, "refused", map[string]any{"reason": "unknown account"})
		return "", nil, wrong
	}
	now := time.Now().UTC()
	if u.LockedUntil.After(now) {
		_ = s.Audit(ctx, nil, who, "createSession", name, "refused", map[string]any{"reason": "locked"})
		return "", nil, fmt.Errorf("%w: the account is locked after %d wrong passwords until %s", ErrUnauthenticated,
			s.policy.LockAfter, u.LockedUntil.UTC().Format(time.RFC3339))
	}
	ok, err := s.verifyPassword(ctx, u.PasswordHash, password)
	if err != nil {
		return "", nil, fmt.Errorf("access: check the password of %s: %w", name, err)
	}
	if !ok {
		locked, err := s.ix.UserLoginFailed(ctx, &ixstore.UserLoginFailedParams{Name: name, LockAfter: s.policy.LockAfter,
			LockUntil: now.Add(s.policy.LockFor)})
		if err != nil {
			return "", nil, fmt.Errorf("access: count a wrong password of %s: %w", name, err)
		}
		_ = s.Audit(ctx, nil, who, "createSession", name, "refused", map[string]any{"reason": "wrong password", "locked": locked})
		return "", nil, wrong
	}
	if u.Disabled {
		_ = s.Audit(ctx, nil, who, "createSession", name, "refused", map[string]any{"reason": "disabled"})
		return "", nil, fmt.Errorf("%w: the account %s is disabled", ErrUnauthenticated, name)
	}
	if u.FailedLogins > 0 {
		if err := s.ix.UserLoginSucceeded(ctx, &ixstore.UserLoginSucceededParams{Name: name}); err != nil {
			return "", nil, fmt.Errorf("access: clear the wrong passwords of %s: %w", name, err)
		}
	}
	// Sign-ins are rare beside requests: a good moment to drop sessions
	// that have ended, so the table holds only live ones.
	if _, err := s.ix.SessionPrune(ctx, &ixstore.SessionPruneParams{Before: now, IdleBefore: now.Add(-s.policy.SessionIdle)}); err != nil {
		return "", nil, fmt.Errorf("access: prune ended sessions: %w", err)
	}
	secret := newSessionSecret()
	at := now.Truncate(time.Microsecond)
	sess := ixstore.Session{Hash: HashToken(secret), User: name, Address: address, CreatedAt: at, LastSeen: at,
		ExpiresAt: at.Add(s.policy.SessionMax)}
	if err := s.Audit(ctx, nil, who, "createSession", name, "ok", nil); err != nil {
		return "", nil, err
	}
	if err := s.ix.SessionInsert(ctx, &ixstore.SessionInsertParams{Session: sess}); err != nil {
		return "", nil, fmt.Errorf("access: store the session of %s: %w", name, err)
	}
	p, err := sessionPrincipal(u, sess, address)
	if err != nil {
		return "", nil, err
	}
	return secret, p, nil
}

// dummyHash is a hash no password matches, made once.
func (s *Store) dummyHash(ctx context.Context) string {
	s.dummy.once.Do(func() { s.dummy.hash, _ = s.hashPassword(ctx, newSecret()) })
	return s.dummy.hash
}

// Logout ends p's session.
func (s *Store) Logout(ctx context.Context, p *Principal) error {
	if p.Via != ViaSession {
		return fmt.Errorf("%w: only a signed-in session can sign out; a token is revoked instead", ErrNoSession)
	}
	if _, err := s.ix.SessionDelete(ctx, &ixstore.SessionDeleteParams{Hash: p.Session}); err != nil {
		return fmt.Errorf("access: end the session of %s: %w", p.Name, err)
	}
	return s.Audit(ctx, nil, p, "deleteSession", p.Name, "ok", nil)
}

// LogoutOthers ends every session of p's account but p's own, and
// returns how many.
func (s *Store) LogoutOthers(ctx context.Context, p *Principal) (int64, error) {
	if p.Via != ViaSession {
		return 0, fmt.Errorf("%w: signing out other sessions needs a signed-in session, not a token", ErrNoSession)
	}
	n, err := s.ix.SessionDelete(ctx, &ixstore.SessionDeleteParams{User: p.Name, Except: p.Session})
	if err != nil {
		return 0, fmt.Errorf("access: end the other sessions of %s: %w", p.Name, err)
	}
	return n, s.Audit(ctx, nil, p, "deleteOtherSessions", p.Name, "ok", map[string]any{"ended": n})
}

// AuthenticateSession finds the principal of a session cookie's value.
// An unknown, ended or malformed session, or a disabled account, is
// ErrUnauthenticated.
func (s *Store) AuthenticateSession(ctx context.Context, secret, address string) (*Principal, error) {
	if err := checkSessionSyntax(secret); err != nil {
		return nil, err
	}
	hash := HashToken(secret)
	sess, found, err := s.ix.SessionByHash(ctx, &ixstore.SessionByHashParams{Hash: hash})
	if err != nil {
		return nil, fmt.Errorf("access: look the session up: %w", err)
	}
	now := time.Now().UTC()
	switch {
	case !found:
		return nil, fmt.Errorf("%w: the session has ended; sign in again", ErrUnauthenticated)
	case !now.Before(sess.ExpiresAt):
		return nil, fmt.Errorf("%w: the session ended %s after its sign-in; sign in again", ErrUnauthenticated, s.policy.SessionMax)
	case now.Sub(sess.LastSeen) >= s.policy.SessionIdle:
		return nil, fmt.Errorf("%w: the session ended after %s unused; sign in again", ErrUnauthenticated, s.policy.SessionIdle)
	}
	u, found, err := s.ix.UserGet(ctx, &ixstore.UserGetParams{Name: sess.User})
	if err != nil {
		return nil, fmt.Errorf("access: read the account %s: %w", sess.User, err)
	}
	if !found || u.Disabled {
		return nil, fmt.Errorf("%w: the account %s is disabled", ErrUnauthenticated, sess.User)
	}
	p, err := sessionPrincipal(u, sess, address)
	if err != nil {
		return nil, err
	}
	if now.Sub(sess.LastSeen) >= touchEvery {
		if err := s.ix.SessionTouch(ctx, &ixstore.SessionTouchParams{Hash: hash, At: now}); err != nil {
			return nil, fmt.Errorf("access: note the session's use: %w", err)
		}
	}
	return p, nil
}

// sessionPrincipal is who a session of account u acts as.
func sessionPrincipal(u ixstore.User, sess ixstore.Session, address string) (*Principal, error) {
	role, err := ParseRole(u.Role)
	if err != nil {
		return nil, fmt.Errorf("%w: account %s: %v", ErrUnauthenticated, u.Name, err)
	}
	perms, err := ParsePerms(u.Perms)
	if err != nil {
		return nil, fmt.Errorf("%w: account %s: %v", ErrUnauthenticated, u.Name, err)
	}
	return &Principal{Name: u.Name, Via: ViaSession, Session: sess.Hash, Role: role, Perms: perms, Address: address,
		MustChange: u.MustChange, SessionExpires: sess.ExpiresAt}, nil
}

// newSessionSecret makes a session's secret: 256 random bits in hex.
func newSessionSecret() string {
	b := make([]byte, 32)
	_, _ = rand.Read(b) // crypto/rand.Read never fails (it panics first)
	return SessionPrefix + hex.EncodeToString(b)
}

// checkSessionSyntax refuses what cannot be a session before any lookup.
func checkSessionSyntax(secret string) error {
	rest, ok := strings.CutPrefix(secret, SessionPrefix)
	if !ok || len(rest) != 64 {
		return fmt.Errorf("%w: the session cookie is malformed; sign in again", ErrUnauthenticated)
	}
	if _, err := hex.DecodeString(rest); err != nil {
		return fmt.Errorf("%w: the session cookie is malformed; sign in again", ErrUnauthenticated)
	}
	return nil
}
