package access

import (
	"context"
	"errors"
	"strings"
	"testing"

	"golang.org/x/crypto/argon2"

	"github.com/ductus/ductus/actor"
	"github.com/ductus/ductus/integration/ixstore"
)

// A hash verifies its password and no other, two hashes of one password
// differ (fresh salts), and a stored string that is not an argon2id PHC
// string is an error, not a mismatch.
func TestPasswordHash(t *testing.T) {
	ctx := context.Background()
	s := New(nil, Policy{})
	h1, err := s.hashPassword(ctx, "correct horse battery")
	if err != nil {
		t.Fatal(err)
	}
	h2, _ := s.hashPassword(ctx, "correct horse battery")
	if h1 == h2 || !strings.HasPrefix(h1, "$argon2id$v=19$m=19456,t=2,p=1$") {
		t.Fatalf("hashes %q and %q", h1, h2)
	}
	for pw, want := range map[string]bool{"correct horse battery": true, "correct horse batterY": false, "": false} {
		if ok, err := s.verifyPassword(ctx, h1, pw); ok != want || err != nil {
			t.Errorf("verify(%q) = %v, %v; want %v", pw, ok, err, want)
		}
	}
	// Parameters come from the stored string: a hash made with others
	// (cheaper, older) still verifies.
	salt := []byte("saltsaltsaltsalt")
	other := "$argon2id$v=19$m=1024,t=1,p=2$" + b64.EncodeToString(salt) + "$" +
		b64.EncodeToString(argon2.IDKey([]byte("old one"), salt, 1, 1024, 2, 16))
	if ok, err := s.verifyPassword(ctx, other, "old one"); !ok || err != nil {
		t.Errorf("a hash with other parameters: %v, %v", ok, err)
	}
	empty := "$argon2id$v=19$m=1024,t=1,p=1$" + b64.EncodeToString(salt) + "$"
	for _, bad := range []string{"", "plain", "$argon2i$v=19$m=1,t=1,p=1$AA$AA", "$argon2id$v=18$m=1024,t=1,p=1$AA$AA",
		"$argon2id$v=19$m=1024,t=0,p=1$AA$AA", "$argon2id$v=19$m=1024,t=1,p=1$!!$AA", empty} {
		if _, err := s.verifyPassword(ctx, bad, "x"); !errors.Is(err, errBadHash) {
			t.Errorf("verify against %q: %v, want errBadHash", bad, err)
		}
	}
}

func TestCheckPassword(t *testing.T) {
	for _, c := range []struct {
		user, pw, says string
	}{
		{"ana", "long enough password", ""},
		{"ana", "ünïcödé chars", ""},
		{"ana", "short", "at least 10"},
		{"ana", strings.Repeat("x", MaxPasswordLen+1), "at most"},
		{"analyst.one1", "ANALYST.ONE1", "name"},
		{"ana", "bad \xff utf-8 bytes", "UTF-8"},
	} {
		err := CheckPassword(c.user, c.pw)
		if c.says == "" {
			if err != nil {
				t.Errorf("CheckPassword(%q, %.20q) = %v", c.user, c.pw, err)
			}
			continue
		}
		if !errors.Is(err, actor.ErrInvalidArguments) || !strings.Contains(err.Error(), c.says) {
			t.Errorf("CheckPassword(%q, %.20q) = %v; want one saying %q", c.user, c.pw, err, c.says)
		}
	}
}

func TestCheckUserName(t *testing.T) {
	for name, ok := range map[string]bool{
		"ana": true, "ana.lyst@example.org": true, "a_b-c": true, "7": true,
		"": false, ".ana": false, "an a": false, "ana/..": false, strings.Repeat("a", 65): false, "ánä": false,
	} {
		if err := CheckUserName(name); (err == nil) != ok {
			t.Errorf("CheckUserName(%q) = %v", name, err)
		}
	}
}

// A user's token acts as its user at most: the lower role, and only the
// permissions both hold.
func TestTokenOfAUserIsBoundedByIt(t *testing.T) {
	for _, c := range []struct {
		tokRole   Role
		tokPerms  Perms
		user      ixstore.User
		wantRole  Role
		wantPerms string
	}{
		{Admin, AllPerms, ixstore.User{Role: "viewer", Perms: "audit"}, Viewer, "audit"},
		{Viewer, nil, ixstore.User{Role: "admin", Perms: "payloads,audit"}, Viewer, ""},
		{Operator, Perms{Payloads}, ixstore.User{Role: "operator", Perms: "audit"}, Operator, ""},
	} {
		role, perms, err := lower(c.tokRole, c.tokPerms, c.user)
		if err != nil || role != c.wantRole || perms.String() != c.wantPerms {
			t.Errorf("lower(%v, %v, %+v) = %v, %q, %v", c.tokRole, c.tokPerms, c.user, role, perms, err)
		}
	}
}
