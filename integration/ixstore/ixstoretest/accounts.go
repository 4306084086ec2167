package ixstoretest

import (
	"errors"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/ductus/ductus/actor"
	"github.com/ductus/ductus/integration/ixstore"
)

// userTests are the local accounts' cases.
var userTests = map[string]func(*testing.T, *suite){
	"InsertAndGet":        testUserInsertAndGet,
	"DuplicateRefused":    testUserDuplicate,
	"ListByName":          testUserList,
	"Update":              testUserUpdate,
	"DisableEndsSessions": testUserDisable,
	"SetPassword":         testUserSetPassword,
	"Lockout":             testUserLockout,
	"ConcurrentFailures":  testUserConcurrentFailures,
	"BadInputRefused":     testUserBadInput,
}

// sessionTests are the browser sessions' cases.
var sessionTests = map[string]func(*testing.T, *suite){
	"InsertAndFind":    testSessionInsertAndFind,
	"TouchNeverBack":   testSessionTouch,
	"DeleteOne":        testSessionDeleteOne,
	"DeleteUserExcept": testSessionDeleteUser,
	"Prune":            testSessionPrune,
	"BadInputRefused":  testSessionBadInput,
}

// user returns a valid new account with a fresh name (what: at most 30
// characters), created at at (with nanoseconds, so a round trip must
// truncate to microseconds).
func (s *suite) user(what string, at time.Time) ixstore.User {
	return ixstore.User{
		Name: s.name(what), PasswordHash: "$argon2id$v=19$m=65536,t=3,p=4$" + randHex(16) + "$" + randHex(32),
		Role: "operator", Perms: "payloads,audit", MustChange: true, CreatedAt: at, CreatedBy: "ixstoretest", PasswordAt: at,
	}
}

// insertUser stores u, failing the test on an error or a taken name.
func (s *suite) insertUser(t *testing.T, u ixstore.User) {
	t.Helper()
	if ok, err := s.ix.UserInsert(s.ctx(t), &ixstore.UserInsertParams{User: u}); err != nil || !ok {
		t.Fatalf("UserInsert(%s) = %v, %v", u.Name, ok, err)
	}
}

// getUser reads an account, failing the test on an error.
func (s *suite) getUser(t *testing.T, name string) (ixstore.User, bool) {
	t.Helper()
	u, found, err := s.ix.UserGet(s.ctx(t), &ixstore.UserGetParams{Name: name})
	if err != nil {
		t.Fatalf("UserGet(%s): %v", name, err)
	}
	return u, found
}

// mustUser reads an account that must exist.
func (s *suite) mustUser(t *testing.T, name string) ixstore.User {
	t.Helper()
	u, found := s.getUser(t, name)
	if !found {
		t.Fatalf("account %s not found", name)
	}
	return u
}

// checkUser compares an account read back with the one written.
func checkUser(t *testing.T, got, want ixstore.User) {
	t.Helper()
	if got.Name != want.Name || got.PasswordHash != want.PasswordHash || got.Role != want.Role || got.Perms != want.Perms ||
		got.MustChange != want.MustChange || got.Disabled != want.Disabled || got.FailedLogins != want.FailedLogins ||
		got.CreatedBy != want.CreatedBy {
		t.Errorf("account read back = %+v, want %+v", got, want)
	}
	for _, tc := range []struct {
		name      string
		got, want time.Time
	}{{"LockedUntil", got.LockedUntil, want.LockedUntil}, {"CreatedAt", got.CreatedAt, want.CreatedAt}, {"PasswordAt", got.PasswordAt, want.PasswordAt}} {
		if !sameTime(tc.got, tc.want) {
			t.Errorf("account %s: %s = %v, want %v", want.Name, tc.name, tc.got, micro(tc.want))
		}
	}
}

// session returns a valid new session of user, created and last seen at
// at, ending a day later.
func (s *suite) session(user string, at time.Time) ixstore.Session {
	return ixstore.Session{Hash: hashOf(randHex(32)), User: user, Address: "127.0.0.1:5000", CreatedAt: at, LastSeen: at, ExpiresAt: at.Add(24 * time.Hour)}
}

