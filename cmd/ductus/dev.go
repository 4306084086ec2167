package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/ductus/ductus/examples"
)

// devCmd runs the bundled example project on SQLite with everything on
// localhost: from ./examples/hospital when run in the repository (so edits
// show at once), else from a copy written to ./ductus-dev/hospital.
func devCmd(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("dev", flag.ContinueOnError)
	fs.SetOutput(stderr)
	dir := fs.String("dir", "", "the project to run (default: ./examples/hospital, or a fresh copy of the bundled one)")
	receivers := fs.Bool("receivers", true, "also run local stand-ins for the example's EMR (MLLP on 127.0.0.1:6661) and lab API (HTTP on 127.0.0.1:8099)")
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
		stop, err := startReceivers(ctx, proj.Dir, log)
		if err != nil {
			return err
		}
		defer stop()
	}
	fmt.Fprintf(stdout, `ductus dev: running %s
  send ADT messages:    ductus send -addr 127.0.0.1:2575 -count 20
  drop lab results:     cp %s %s
  see what arrived:     %s
  stop:                 Ctrl-C
`, proj.Dir, filepath.Join(proj.Dir, "samples", "oru_r01.hl7"), filepath.Join(proj.Dir, "inbox", "lab")+string(filepath.Separator),
		filepath.Join(proj.Dir, "out"))
	return runProject(ctx, proj, log)
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
	src := examples.Hospital()
	err = fs.WalkDir(src, ".", func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		target := filepath.Join(dst, filepath.FromSlash(path))
		if d.IsDir() {
			return os.MkdirAll(target, 0o755)
		}
		b, err := fs.ReadFile(src, path)
		if err != nil {
			return err
		}
		return os.WriteFile(target, b, 0o644)
	})
	if err != nil {
		return "", fmt.Errorf("write the example project to %s: %w", dst, err)
	}
	return dst, nil
}
