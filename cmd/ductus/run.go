package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/ductus/ductus/integration/config"
	"github.com/ductus/ductus/integration/engine"
	"github.com/ductus/ductus/integration/script"
	"github.com/ductus/ductus/runtime/host"
)

func projectDir(fs *flag.FlagSet, args []string, name string) (string, error) {
	if err := fs.Parse(args); err != nil {
		return "", &exitError{code: 2, err: errors.New("")}
	}
	if fs.NArg() != 1 {
		return "", &exitError{code: 2, err: fmt.Errorf("usage: ductus %s <project-dir>", name)}
	}
	return fs.Arg(0), nil
}

// load reads and checks a project, printing every problem with its file
// and line.
func load(dir string, stderr io.Writer) (*config.Project, error) {
	proj, err := config.Load(dir, config.LoadOptions{})
	var ve *config.ValidationError
	if errors.As(err, &ve) {
		for _, p := range ve.Problems {
			fmt.Fprintln(stderr, p.String())
		}
		return nil, &exitError{code: 1, err: fmt.Errorf("%d problem(s) in %s", len(ve.Problems), dir)}
	}
	if err != nil {
		return nil, err
	}
	for _, w := range proj.Warnings {
		fmt.Fprintln(stderr, "warning:", w.String())
	}
	return proj, nil
}

func logger(proj *config.Project, w io.Writer) *slog.Logger {
	opts := &slog.HandlerOptions{Level: proj.Engine.Log.Level}
	if proj.Engine.Log.Format == config.LogJSON {
		return slog.New(slog.NewJSONHandler(w, opts))
	}
	return slog.New(slog.NewTextHandler(w, opts))
}

func runCmd(ctx context.Context, args []string, _, stderr io.Writer) error {
	fs := flag.NewFlagSet("run", flag.ContinueOnError)
	fs.SetOutput(stderr)
	pprofAddr := fs.String("pprof", "", "serve net/http/pprof at `host:port` (its own listener; off by default)")
	stopTimeout := fs.Duration("stop-timeout", 30*time.Second, "on SIGTERM or Ctrl-C, how long running turns and sends may take to finish")
	dir, err := projectDir(fs, args, "run")
	if err != nil {
		return err
	}
	proj, err := load(dir, stderr)
	if err != nil {
		return err
	}
	log := logger(proj, stderr)
	if *pprofAddr != "" {
		_, stop, err := servePprof(*pprofAddr, log)
		if err != nil {
			return err
		}
		defer stop()
	}
	if *stopTimeout <= 0 {
		return &exitError{code: 2, err: fmt.Errorf("-stop-timeout %v: want a positive duration", *stopTimeout)}
	}
	return runProject(ctx, proj, log, *stopTimeout, nil)
}

// runProject runs an engine on proj until ctx ends (a signal) or a drain
// with stop ends it; opened, when set, is called once the engine's
// database is open, before anything listens. When ctx ends, the sources
// close and answer what is in flight, and turns and sends have
// stopTimeout to finish before they are cancelled (their leases released,
// so another engine takes them over at once).
func runProject(ctx context.Context, proj *config.Project, log *slog.Logger, stopTimeout time.Duration, opened func(*engine.Engine) error) error {
	e, err := engine.New(ctx, proj, engine.Options{Logger: log, Version: version,
		Host: func(c *host.Config) { c.ShutdownTimeout = stopTimeout }})
	if err != nil {
		return err
	}
	defer e.Close()
	if opened != nil {
		if err := opened(e); err != nil {
			return err
		}
	}
	stop := restartOnHangup(ctx, e, log)
	defer stop()
	return e.Run(ctx)
}

// restartOnHangup restarts the interfaces stopped after repeated runaway
// scripts when the process gets SIGHUP: their scripts are read from disk
// again (fix the script, then `kill -HUP <pid>`), their sources accept
// messages again and their waiting messages are delivered.
func restartOnHangup(ctx context.Context, e *engine.Engine, log *slog.Logger) (stop func()) {
	hup := make(chan os.Signal, 1)
	signal.Notify(hup, syscall.SIGHUP)
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			select {
			case <-ctx.Done():
				return
			case <-hup:
			}
			names, err := e.RestartStopped(ctx)
			switch {
			case err != nil:
				log.Error("SIGHUP: restarting stopped interfaces failed (they stay stopped)", "restarted", names, "err", err)
			case len(names) == 0:
				log.Info("SIGHUP: no interface is stopped")
			default:
				log.Info("SIGHUP: restarted stopped interfaces", "interfaces", names)
			}
		}
	}()
	return func() {
		signal.Stop(hup)
		cancel()
		<-done
	}
}

func validateCmd(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("validate", flag.ContinueOnError)
	fs.SetOutput(stderr)
	dir, err := projectDir(fs, args, "validate")
	if err != nil {
		return err
	}
	proj, err := load(dir, stderr)
	if err != nil {
		return err
	}
	// Compile every interface's scripts too: a syntax error or a missing
	// transform function is reported with its file and line.
	sh, err := script.NewHost(script.Config{Isolates: 1, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		return err
	}
	defer sh.Close()
	bad := 0
	for _, in := range proj.Interfaces {
		spec, err := script.ReadInterfaceDir(in.Name, in.Dir)
		if err == nil {
			for _, d := range in.Destinations {
				spec.Functions = append(spec.Functions, d.Transform)
			}
			err = sh.Load(ctx, spec)
		}
		if err != nil {
			bad++
			fmt.Fprintf(stderr, "%s: %v\n", in.File, err)
		}
	}
	if bad > 0 {
		return &exitError{code: 1, err: fmt.Errorf("%d interface(s) with script problems", bad)}
	}
	fmt.Fprintf(stdout, "%s: %d interface(s), OK\n", proj.Dir, len(proj.Interfaces))
	return nil
}

func migrateCmd(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("migrate", flag.ContinueOnError)
	fs.SetOutput(stderr)
	dir, err := projectDir(fs, args, "migrate")
	if err != nil {
		return err
	}
	proj, err := load(dir, stderr)
	if err != nil {
		return err
	}
	be, err := engine.OpenDatabase(ctx, proj.Engine.Database, logger(proj, stderr))
	if err != nil {
		return err
	}
	defer be.Close()
	fmt.Fprintf(stdout, "%s database is up to date\n", be.Name())
	return nil
}
