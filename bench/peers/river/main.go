// Command river is the River peer of the Ductus benchmark: it runs River
// (github.com/riverqueue/river with riverpgxv5) in the mode of River's own
// `river bench` continuous benchmark against a PostgreSQL server and prints
// one JSON line in the form of the Ductus benchmark harness, so that
// `make bench BACKEND=postgres` can show our continuous_tell_process figure
// next to River's on the same machine, the same server and in the same run.
//
// It lives in its own Go module so that the main Ductus module never depends
// on River. Every run makes its own database, migrates it with rivermigrate
// and drops it at the end, also when the run fails or is interrupted, so it
// never touches River tables anyone else owns (River's own benchmark truncates
// the jobs table of whatever database it is given).
//
// Progress goes to stderr; stdout carries exactly one JSON line on success.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"math"
	"os"
	"os/exec"
	"os/signal"
	"strings"
	"syscall"
	"time"
)

// peerName names the peer and the exact River version in the JSON line; it
// must follow the version pinned in go.mod.
const peerName = "river v0.51.2"

// defaultDSN is the machine's local server, used when neither -dsn nor
// DUCTUS_TEST_POSTGRES is given.
const defaultDSN = "postgres://postgres@127.0.0.1:5432/postgres"

// config is what one run needs, parsed from the command line.
type config struct {
	dsn      string        // server to run against; the run makes its own database there
	duration time.Duration // measured window, warm-up excluded
	warmup   time.Duration // time after the client starts that is not measured
	maxConns int32         // pgxpool MaxConns; 0 keeps pgxpool's default like River's CLI
	commit   string        // commit to report; empty means ask git
}

// parseFlags reads the command line. getenv is passed in so tests can control
// the DSN fallback without touching the process environment.
func parseFlags(args []string, getenv func(string) string, errOut io.Writer) (config, error) {
	fs := flag.NewFlagSet("river-peer", flag.ContinueOnError)
	fs.SetOutput(errOut)
	var (
		cfg      config
		smoke    bool
		maxConns int
	)
	fs.StringVar(&cfg.dsn, "dsn", "", "PostgreSQL URL of the server (default: $DUCTUS_TEST_POSTGRES, else "+defaultDSN+")")
	fs.DurationVar(&cfg.duration, "duration", 30*time.Second, "measured duration, warm-up excluded")
	fs.DurationVar(&cfg.warmup, "warmup", 5*time.Second, "warm-up after the client starts, not measured")
	fs.IntVar(&maxConns, "max-conns", 0, "pgxpool max connections (0: pgxpool's default, max(4, NumCPU), as River's CLI uses)")
	fs.StringVar(&cfg.commit, "commit", "", "commit to report (default: git rev-parse HEAD, else \"unknown\")")
	fs.BoolVar(&smoke, "smoke", false, "short run (2 s measured, 0.5 s warm-up) that proves the peer builds and runs")
	if err := fs.Parse(args); err != nil {
		return config{}, fmt.Errorf("parse flags: %w", err)
	}
	if fs.NArg() > 0 {
		return config{}, fmt.Errorf("unexpected argument %q: this command takes flags only", fs.Arg(0))
	}
	if smoke {
		cfg.duration, cfg.warmup = 2*time.Second, 500*time.Millisecond
	}
	if cfg.duration <= 0 {
		return config{}, fmt.Errorf("-duration must be positive, got %s", cfg.duration)
	}
	if cfg.warmup < 0 {
		return config{}, fmt.Errorf("-warmup must not be negative, got %s", cfg.warmup)
	}
	if maxConns < 0 || maxConns > math.MaxInt32 {
		return config{}, fmt.Errorf("-max-conns must be between 0 and %d, got %d", math.MaxInt32, maxConns)
	}
	cfg.maxConns = int32(maxConns)
	if cfg.dsn == "" {
		cfg.dsn = getenv("DUCTUS_TEST_POSTGRES")
	}
	if cfg.dsn == "" {
		cfg.dsn = defaultDSN
	}
	return cfg, nil
}

// line is the harness's JSON line; field order is the harness's.
type line struct {
	Backend    string  `json:"backend"`
	Scenario   string  `json:"scenario"`
	Value      float64 `json:"value"`
	Unit       string  `json:"unit"`
	Ops        int64   `json:"ops"`
	Durability string  `json:"durability"`
	Commit     string  `json:"commit"`
	Date       string  `json:"date"`
	Peer       string  `json:"peer"`
}

// newLine turns a measurement into the harness's line.
func newLine(res result, commit string, now time.Time) line {
	rate := 0.0
	if res.elapsed > 0 {
		rate = float64(res.worked) / res.elapsed.Seconds()
	}
	return line{
		Backend:    "postgres",
		Scenario:   "peer_river_continuous",
		Value:      math.Round(rate*10) / 10,
		Unit:       "jobs/s",
		Ops:        res.worked,
		Durability: "normal",
		Commit:     commit,
		Date:       now.UTC().Format(time.RFC3339),
		Peer:       peerName,
	}
}

// gitCommit reports the checkout's HEAD, or "unknown" when there is no git,
// no repository or no commit yet: the figure is still worth printing.
func gitCommit(ctx context.Context) string {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, "git", "rev-parse", "HEAD").Output()
	if err != nil {
		return "unknown"
	}
	sha := strings.TrimSpace(string(out))
	if sha == "" {
		return "unknown"
	}
	return sha
}

// run makes the database, runs the benchmark, drops the database and writes
// the line. The database is dropped on every path out of here once created.
func run(ctx context.Context, cfg config, stdout io.Writer, logger *slog.Logger) (err error) {
	db, err := createDatabase(ctx, cfg.dsn, logger)
	if err != nil {
		return err
	}
	defer func() {
		// A fresh context: the run's may be cancelled by the interrupt that
		// brought us here, and the drop must still happen.
		dropCtx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if dropErr := db.drop(dropCtx); dropErr != nil {
			err = errors.Join(err, dropErr)
		}
	}()

	pool, err := db.openPool(ctx, cfg.maxConns)
	if err != nil {
		return err
	}
	defer pool.Close()
	logger.Info("pool opened", "max_conns", pool.Config().MaxConns)

	if err := migrate(ctx, pool, logger); err != nil {
		return err
	}

	res, err := runContinuous(ctx, pool, cfg.warmup, cfg.duration, logger)
	if err != nil {
		return err
	}

	commit := cfg.commit
	if commit == "" {
		commit = gitCommit(ctx)
	}
	out, err := json.Marshal(newLine(res, commit, time.Now()))
	if err != nil {
		return fmt.Errorf("encode result line: %w", err)
	}
	if _, err := fmt.Fprintf(stdout, "%s\n", out); err != nil {
		return fmt.Errorf("write result line: %w", err)
	}
	return nil
}

func main() {
	logger := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelInfo}))
	cfg, err := parseFlags(os.Args[1:], os.Getenv, os.Stderr)
	if err != nil {
		if errors.Is(err, flag.ErrHelp) {
			os.Exit(0)
		}
		fmt.Fprintf(os.Stderr, "river peer: %v\n", err)
		os.Exit(2)
	}
	// The first SIGINT/SIGTERM cancels the run so the database is dropped;
	// a second one gets Go's default behaviour and ends the process at once.
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	err = run(ctx, cfg, os.Stdout, logger)
	stop()
	if err != nil {
		fmt.Fprintf(os.Stderr, "river peer: %v\n", err)
		os.Exit(1)
	}
}
