package access

import (
	"errors"
	"strings"
	"testing"
)

func TestParseRole(t *testing.T) {
	for _, c := range []struct {
		in   string
		want Role
		err  bool
	}{
		{"viewer", Viewer, false}, {"operator", Operator, false}, {"admin", Admin, false},
		{"", RoleNone, true}, {"Admin", RoleNone, true}, {"root", RoleNone, true},
	} {
		got, err := ParseRole(c.in)
		if got != c.want || (err != nil) != c.err {
			t.Errorf("ParseRole(%q) = %v, %v", c.in, got, err)
		}
		if err != nil && !strings.Contains(err.Error(), `"`+c.in+`"`) {
			t.Errorf("ParseRole(%q): the error %q does not name the input", c.in, err)
		}
	}
}

func TestParsePerms(t *testing.T) {
	for _, c := range []struct {
		in   []string
		want string
		err  string
	}{
		{nil, "", ""},
		{[]string{""}, "", ""},
		{[]string{"audit,payloads"}, "payloads,audit", ""},
		{[]string{"audit", " payloads ", "audit"}, "payloads,audit", ""},
		{[]string{"payloads,everything"}, "", `"everything"`},
	} {
		got, err := ParsePerms(c.in...)
		if c.err != "" {
			if err == nil || !strings.Contains(err.Error(), c.err) {
				t.Errorf("ParsePerms(%q) = %v, %v; want an error naming %s", c.in, got, err, c.err)
			}
			continue
		}
		if err != nil || got.String() != c.want {
			t.Errorf("ParsePerms(%q) = %q, %v; want %q", c.in, got, err, c.want)
		}
	}
}

// Check against every kind of rule, for every kind of caller.
func TestCheck(t *testing.T) {
	viewer := &Principal{Name: "v", Role: Viewer}
	operator := &Principal{Name: "o", Role: Operator}
	admin := &Principal{Name: "a", Role: Admin}
	reader := &Principal{Name: "r", Role: Viewer, Perms: Perms{Payloads}}
	for _, c := range []struct {
		who  *Principal
		rule Rule
		want error
	}{
		{nil, Rule{Public: true}, nil},
		{nil, Rule{Role: Viewer}, ErrUnauthenticated},
		{&Principal{Name: "none"}, Rule{Role: Viewer}, ErrUnauthenticated},
		{viewer, Rule{Role: Viewer}, nil},
		{viewer, Rule{Role: Operator}, ErrForbidden},
		{operator, Rule{Role: Operator}, nil},
		{operator, Rule{Role: Admin}, ErrForbidden},
		{admin, Rule{Role: Admin}, nil},
		{admin, Rule{Role: Viewer, Perm: Payloads}, ErrForbidden},
		{reader, Rule{Role: Viewer, Perm: Payloads}, nil},
		{reader, Rule{Role: Viewer, Perm: Audit}, ErrForbidden},
	} {
		err := Check(c.who, "op", c.rule)
		if (c.want == nil) != (err == nil) || (c.want != nil && !errors.Is(err, c.want)) {
			t.Errorf("Check(%+v, %+v) = %v; want %v", c.who, c.rule, err, c.want)
		}
	}
}

// Every operation in the table needs at least a viewer unless it is
// public, and the permissions it names exist.
func TestTableIsWellFormed(t *testing.T) {
	for op, r := range Table {
		if r.Public == (r.Role != RoleNone) {
			t.Errorf("%s: public %v with role %v", op, r.Public, r.Role)
		}
		if r.Perm != "" {
			if _, err := ParsePerms(string(r.Perm)); err != nil {
				t.Errorf("%s: %v", op, err)
			}
		}
	}
}

func TestTokenSyntax(t *testing.T) {
	good := newSecret()
	if err := checkTokenSyntax(good); err != nil {
		t.Fatalf("a new token %q: %v", good, err)
	}
	if newSecret() == good || HashToken(good) == good || len(HashToken(good)) != 64 {
		t.Fatal("tokens repeat, or the hash is not a SHA-256")
	}
	for _, bad := range []string{"", "dux_", "eyJhbGciOiJIUzI1NiJ9.e30.x", good[:len(good)-1], good + "a",
		"dux_" + strings.Repeat("1", len(good)-4), strings.ToUpper(good)} {
		if err := checkTokenSyntax(bad); !errors.Is(err, ErrUnauthenticated) {
			t.Errorf("checkTokenSyntax(%q) = %v", bad, err)
		}
	}
}

// FuzzTokenSyntax: whatever a caller sends as a bearer token, the check
// answers without panicking, and accepts only what has a token's shape.
func FuzzTokenSyntax(f *testing.F) {
	f.Add(newSecret())
	f.Add("dux_")
	f.Add("Bearer x")
	f.Fuzz(func(t *testing.T, s string) {
		if checkTokenSyntax(s) == nil && (!strings.HasPrefix(s, TokenPrefix) || len(s) != len(TokenPrefix)+52) {
			t.Fatalf("accepted %q", s)
		}
	})
}
