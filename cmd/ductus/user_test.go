package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// The user commands work on the project's database with no engine
// running: create and passwd read the password from a file, list shows
// the state (never the hash), disable and enable flip it, and bad
// arguments say what is wrong.
func TestUserCommands(t *testing.T) {
	dir := t.TempDir()
	if err := copyProject(os.DirFS(exampleProject), dir); err != nil {
		t.Fatal(err)
	}
	pw := filepath.Join(t.TempDir(), "pw")
	if err := os.WriteFile(pw, []byte("a long enough password\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	code, out, errOut := ductus(t, "user", "create", "-role", "admin", "-perm", "audit", "-password-file", pw, dir, "ana")
	if code != 0 || !strings.Contains(out, "created ana (role admin, permissions audit); it must be changed") {
		t.Fatalf("user create exited %d\n%s%s", code, out, errOut)
	}
	code, out, errOut = ductus(t, "user", "list", dir)
	if code != 0 || !strings.Contains(out, "ana") || !strings.Contains(out, "must change password") || strings.Contains(out, "argon2") {
		t.Fatalf("user list exited %d, printed\n%s%s", code, out, errOut)
	}
	if code, out, errOut = ductus(t, "user", "passwd", "-must-change=false", "-password-file", pw, dir, "ana"); code != 0 || !strings.Contains(out, "set the password of ana") {
		t.Fatalf("user passwd exited %d\n%s%s", code, out, errOut)
	}
	if _, out, _ = ductus(t, "user", "list", dir); !strings.Contains(out, "active") {
		t.Fatalf("after passwd -must-change=false:\n%s", out)
	}
	// The only admin cannot be disabled; another admin first.
	if code, _, errOut = ductus(t, "user", "disable", dir, "ana"); code != 1 || !strings.Contains(errOut, "only enabled admin") {
		t.Fatalf("disabling the only admin exited %d: %s", code, errOut)
	}
	if code, out, errOut = ductus(t, "user", "create", "-role", "admin", "-password-file", pw, dir, "bo"); code != 0 {
		t.Fatalf("second admin: %d %s%s", code, out, errOut)
	}
	if code, out, _ = ductus(t, "user", "disable", dir, "ana"); code != 0 || out != "disabled ana\n" {
		t.Fatalf("disable: %d %q", code, out)
	}
	if _, out, _ = ductus(t, "user", "list", dir); !strings.Contains(out, "disabled") {
		t.Fatalf("after disable:\n%s", out)
	}
	if code, out, _ = ductus(t, "user", "enable", dir, "ana"); code != 0 || out != "enabled ana\n" {
		t.Fatalf("enable: %d %q", code, out)
	}

	short := filepath.Join(t.TempDir(), "short")
	if err := os.WriteFile(short, []byte("short\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	bad := []struct {
		args []string
		code int
		says string
	}{
		{[]string{"user"}, 2, "usage: ductus user create|list|passwd|disable|enable"},
		{[]string{"user", "rename", dir}, 2, `unknown user command "rename"`},
		{[]string{"user", "create", "-password-file", pw, dir}, 2, "usage: ductus user create"},
		{[]string{"user", "create", "-role", "root", "-password-file", pw, dir, "cy"}, 2, "root"},
		{[]string{"user", "create", "-password-file", short, dir, "cy"}, 1, "at least 10"},
		{[]string{"user", "create", "-password-file", "/nonexistent/pw", dir, "cy"}, 2, "/nonexistent/pw"},
		{[]string{"user", "create", "-password-file", pw, dir, "no spaces"}, 1, "may hold letters"},
		{[]string{"user", "create", "-password-file", pw, dir, "ana"}, 1, "exists already"},
		{[]string{"user", "passwd", "-password-file", short, dir, "ana"}, 2, "at least 10"},
		{[]string{"user", "passwd", "-password-file", pw, dir, "nobody"}, 1, "nobody"},
		{[]string{"user", "disable", dir, "nobody"}, 1, "nobody"},
	}
	for _, c := range bad {
		if code, out, errOut := ductus(t, c.args...); code != c.code || !strings.Contains(errOut, c.says) {
			t.Errorf("ductus %v = %d, printed %q %q; want %d saying %q", c.args, code, out, errOut, c.code, c.says)
		}
	}
}
