package main

import (
	"bufio"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
	"text/tabwriter"
	"time"

	"golang.org/x/term"

	"github.com/ductus/ductus/integration/access"
)

// userCmd manages accounts on the server, through the database and
// without the API: the first admin is made here, and an admin locked out
// of the console gets back in here.
func userCmd(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	usage := errors.New("usage: ductus user create|list|passwd|disable|enable [flags] <project-dir> [name]")
	if len(args) == 0 {
		return &exitError{code: 2, err: usage}
	}
	fs := flag.NewFlagSet("user "+args[0], flag.ContinueOnError)
	fs.SetOutput(stderr)
	var role, perms, pwFile *string
	var mustChange *bool
	switch args[0] {
	case "create":
		role = fs.String("role", "viewer", "the account's `role`: viewer, operator or admin")
		perms = fs.String("perm", "", "permissions beyond the role, comma-separated: payloads, audit")
		fallthrough
	case "passwd":
		pwFile = fs.String("password-file", "", "read the password from the first line of this `file` (- for standard input); without it, a terminal is asked twice, and other input is read as a file")
		mustChange = fs.Bool("must-change", true, "the user must choose a new password at the first sign-in")
	case "list", "disable", "enable":
	default:
		return &exitError{code: 2, err: fmt.Errorf("unknown user command %q; %w", args[0], usage)}
	}
	if err := fs.Parse(args[1:]); err != nil {
		return &exitError{code: 2, err: errors.New("")}
	}
	want := 2
	if args[0] == "list" {
		want = 1
	}
	if fs.NArg() != want {
		return &exitError{code: 2, err: fmt.Errorf("usage: ductus user %s [flags] <project-dir>%s", args[0], map[bool]string{true: " <name>"}[want == 2])}
	}
	var password string
	if pwFile != nil {
		var err error
		if password, err = readPassword(*pwFile, stderr); err != nil {
			return &exitError{code: 2, err: err}
		}
	}
	acc, closeDB, err := openAccess(ctx, fs.Arg(0), stderr)
	if err != nil {
		return err
	}
	defer closeDB()
	by, name := cliPrincipal(), fs.Arg(1)
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
		u, err := acc.CreateUser(ctx, by, access.NewUser{Name: name, Password: password, Role: r, Perms: ps, MustChange: *mustChange})
		if err != nil {
			return err
		}
		fmt.Fprintf(stdout, "created %s (role %s%s)%s\n", u.Name, u.Role, permsNote(u.Perms), mustChangeNote(u.MustChange))
	case "passwd":
		if err := access.CheckPassword(name, password); err != nil {
			return &exitError{code: 2, err: err}
		}
		if err := acc.SetPassword(ctx, by, name, password, *mustChange); err != nil {
			return err
		}
		fmt.Fprintf(stdout, "set the password of %s; its sessions ended and its lockout cleared%s\n", name, mustChangeNote(*mustChange))
	case "disable", "enable":
		disabled := args[0] == "disable"
		if _, err := acc.UpdateUser(ctx, by, name, access.UserChange{Disabled: &disabled}); err != nil {
			return err
		}
		fmt.Fprintf(stdout, "%sd %s\n", args[0], name)
	case "list":
		users, err := acc.Users(ctx)
		if err != nil {
			return err
		}
		tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "NAME\tROLE\tPERMISSIONS\tSTATE\tCREATED\tBY")
		for _, u := range users {
			state := "active"
			switch {
			case u.Disabled:
				state = "disabled"
			case u.LockedUntil.After(time.Now()):
				state = "locked until " + u.LockedUntil.Local().Format(time.DateTime)
			case u.MustChange:
				state = "must change password"
			}
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", u.Name, u.Role, orDash(u.Perms), state,
				u.CreatedAt.Local().Format(time.DateTime), u.CreatedBy)
		}
		return tw.Flush()
	}
	return nil
}

func mustChangeNote(b bool) string {
	if b {
		return "; it must be changed at the first sign-in"
	}
	return ""
}

// readPassword reads a password from file ("-": standard input), or asks
// a terminal twice without echo.
func readPassword(file string, stderr io.Writer) (string, error) {
	if file == "" && term.IsTerminal(int(os.Stdin.Fd())) {
		fmt.Fprint(stderr, "password: ")
		a, err := term.ReadPassword(int(os.Stdin.Fd()))
		fmt.Fprintln(stderr)
		if err != nil {
			return "", fmt.Errorf("read the password: %w", err)
		}
		fmt.Fprint(stderr, "again: ")
		b, err := term.ReadPassword(int(os.Stdin.Fd()))
		fmt.Fprintln(stderr)
		if err != nil {
			return "", fmt.Errorf("read the password: %w", err)
		}
		if string(a) != string(b) {
			return "", errors.New("the two passwords differ")
		}
		return string(a), nil
	}
	var r io.Reader = os.Stdin
	if file != "" && file != "-" {
		f, err := os.Open(file)
		if err != nil {
			return "", fmt.Errorf("read the password file: %w", err)
		}
		defer f.Close()
		r = f
	}
	line, err := bufio.NewReader(r).ReadString('\n')
	if err != nil && !errors.Is(err, io.EOF) {
		return "", fmt.Errorf("read the password: %w", err)
	}
	line = strings.TrimRight(line, "\r\n")
	if line == "" {
		return "", errors.New("no password given (the first line of the password input is empty)")
	}
	return line, nil
}
