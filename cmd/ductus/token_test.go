package main

import (
	"context"
	"encoding/json"
	"os"
	"regexp"
	"strings"
	"testing"

	"github.com/ductus/ductus/internal/testutil"
)

// ductus runs one command line in-process and returns its exit status and
// output.
func ductus(t *testing.T, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var out, errOut testutil.SyncBuffer
	code = run(context.Background(), args, &out, &errOut)
	return code, out.String(), errOut.String()
}

// The token commands work on the project's database with no engine
// running: create shows the secret once, list shows the token (never the
// secret), revoke marks it, and bad arguments say what is wrong.
func TestTokenCommands(t *testing.T) {
	dir := t.TempDir()
	if err := copyProject(os.DirFS(exampleProject), dir); err != nil {
		t.Fatal(err)
	}
	code, out, errOut := ductus(t, "token", "create", "-name", "nightly report", "-role", "operator", "-perm", "payloads", dir)
	if code != 0 {
		t.Fatalf("token create exited %d\n%s%s", code, out, errOut)
	}
	secret := regexp.MustCompile(`dux_[a-z2-7]+`).FindString(out)
	id := regexp.MustCompile(`tok_[0-9a-f]+`).FindString(out)
	if secret == "" || id == "" || !strings.Contains(out, "role operator, permissions payloads") {
		t.Fatalf("token create printed %q", out)
	}

	code, out, errOut = ductus(t, "token", "list", dir)
	if code != 0 || !strings.Contains(out, id) || !strings.Contains(out, "nightly report") || strings.Contains(out, secret) {
		t.Fatalf("token list exited %d, printed\n%s%s", code, out, errOut)
	}
	if code, out, errOut = ductus(t, "token", "revoke", dir, id); code != 0 || !strings.Contains(out, "revoked "+id) {
		t.Fatalf("token revoke exited %d, printed\n%s%s", code, out, errOut)
	}
	if _, out, _ = ductus(t, "token", "list", dir); strings.Contains(strings.SplitN(out, id, 2)[1], " -\n") {
		t.Fatalf("the revoked token lists as live:\n%s", out)
	}

	bad := []struct {
		args []string
		code int
		says string
	}{
		{[]string{"token"}, 2, "usage: ductus token create|list|revoke"},
		{[]string{"token", "mint", dir}, 2, `unknown token command "mint"`},
		{[]string{"token", "create", "-name", "x", "-role", "root", dir}, 2, "root"},
		{[]string{"token", "create", "-name", "x", "-perm", "everything", dir}, 2, "everything"},
		{[]string{"token", "create", "-role", "viewer", dir}, 1, "name"},
		{[]string{"token", "revoke", dir}, 2, "usage: ductus token revoke"},
		{[]string{"token", "revoke", dir, "tok_nope"}, 1, "tok_nope"},
		{[]string{"token", "list", "/nonexistent/project"}, 1, "/nonexistent/project"},
	}
	for _, c := range bad {
		if code, out, errOut := ductus(t, c.args...); code != c.code || !strings.Contains(errOut, c.says) {
			t.Errorf("ductus %v = %d, printed %q %q; want %d saying %q", c.args, code, out, errOut, c.code, c.says)
		}
	}
}

// ductus api-spec prints the OpenAPI document with no project and no
// engine; ductus status without a token or an engine says what is missing.
func TestAPISpecAndStatusErrors(t *testing.T) {
	code, out, errOut := ductus(t, "api-spec")
	var doc struct {
		OpenAPI string         `json:"openapi"`
		Paths   map[string]any `json:"paths"`
	}
	if code != 0 || json.Unmarshal([]byte(out), &doc) != nil || doc.OpenAPI != "3.1.0" || doc.Paths["/api/v1/interfaces"] == nil {
		t.Fatalf("api-spec exited %d, printed %.200q %q", code, out, errOut)
	}
	t.Setenv("DUCTUS_TOKEN", "")
	t.Setenv("DUCTUS_TOKEN_FILE", "")
	if code, _, errOut := ductus(t, "status"); code != 1 || !strings.Contains(errOut, "DUCTUS_TOKEN") {
		t.Fatalf("status without a token = %d %q", code, errOut)
	}
	t.Setenv("DUCTUS_TOKEN", "dux_X")
	if code, _, errOut := ductus(t, "status", "-api", testutil.FreePort(t)); code != 1 || !strings.Contains(errOut, "no engine answers") {
		t.Fatalf("status with no engine = %d %q", code, errOut)
	}
}