// insertSessions stores sessions, failing the test on an error.
func (s *suite) insertSessions(t *testing.T, sessions ...ixstore.Session) {
	t.Helper()
	for _, se := range sessions {
		if err := s.ix.SessionInsert(s.ctx(t), &ixstore.SessionInsertParams{Session: se}); err != nil {
			t.Fatalf("SessionInsert(%s): %v", se.Hash, err)
		}
	}
}

// sessionByHash finds a session, failing the test on an error.
func (s *suite) sessionByHash(t *testing.T, hash string) (ixstore.Session, bool) {
	t.Helper()
	se, found, err := s.ix.SessionByHash(s.ctx(t), &ixstore.SessionByHashParams{Hash: hash})
	if err != nil {
		t.Fatalf("SessionByHash: %v", err)
	}
	return se, found
}

// checkSessions fails the test unless exactly the sessions of live are
// found (as written), and none of ended.
func (s *suite) checkSessions(t *testing.T, live, ended []ixstore.Session) {
	t.Helper()
	for _, want := range live {
		got, found := s.sessionByHash(t, want.Hash)
		if !found {
			t.Errorf("session %s of %s was ended", want.Hash[:8], want.User)
			continue
		}
		checkSession(t, got, want)
	}
	for _, se := range ended {
		if _, found := s.sessionByHash(t, se.Hash); found {
			t.Errorf("session %s of %s is still there", se.Hash[:8], se.User)
		}
	}
}

// checkSession compares a session read back with the one written.
func checkSession(t *testing.T, got, want ixstore.Session) {
	t.Helper()
	if got.Hash != want.Hash || got.User != want.User || got.Address != want.Address ||
		!sameTime(got.CreatedAt, want.CreatedAt) || !sameTime(got.LastSeen, want.LastSeen) || !sameTime(got.ExpiresAt, want.ExpiresAt) {
		t.Errorf("session read back = %+v, want %+v (times to the microsecond)", got, want)
	}
}

// An account reads back by name as it was written, times to the
// microsecond: one with every field set (a lockout's end, failed
// sign-ins, both flags) and one with none (no lockout: NULL in the
// table). A name no account has is not found, and that is not an error.
func testUserInsertAndGet(t *testing.T, s *suite) {
	at := time.Date(2025, 3, 4, 5, 6, 7, 123456789, time.UTC)
	full := s.user("full", at)
	full.Role, full.Perms, full.Disabled, full.FailedLogins = "admin", "", true, 2
	full.LockedUntil, full.PasswordAt = at.Add(15*time.Minute+999), at.Add(time.Hour+1)
	bare := s.user("bare", at.Add(time.Second))
	bare.MustChange = false
	for _, want := range []ixstore.User{full, bare} {
		s.insertUser(t, want)
		checkUser(t, s.mustUser(t, want.Name), want)
	}
	for _, name := range []string{s.name("nobody"), ""} {
		if u, found := s.getUser(t, name); found {
			t.Errorf("UserGet(%q) found %+v", name, u)
		}
	}
}

// A second account with a taken name is refused (false, no error) and the
// first stays as it was.
func testUserDuplicate(t *testing.T, s *suite) {
	first := s.user("first", time.Now())
	s.insertUser(t, first)
	second := s.user("second", time.Now().Add(time.Hour))
	second.Name, second.Role = first.Name, "admin"
	ok, err := s.ix.UserInsert(s.ctx(t), &ixstore.UserInsertParams{User: second})
	if err != nil || ok {
		t.Fatalf("UserInsert of a taken name = %v, %v; want false, nil", ok, err)
	}
	checkUser(t, s.mustUser(t, first.Name), first)
}

