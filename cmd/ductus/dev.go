package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"
	"time"

	"github.com/ductus/ductus/examples"
	"github.com/ductus/ductus/integration/access"
	"github.com/ductus/ductus/integration/engine"
)

// devSendArgs is the walkthrough's ductus send: ADT types only, since the
// ADT feed is no place for ORU^R01 (lab results arrive as files).
const devSendArgs = "-addr %s -count 20 -types ADT^A01,ADT^A04,ADT^A08"

// devCmd runs the bundled example project on SQLite with everything on
// localhost: from ./examples/hospital when run in the repository (so edits
// show at once), else from a copy written to ./ductus-dev/hospital.
func devCmd(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("dev", flag.ContinueOnError)
	fs.SetOutput(stderr)
	dir := fs.String("dir", "", "the project to run (default: ./examples/hospital, or a fresh copy of the bundled one)")
	receivers := fs.Bool("receivers", true, "also run local stand-ins for the example's EMR (MLLP) and lab API (HTTP), at the addresses of its emr and lab_api connections")
	if err := fs.Parse(args); err != nil {
		return &exitError{code: 2}
	}
	if *dir == "" {
		var err error
		if *dir, err = exampleDir(); err != nil {
			return err
		}
	}
	proj, err := load(*dir, stderr)
	if err != nil {
		return err
	}
	log := logger(proj, stderr)
	if *receivers {
		stop, err := startReceivers(ctx, proj, log)
		if err != nil {
			return err
		}
		defer stop()
	}
	adt := "127.0.0.1:2575"
	if in := proj.Interface("adt"); in != nil && in.Source.MLLP != nil {
		adt = in.Source.MLLP.Listen
	}
	fmt.Fprintf(stdout, `ductus dev: running %s
  send ADT messages:    ductus send %s
  send the samples:     ductus send -addr %s %s
  drop lab results:     cp %s %s
  see what arrived:     %s
  the nightly census:   start with CENSUS_CRON="* * * * *" to run it every minute
  stop:                 Ctrl-C
`, proj.Dir, fmt.Sprintf(devSendArgs, adt), adt, filepath.Join(proj.Dir, "samples", "adt_a0*.hl7"),
		filepath.Join(proj.Dir, "samples", "oru_r01.hl7"), filepath.Join(proj.Dir, "inbox", "lab")+string(filepath.Separator),
		filepath.Join(proj.Dir, "out"))
	return runProject(ctx, proj, log, 30*time.Second, func(e *engine.Engine) error {
		if proj.Engine.API.Listen == "" {
			return nil
		}
		// A development admin: a fresh token each start, printed here
		// only (its hash is what the database keeps).
		tok, secret, err := e.Access().CreateToken(ctx, cliPrincipal(), access.NewToken{Name: "dev", Role: access.Admin, Perms: access.AllPerms})
		if err != nil {
			return err
		}
		password, err := devAccount(ctx, e.Access())
		if err != nil {
			return err
		}
		fmt.Fprintf(stdout, `  the operator API:     http://%[1]s/api/v1/ (admin token %[2]s, with payloads and audit)
                        export DUCTUS_API=http://%[1]s DUCTUS_TOKEN=%[3]s
                        ductus status
  sign in:              account dev, password %[4]s (admin, payloads and audit; a new one each start)
`, proj.Engine.API.Listen, tok.ID, secret, password)
		return nil
	})
}

func exampleDir() (string, error) {
	if st, err := os.Stat(filepath.Join("examples", "hospital", "ductus.yaml")); err == nil && !st.IsDir() {
		return filepath.Abs(filepath.Join("examples", "hospital"))
	}
	dst, err := filepath.Abs(filepath.Join("ductus-dev", "hospital"))
	if err != nil {
		return "", err
	}
	if _, err := os.Stat(filepath.Join(dst, "ductus.yaml")); err == nil {
		return dst, nil
	}
	if err := copyProject(examples.Hospital(), dst); err != nil {
		return "", fmt.Errorf("write the example project to %s: %w", dst, err)
	}
	return dst, nil
}

// copyProject writes a project's files under dst, leaving out what a run
// of it produced (out/, files waiting in or done with under inbox/), which
// an embedded copy may carry from the tree it was built in.
func copyProject(src fs.FS, dst string) error {
	return fs.WalkDir(src, ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if generated(p, d.IsDir()) {
			if d.IsDir() {
				return fs.SkipDir
			}
			return nil
		}
		target := filepath.Join(dst, filepath.FromSlash(p))
		if d.IsDir() {
			return os.MkdirAll(target, 0o755)
		}
		b, err := fs.ReadFile(src, p)
		if err != nil {
			return err
		}
		return os.WriteFile(target, b, 0o644)
	})
}

// generated reports whether a project path is a run's output rather than
// part of the project.
func generated(p string, dir bool) bool {
	parts := strings.Split(p, "/")
	switch {
	case parts[0] == "out" || parts[0] == ".ductus":
		return true
	case parts[0] == "inbox" && dir && path.Base(p) == "done":
		return true
	case parts[0] == "inbox" && !dir && !strings.HasPrefix(path.Base(p), "."):
		return true // a file waiting to be picked up
	}
	return false
}

// devAccount makes the development admin account "dev", or gives it a
// fresh password when it exists, and returns the password.
func devAccount(ctx context.Context, acc *access.Store) (string, error) {
	b := make([]byte, 12)
	_, _ = rand.Read(b) // crypto/rand.Read never fails (it panics first)
	password := hex.EncodeToString(b)
	_, err := acc.CreateUser(ctx, cliPrincipal(), access.NewUser{Name: "dev", Password: password, Role: access.Admin, Perms: access.AllPerms})
	if errors.Is(err, access.ErrTaken) {
		err = acc.SetPassword(ctx, cliPrincipal(), "dev", password, false)
	}
	return password, err
}
