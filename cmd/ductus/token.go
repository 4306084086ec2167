package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/user"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/ductus/ductus/integration/access"
	"github.com/ductus/ductus/integration/api"
	"github.com/ductus/ductus/integration/engine"
)

// tokenCmd manages API tokens on the server, through the database and
// without the API (so the first admin token can be made, and a lost one
// revoked, with no engine running).
func tokenCmd(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	usage := errors.New("usage: ductus token create|list|revoke [flags] <project-dir> [token-id]")
	if len(args) == 0 {
		return &exitError{code: 2, err: usage}
	}
	fs := flag.NewFlagSet("token "+args[0], flag.ContinueOnError)
	fs.SetOutput(stderr)
	var name, role, perms *string
	switch args[0] {
	case "create":
		name = fs.String("name", "", "the token's `name` (required: who or what holds it)")
		role = fs.String("role", "viewer", "the token's `role`: viewer, operator or admin")
		perms = fs.String("perm", "", "permissions beyond the role, comma-separated: payloads, audit")
	case "list", "revoke":
	default:
		return &exitError{code: 2, err: fmt.Errorf("unknown token command %q; %w", args[0], usage)}
	}
	if err := fs.Parse(args[1:]); err != nil {
		return &exitError{code: 2, err: errors.New("")}
	}
	want := 1
	if args[0] == "revoke" {
		want = 2
	}
	if fs.NArg() != want {
		return &exitError{code: 2, err: fmt.Errorf("usage: ductus token %s [flags] <project-dir>%s", args[0], map[bool]string{true: " <token-id>"}[want == 2])}
	}
	acc, closeDB, err := openAccess(ctx, fs.Arg(0), stderr)
	if err != nil {
		return err
	}
	defer closeDB()
	by := cliPrincipal()
	switch args[0] {
	case "create":
		r, err := access.ParseRole(*role)
		if err != nil {
			return &exitError{code: 2, err: err}
		}
		ps, err := access.ParsePerms(*perms)
		if err != nil {
			return &exitError{code: 2, err: err}
		}
		tok, secret, err := acc.CreateToken(ctx, by, access.NewToken{Name: *name, Role: r, Perms: ps})
		if err != nil {
			return err
		}
		fmt.Fprintf(stdout, "created %s (%s, role %s%s)\n%s\nThe token is shown this once: only its hash is stored.\n",
			tok.ID, tok.Name, tok.Role, permsNote(tok.Perms), secret)
	case "list":
		toks, err := acc.Tokens(ctx)
		if err != nil {
			return err
		}
		tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "ID\tNAME\tROLE\tPERMISSIONS\tCREATED\tBY\tREVOKED")
		for _, t := range toks {
			revoked := "-"
			if !t.RevokedAt.IsZero() {
				revoked = t.RevokedAt.Local().Format(time.DateTime)
			}
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\n", t.ID, t.Name, t.Role, orDash(t.Perms),
				t.CreatedAt.Local().Format(time.DateTime), t.CreatedBy, revoked)
		}
		return tw.Flush()
	case "revoke":
		if err := acc.RevokeToken(ctx, by, fs.Arg(1)); err != nil {
			return err
		}
		fmt.Fprintf(stdout, "revoked %s\n", fs.Arg(1))
	}
	return nil
}

// cliPrincipal is who acts from the CLI: the operating system's user, as
// the audit log records it.
func cliPrincipal() *access.Principal {
	name := "unknown"
	if u, err := user.Current(); err == nil {
		name = u.Username
	}
	return &access.Principal{Name: "cli:" + name, Via: access.ViaCLI, Role: access.Admin, Perms: access.AllPerms}
}

func permsNote(p string) string {
	if p == "" {
		return ""
	}
	return ", permissions " + p
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// apiSpecCmd prints the operator API's OpenAPI document (no engine, no
// database).
func apiSpecCmd(_ context.Context, args []string, stdout, _ io.Writer) error {
	if len(args) != 0 {
		return &exitError{code: 2, err: errors.New("usage: ductus api-spec (it takes no arguments)")}
	}
	b, err := api.DocumentJSON()
	if err != nil {
		return err
	}
	_, err = fmt.Fprintln(stdout, strings.TrimSpace(string(b)))
	return err
}

// tokenFromEnv is the bearer token the API commands use: DUCTUS_TOKEN, or
// the first line of the file DUCTUS_TOKEN_FILE names.
func tokenFromEnv() (string, error) {
	if t := strings.TrimSpace(os.Getenv("DUCTUS_TOKEN")); t != "" {
		return t, nil
	}
	if f := os.Getenv("DUCTUS_TOKEN_FILE"); f != "" {
		b, err := os.ReadFile(f)
		if err != nil {
			return "", fmt.Errorf("read the token file (DUCTUS_TOKEN_FILE): %w", err)
		}
		line, _, _ := strings.Cut(string(b), "\n")
		if t := strings.TrimSpace(line); t != "" {
			return t, nil
		}
		return "", fmt.Errorf("the token file %s is empty", f)
	}
	return "", errors.New("no API token: set DUCTUS_TOKEN (or DUCTUS_TOKEN_FILE to a file holding one); create one with `ductus token create -name me -role viewer <project-dir>`")
}

// openAccess opens a project's database (migrating it) for the commands
// that manage accounts and tokens on the server, without an engine or
// the API; closeDB closes it.
func openAccess(ctx context.Context, dir string, stderr io.Writer) (acc *access.Store, closeDB func(), err error) {
	proj, err := load(dir, stderr)
	if err != nil {
		return nil, nil, err
	}
	be, err := engine.OpenDatabase(ctx, proj.Engine.Database, logger(proj, stderr))
	if err != nil {
		return nil, nil, err
	}
	return access.New(be.EngineStore(), access.Policy{}), func() { be.Close() }, nil
}
