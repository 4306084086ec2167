package access

import (
	"errors"
	"fmt"
	"time"
)

// Ways a principal reached the engine (AuditEntry.Via).
const (
	ViaToken   = "token"
	ViaSession = "session"
	ViaCLI     = "cli"
)

// Principal is who is calling: a token's holder, a signed-in user, or the
// CLI on the server.
type Principal struct {
	Name    string // the token's name or the user's
	Via     string // ViaToken, ViaSession, ViaCLI
	TokenID string // the token's public ID (ViaToken)
	Role    Role
	Perms   Perms
	Address string // the caller's address ("" from the CLI)
	// Session is the hash of the caller's session (ViaSession), and
	// SessionExpires its absolute end.
	Session        string
	SessionExpires time.Time
	// MustChange: the user's password was chosen by someone else, and
	// only operations marked DuringPasswordChange are allowed.
	MustChange bool
}

// ErrUnauthenticated is a call without valid credentials (HTTP 401).
var ErrUnauthenticated = errors.New("access: no valid credentials")

// ErrAuditUnavailable is an audit row that could not be written: the
// action it was to record is refused (HTTP 503, the caller may retry), so
// nothing happens that the log does not show.
var ErrAuditUnavailable = errors.New("access: the audit log cannot be written now")

// ErrForbidden is a call whose principal lacks the role or permission the
// operation needs (HTTP 403).
var ErrForbidden = errors.New("access: not allowed")

// Check says whether p (nil: anonymous) may call an operation that needs
// rule. The error wraps ErrUnauthenticated or ErrForbidden and says what
// was missing.
func Check(p *Principal, op string, rule Rule) error {
	if rule.Public {
		return nil
	}
	if p == nil || p.Role == RoleNone {
		return fmt.Errorf("%w: %s needs a bearer token (Authorization: Bearer dux_...) or a signed-in session", ErrUnauthenticated, op)
	}
	if p.MustChange && !rule.DuringPasswordChange {
		return fmt.Errorf("%w: %s must change the password an admin chose before anything else (POST /api/v1/me/password)", ErrPasswordChange, p.Name)
	}
	if p.Role < rule.Role {
		return fmt.Errorf("%w: %s needs the %s role; %s is %s", ErrForbidden, op, rule.Role, p.Name, p.Role)
	}
	if rule.Perm != "" && !p.Perms.Has(rule.Perm) {
		return fmt.Errorf("%w: %s needs the %s permission, which %s does not have", ErrForbidden, op, rule.Perm, p.Name)
	}
	return nil
}
