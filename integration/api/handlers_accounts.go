package api

import (
	"context"
	"net/http"
	"time"

	"github.com/ductus/ductus/integration/access"
	"github.com/ductus/ductus/integration/ixstore"
)

// SessionCookie is the session cookie's name.
const SessionCookie = "ductus_session"

// sessionCookie is the Set-Cookie value for a session (an empty secret
// clears it). Path=/api: the console's pages never see it, only its
// calls; HttpOnly: no script reads it; SameSite=Strict: no other site's
// page sends it; Secure over HTTPS.
func sessionCookie(ctx context.Context, secret string, expires time.Time) string {
	c := &http.Cookie{Name: SessionCookie, Value: secret, Path: "/api", HttpOnly: true,
		SameSite: http.SameSiteStrictMode, Secure: callerFrom(ctx).tls}
	if secret == "" {
		c.MaxAge = -1
	} else {
		c.Expires = expires
	}
	return c.String()
}

// principalView is a principal as the API shows it.
func principalView(p *access.Principal) Principal {
	perms := []PrincipalPermissions{}
	for _, pm := range p.Perms {
		perms = append(perms, PrincipalPermissions(pm))
	}
	out := Principal{Name: p.Name, Via: PrincipalVia(p.Via), Role: PrincipalRole(p.Role.String()), Permissions: perms}
	if p.Via == access.ViaSession {
		mc, exp := p.MustChange, p.SessionExpires.UTC()
		out.MustChangePassword, out.SessionExpiresAt = &mc, &exp
	}
	return out
}

func (s *server) CreateSession(ctx context.Context, req CreateSessionRequestObject) (CreateSessionResponseObject, error) {
	if ok, retry := s.signIns.allow(callerFrom(ctx).address, time.Now()); !ok {
		return nil, &tooMany{retry: retry}
	}
	secret, p, err := s.acc.Login(ctx, req.Body.Name, req.Body.Password, callerFrom(ctx).address)
	if err != nil {
		return nil, err
	}
	cookie := sessionCookie(ctx, secret, p.SessionExpires)
	return CreateSession201JSONResponse{Body: principalView(p), Headers: CreateSession201ResponseHeaders{SetCookie: &cookie}}, nil
}

func (s *server) DeleteSession(ctx context.Context, _ DeleteSessionRequestObject) (DeleteSessionResponseObject, error) {
	if err := s.acc.Logout(ctx, principalFrom(ctx)); err != nil {
		return nil, err
	}
	cookie := sessionCookie(ctx, "", time.Time{})
	return DeleteSession204Response{Headers: DeleteSession204ResponseHeaders{SetCookie: &cookie}}, nil
}

func (s *server) DeleteOtherSessions(ctx context.Context, _ DeleteOtherSessionsRequestObject) (DeleteOtherSessionsResponseObject, error) {
	n, err := s.acc.LogoutOthers(ctx, principalFrom(ctx))
	if err != nil {
		return nil, err
	}
	return DeleteOtherSessions200JSONResponse{Ended: n}, nil
}

func (s *server) ChangePassword(ctx context.Context, req ChangePasswordRequestObject) (ChangePasswordResponseObject, error) {
	if err := s.acc.ChangeOwnPassword(ctx, principalFrom(ctx), req.Body.Current, req.Body.New); err != nil {
		return nil, err
	}
	return ChangePassword204Response{}, nil
}

// userView is an account as the API shows it (never its hash).
func userView(u ixstore.User) User {
	perms := []UserPermissions{}
	ps, _ := access.ParsePerms(u.Perms)
	for _, p := range ps {
		perms = append(perms, UserPermissions(p))
	}
	out := User{Name: u.Name, Role: UserRole(u.Role), Permissions: perms, Disabled: u.Disabled,
		MustChangePassword: u.MustChange, CreatedAt: u.CreatedAt.UTC(), CreatedBy: u.CreatedBy,
		PasswordSetAt: u.PasswordAt.UTC(), Locked: u.LockedUntil.After(time.Now())}
	if out.Locked {
		until := u.LockedUntil.UTC()
		out.LockedUntil = &until
	}
	return out
}

func (s *server) ListUsers(ctx context.Context, _ ListUsersRequestObject) (ListUsersResponseObject, error) {
	users, err := s.acc.Users(ctx)
	if err != nil {
		return nil, err
	}
	out := UserList{Users: make([]User, len(users))}
	for i, u := range users {
		out.Users[i] = userView(u)
	}
	return ListUsers200JSONResponse(out), nil
}

// permsOf reads a request's permission names.
func permsOf[T ~string](names *[]T) (access.Perms, error) {
	var ss []string
	if names != nil {
		for _, n := range *names {
			ss = append(ss, string(n))
		}
	}
	return access.ParsePerms(ss...)
}

func (s *server) CreateUser(ctx context.Context, req CreateUserRequestObject) (CreateUserResponseObject, error) {
	role, err := access.ParseRole(string(req.Body.Role))
	if err != nil {
		return nil, err
	}
	perms, err := permsOf(req.Body.Permissions)
	if err != nil {
		return nil, err
	}
	u, err := s.acc.CreateUser(ctx, principalFrom(ctx), access.NewUser{Name: req.Body.Name, Password: req.Body.Password,
		Role: role, Perms: perms, MustChange: true})
	if err != nil {
		return nil, err
	}
	return CreateUser201JSONResponse(userView(u)), nil
}

func (s *server) UpdateUser(ctx context.Context, req UpdateUserRequestObject) (UpdateUserResponseObject, error) {
	var c access.UserChange
	if req.Body.Role != nil {
		role, err := access.ParseRole(string(*req.Body.Role))
		if err != nil {
			return nil, err
		}
		c.Role = &role
	}
	if req.Body.Permissions != nil {
		perms, err := permsOf(req.Body.Permissions)
		if err != nil {
			return nil, err
		}
		c.Perms = &perms
	}
	c.Disabled = req.Body.Disabled
	u, err := s.acc.UpdateUser(ctx, principalFrom(ctx), req.Name, c)
	if err != nil {
		return nil, err
	}
	return UpdateUser200JSONResponse(userView(u)), nil
}

func (s *server) ResetPassword(ctx context.Context, req ResetPasswordRequestObject) (ResetPasswordResponseObject, error) {
	if err := s.acc.SetPassword(ctx, principalFrom(ctx), req.Name, req.Body.Password, true); err != nil {
		return nil, err
	}
	return ResetPassword204Response{}, nil
}