// UserList lists every account by name, whatever the order of the
// inserts.
func testUserList(t *testing.T, s *suite) {
	at := time.Date(2024, 1, 2, 3, 4, 5, 6000, time.UTC)
	prefix := s.name("list")
	var want []ixstore.User
	for _, suffix := range []string{"b", "c", "a", "B"} {
		u := s.user("list", at)
		u.Name = prefix + suffix
		s.insertUser(t, u)
		want = append(want, u)
	}
	slices.SortFunc(want, func(a, b ixstore.User) int { return strings.Compare(a.Name, b.Name) })
	all, err := s.ix.UserList(s.ctx(t))
	if err != nil {
		t.Fatal(err)
	}
	var mine []ixstore.User
	for i, u := range all {
		if i > 0 && u.Name < all[i-1].Name {
			t.Errorf("the list is not by name: %q after %q", u.Name, all[i-1].Name)
		}
		if strings.HasPrefix(u.Name, prefix) {
			mine = append(mine, u)
		}
	}
	if len(mine) != len(want) {
		t.Fatalf("the test's accounts list as %d, want %d", len(mine), len(want))
	}
	for i := range want {
		checkUser(t, mine[i], want[i])
	}
}

// UserUpdate writes the role, permissions and flag of an account that
// exists, even when they are what it has already, and reports false for
// one that does not.
func testUserUpdate(t *testing.T, s *suite) {
	u := s.user("update", time.Now())
	s.insertUser(t, u)
	p := ixstore.UserUpdateParams{Name: u.Name, Role: "viewer", Perms: "payloads"}
	for _, what := range []string{"a change", "no change"} {
		if ok, err := s.ix.UserUpdate(s.ctx(t), &p); err != nil || !ok {
			t.Fatalf("UserUpdate (%s) = %v, %v; want true", what, ok, err)
		}
	}
	u.Role, u.Perms = p.Role, p.Perms
	checkUser(t, s.mustUser(t, u.Name), u)
	if ok, err := s.ix.UserUpdate(s.ctx(t), &ixstore.UserUpdateParams{Name: s.name("nobody"), Role: "admin"}); err != nil || ok {
		t.Errorf("UserUpdate of an unknown account = %v, %v; want false, nil", ok, err)
	}
}

// Disabling an account ends its sessions (and no one else's); updating it
// otherwise ends none.
func testUserDisable(t *testing.T, s *suite) {
	now := time.Now()
	u, other := s.user("disable", now), s.user("other", now)
	s.insertUser(t, u)
	s.insertUser(t, other)
	mine := []ixstore.Session{s.session(u.Name, now), s.session(u.Name, now)}
	theirs := s.session(other.Name, now)
	s.insertSessions(t, append(mine, theirs)...)
	if ok, err := s.ix.UserUpdate(s.ctx(t), &ixstore.UserUpdateParams{Name: u.Name, Role: "admin"}); err != nil || !ok {
		t.Fatalf("UserUpdate = %v, %v", ok, err)
	}
	s.checkSessions(t, append(mine, theirs), nil)
	if ok, err := s.ix.UserUpdate(s.ctx(t), &ixstore.UserUpdateParams{Name: u.Name, Role: "admin", Disabled: true}); err != nil || !ok {
		t.Fatalf("UserUpdate (disable) = %v, %v", ok, err)
	}
	if got := s.mustUser(t, u.Name); !got.Disabled || got.Role != "admin" {
		t.Errorf("the disabled account reads back %+v", got)
	}
	s.checkSessions(t, []ixstore.Session{theirs}, mine)
}

// Setting a password writes the hash, the flag and the time, clears the
// failed sign-ins and the lockout, and ends every session of the account
// but the one to keep (all of them when there is none), in one
// transaction; an unknown account changes nothing and ends nothing.
func testUserSetPassword(t *testing.T, s *suite) {
	ctx, now := s.ctx(t), time.Now()
	u, other := s.user("password", now), s.user("other", now)
	s.insertUser(t, u)
	s.insertUser(t, other)
	locked, err := s.ix.UserLoginFailed(ctx, &ixstore.UserLoginFailedParams{Name: u.Name, LockAfter: 1, LockUntil: now.Add(time.Hour)})
	if err != nil || !locked {
		t.Fatalf("UserLoginFailed = %v, %v; want the account locked", locked, err)
	}
	if _, err := s.ix.UserLoginFailed(ctx, &ixstore.UserLoginFailedParams{Name: u.Name, LockAfter: 5, LockUntil: now}); err != nil {
		t.Fatal(err)
	}
	keep, end1, end2 := s.session(u.Name, now), s.session(u.Name, now), s.session(u.Name, now)
	theirs := s.session(other.Name, now)
	s.insertSessions(t, keep, end1, end2, theirs)

	p := ixstore.UserSetPasswordParams{Name: u.Name, Hash: "$argon2id$v=19$new", At: time.Date(2026, 1, 2, 3, 4, 5, 678901234, time.UTC), KeepSession: keep.Hash}
	for _, what := range []string{"a new password", "the same again"} {
		if ok, err := s.ix.UserSetPassword(ctx, &p); err != nil || !ok {
			t.Fatalf("UserSetPassword (%s) = %v, %v; want true", what, ok, err)
		}
	}
	u.PasswordHash, u.MustChange, u.PasswordAt = p.Hash, false, p.At
	checkUser(t, s.mustUser(t, u.Name), u)
	s.checkSessions(t, []ixstore.Session{keep, theirs}, []ixstore.Session{end1, end2})

	p.KeepSession, p.MustChange = "", true
	if ok, err := s.ix.UserSetPassword(ctx, &p); err != nil || !ok {
		t.Fatalf("UserSetPassword (no session kept) = %v, %v", ok, err)
	}
	s.checkSessions(t, []ixstore.Session{theirs}, []ixstore.Session{keep})

	// Sessions need no account row, so an unknown name's can be made.
	ghost := s.session(s.name("ghost"), now)
	s.insertSessions(t, ghost)
	if ok, err := s.ix.UserSetPassword(ctx, &ixstore.UserSetPasswordParams{Name: ghost.User, Hash: "x", At: now}); err != nil || ok {
		t.Errorf("UserSetPassword of an unknown account = %v, %v; want false, nil", ok, err)
	}
	s.checkSessions(t, []ixstore.Session{ghost}, nil)
}

// Failed sign-ins count up to the limit; the one that reaches it locks
// the account (and says so), sets its end and starts the count again. A
// sign-in clears the count; an unknown name counts nothing and is no
// error.
func testUserLockout(t *testing.T, s *suite) {
	ctx := s.ctx(t)
	u := s.user("lockout", time.Now())
	s.insertUser(t, u)
	until := time.Date(2027, 5, 6, 7, 8, 9, 123456789, time.UTC)
	fail := func(name string) bool {
		t.Helper()
		locked, err := s.ix.UserLoginFailed(ctx, &ixstore.UserLoginFailedParams{Name: name, LockAfter: 3, LockUntil: until})
		if err != nil {
			t.Fatalf("UserLoginFailed: %v", err)
		}
		return locked
	}
	for i, want := range []struct {
		locked bool
		count  int
		until  time.Time
	}{{false, 1, time.Time{}}, {false, 2, time.Time{}}, {true, 0, until}, {false, 1, until}} {
		if locked := fail(u.Name); locked != want.locked {
			t.Errorf("failure %d: locked = %v, want %v", i+1, locked, want.locked)
		}
		got := s.mustUser(t, u.Name)
		if got.FailedLogins != want.count || !sameTime(got.LockedUntil, want.until) {
			t.Errorf("after failure %d: %d failed sign-ins, locked until %v; want %d, %v", i+1, got.FailedLogins, got.LockedUntil, want.count, micro(want.until))
		}
	}
	if err := s.ix.UserLoginSucceeded(ctx, &ixstore.UserLoginSucceededParams{Name: u.Name}); err != nil {
		t.Fatal(err)
	}
	if got := s.mustUser(t, u.Name); got.FailedLogins != 0 {
		t.Errorf("after a sign-in: %d failed sign-ins, want 0", got.FailedLogins)
	}
	if err := s.ix.UserLoginSucceeded(ctx, &ixstore.UserLoginSucceededParams{Name: u.Name}); err != nil {
		t.Errorf("a sign-in with no failures to clear: %v", err)
	}
	if fail(s.name("nobody")) {
		t.Error("a failure of an unknown name locked something")
	}
}

// Concurrent failed sign-ins of one account each count.
func testUserConcurrentFailures(t *testing.T, s *suite) {
	const n = 10
	u := s.user("concurrent", time.Now())
	s.insertUser(t, u)
	ctx := s.ctx(t)
	var wg sync.WaitGroup
	errs := make(chan error, n)
	for range n {
		wg.Go(func() {
			locked, err := s.ix.UserLoginFailed(ctx, &ixstore.UserLoginFailedParams{Name: u.Name, LockAfter: 100, LockUntil: time.Now().Add(time.Hour)})
			if err == nil && locked {
				err = errors.New("locked before the limit")
			}
			errs <- err
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Errorf("UserLoginFailed: %v", err)
		}
	}
	if got := s.mustUser(t, u.Name); got.FailedLogins != n || !got.LockedUntil.IsZero() {
		t.Errorf("after %d concurrent failures: %d counted, locked until %v", n, got.FailedLogins, got.LockedUntil)
	}
}

// Input the tables cannot hold as given is refused with
// actor.ErrInvalidArguments before anything is written, the same on every
// backend.
func testUserBadInput(t *testing.T, s *suite) {
	ctx := s.ctx(t)
	cases := map[string]func(*ixstore.User){
		"no name":                  func(u *ixstore.User) { u.Name = "" },
		"a name too long":          func(u *ixstore.User) { u.Name = strings.Repeat("é", 65) },
		"a name not UTF-8":         func(u *ixstore.User) { u.Name += "\xff" },
		"a name ending in space":   func(u *ixstore.User) { u.Name += " " },
		"a name starting in tab":   func(u *ixstore.User) { u.Name = "\t" + u.Name },
		"no password hash":         func(u *ixstore.User) { u.PasswordHash = "" },
		"a password hash too long": func(u *ixstore.User) { u.PasswordHash = strings.Repeat("h", 256) },
		"a role too long":          func(u *ixstore.User) { u.Role = strings.Repeat("r", 17) },
		"negative failures":        func(u *ixstore.User) { u.FailedLogins = -1 },
	}
	for name, spoil := range cases {
		t.Run(name, func(t *testing.T) {
			u := s.user("bad", time.Now())
			spoil(&u)
			ok, err := s.ix.UserInsert(ctx, &ixstore.UserInsertParams{User: u})
			if !errors.Is(err, actor.ErrInvalidArguments) || ok {
				t.Fatalf("UserInsert = %v, %v; want actor.ErrInvalidArguments", ok, err)
			}
			if !utf8.ValidString(u.Name) {
				return // PostgreSQL refuses to look it up
			}
			if _, found := s.getUser(t, u.Name); found {
				t.Fatal("the refused account was stored")
			}
		})
	}
	t.Run("a name of 64 characters fits", func(t *testing.T) {
		u := s.user("long", time.Now())
		u.Name = s.run + strings.Repeat("é", 64-len(s.run))
		s.insertUser(t, u)
		checkUser(t, s.mustUser(t, u.Name), u)
	})
	u := s.user("bad", time.Now())
	s.insertUser(t, u)
	refused := map[string]func() error{
		"UserUpdate with no name": func() error {
			_, err := s.ix.UserUpdate(ctx, &ixstore.UserUpdateParams{Role: "admin"})
			return err
		},
		"UserUpdate with a role too long": func() error {
			_, err := s.ix.UserUpdate(ctx, &ixstore.UserUpdateParams{Name: u.Name, Role: strings.Repeat("r", 17)})
			return err
		},
		"UserSetPassword at the zero time": func() error {
			_, err := s.ix.UserSetPassword(ctx, &ixstore.UserSetPasswordParams{Name: u.Name, Hash: "x"})
			return err
		},
		"UserSetPassword keeping a bad hash": func() error {
			_, err := s.ix.UserSetPassword(ctx, &ixstore.UserSetPasswordParams{Name: u.Name, Hash: "x", At: time.Now(), KeepSession: "ABC"})
			return err
		},
		"UserLoginFailed locking after 0": func() error {
			_, err := s.ix.UserLoginFailed(ctx, &ixstore.UserLoginFailedParams{Name: u.Name, LockUntil: time.Now()})
			return err
		},
	}
	for name, call := range refused {
		if err := call(); !errors.Is(err, actor.ErrInvalidArguments) {
			t.Errorf("%s = %v, want actor.ErrInvalidArguments", name, err)
		}
	}
	checkUser(t, s.mustUser(t, u.Name), u)
}

// A session reads back by its hash as it was written, times to the
// microsecond; an unknown hash is not found; a second session with the
// same hash is refused and the first stays.
func testSessionInsertAndFind(t *testing.T, s *suite) {
	at := time.Date(2025, 3, 4, 5, 6, 7, 123456789, time.UTC)
	se := s.session(s.name("user"), at)
	se.LastSeen, se.ExpiresAt, se.Address = at.Add(time.Minute+1), at.Add(12*time.Hour+999), "[2001:db8::1]:443"
	s.insertSessions(t, se)
	s.checkSessions(t, []ixstore.Session{se}, nil)
	for _, hash := range []string{hashOf("no one's " + s.run), "", "not a hash"} {
		if got, found := s.sessionByHash(t, hash); found {
			t.Errorf("SessionByHash(%q) found %+v", hash, got)
		}
	}
	dup := s.session(s.name("other"), at)
	dup.Hash = se.Hash
	if err := s.ix.SessionInsert(s.ctx(t), &ixstore.SessionInsertParams{Session: dup}); err == nil {
		t.Error("a second session with the same hash was stored")
	}
	s.checkSessions(t, []ixstore.Session{se}, nil)
}

// Touching a session moves its last use forward, never back; an unknown
// hash is no error.
func testSessionTouch(t *testing.T, s *suite) {
	at := time.Date(2025, 3, 4, 5, 6, 7, 0, time.UTC)
	se := s.session(s.name("user"), at)
	s.insertSessions(t, se)
	for _, tc := range []struct {
		at, want time.Time
	}{{at.Add(time.Minute + 1234), at.Add(time.Minute + 1234)}, {at.Add(time.Second), at.Add(time.Minute + 1234)}} {
		if err := s.ix.SessionTouch(s.ctx(t), &ixstore.SessionTouchParams{Hash: se.Hash, At: tc.at}); err != nil {
			t.Fatal(err)
		}
		se.LastSeen = tc.want
		s.checkSessions(t, []ixstore.Session{se}, nil)
	}
	if err := s.ix.SessionTouch(s.ctx(t), &ixstore.SessionTouchParams{Hash: hashOf("no one's " + s.run), At: at}); err != nil {
		t.Errorf("SessionTouch of an unknown session: %v", err)
	}
}

// deleteSessions runs SessionDelete, failing the test on an error, and
// returns how many it ended.
func (s *suite) deleteSessions(t *testing.T, p ixstore.SessionDeleteParams) int64 {
	t.Helper()
	n, err := s.ix.SessionDelete(s.ctx(t), &p)
	if err != nil {
		t.Fatalf("SessionDelete(%+v): %v", p, err)
	}
	return n
}

// SessionDelete by hash ends that one session, once.
func testSessionDeleteOne(t *testing.T, s *suite) {
	user := s.name("user")
	one, two := s.session(user, time.Now()), s.session(user, time.Now())
	s.insertSessions(t, one, two)
	for _, want := range []int64{1, 0} {
		if n := s.deleteSessions(t, ixstore.SessionDeleteParams{Hash: one.Hash}); n != want {
			t.Errorf("SessionDelete ended %d, want %d", n, want)
		}
	}
	s.checkSessions(t, []ixstore.Session{two}, []ixstore.Session{one})
}

// SessionDelete by user ends every session of the user but the one
// excepted (all with none), and no one else's.
func testSessionDeleteUser(t *testing.T, s *suite) {
	user, other := s.name("user"), s.name("other")
	keep, end1, end2 := s.session(user, time.Now()), s.session(user, time.Now()), s.session(user, time.Now())
	theirs := s.session(other, time.Now())
	s.insertSessions(t, keep, end1, end2, theirs)
	if n := s.deleteSessions(t, ixstore.SessionDeleteParams{User: user, Except: keep.Hash}); n != 2 {
		t.Errorf("SessionDelete ended %d, want 2", n)
	}
	s.checkSessions(t, []ixstore.Session{keep, theirs}, []ixstore.Session{end1, end2})
	if n := s.deleteSessions(t, ixstore.SessionDeleteParams{User: user}); n != 1 {
		t.Errorf("SessionDelete with no exception ended %d, want 1", n)
	}
	s.checkSessions(t, []ixstore.Session{theirs}, []ixstore.Session{keep})
}

// SessionPrune deletes the sessions that expired, then (given an idle
// limit) the idle ones, and keeps the others. The test's sessions are
// from the 1990s, so no other test's match.
func testSessionPrune(t *testing.T, s *suite) {
	ctx, user := s.ctx(t), s.name("user")
	cut := time.Date(1995, 1, 1, 0, 0, 0, 0, time.UTC)
	expired := s.session(user, cut.Add(-48*time.Hour)) // expired a day before cut
	idle := s.session(user, cut.Add(-time.Hour))
	idle.ExpiresAt = cut.Add(100 * 365 * 24 * time.Hour)
	live := s.session(user, cut)
	s.insertSessions(t, expired, idle, live)
	prune := func(p ixstore.SessionPruneParams, want int64) {
		t.Helper()
		n, err := s.ix.SessionPrune(ctx, &p)
		if err != nil || n < want {
			t.Fatalf("SessionPrune(%+v) = %d, %v; want %d", p, n, err, want)
		}
	}
	prune(ixstore.SessionPruneParams{Before: cut}, 1)
	s.checkSessions(t, []ixstore.Session{idle, live}, []ixstore.Session{expired})
	prune(ixstore.SessionPruneParams{Before: cut, IdleBefore: cut}, 1)
	s.checkSessions(t, []ixstore.Session{live}, []ixstore.Session{idle})
	prune(ixstore.SessionPruneParams{}, 0)
	s.checkSessions(t, []ixstore.Session{live}, nil)
}

// Input the table cannot hold, or a delete naming nothing, is refused
// with actor.ErrInvalidArguments before anything is written.
func testSessionBadInput(t *testing.T, s *suite) {
	ctx := s.ctx(t)
	cases := map[string]func(*ixstore.Session){
		"an upper-case hash":  func(se *ixstore.Session) { se.Hash = strings.ToUpper(se.Hash) },
		"a short hash":        func(se *ixstore.Session) { se.Hash = se.Hash[:63] },
		"no user":             func(se *ixstore.Session) { se.User = "" },
		"a user too long":     func(se *ixstore.Session) { se.User = strings.Repeat("u", 65) },
		"an address too long": func(se *ixstore.Session) { se.Address = strings.Repeat("a", 256) },
	}
	for name, spoil := range cases {
		t.Run(name, func(t *testing.T) {
			se := s.session(s.name("user"), time.Now())
			spoil(&se)
			if err := s.ix.SessionInsert(ctx, &ixstore.SessionInsertParams{Session: se}); !errors.Is(err, actor.ErrInvalidArguments) {
				t.Fatalf("SessionInsert = %v, want actor.ErrInvalidArguments", err)
			}
			if _, found := s.sessionByHash(t, se.Hash); found {
				t.Fatal("the refused session was stored")
			}
		})
	}
	se := s.session(s.name("user"), time.Now())
	s.insertSessions(t, se)
	if n, err := s.ix.SessionDelete(ctx, &ixstore.SessionDeleteParams{Except: se.Hash}); !errors.Is(err, actor.ErrInvalidArguments) || n != 0 {
		t.Errorf("SessionDelete naming no session nor user = %d, %v; want actor.ErrInvalidArguments", n, err)
	}
	if err := s.ix.SessionTouch(ctx, &ixstore.SessionTouchParams{Hash: se.Hash}); !errors.Is(err, actor.ErrInvalidArguments) {
		t.Errorf("SessionTouch at the zero time = %v, want actor.ErrInvalidArguments", err)
	}
	s.checkSessions(t, []ixstore.Session{se}, nil)
}
