// Command bench is the Ductus benchmark harness: it runs fixed, named
// scenarios against a fresh database of one backend and prints one JSON
// object per result on stdout, with progress on stderr:
//
//	go run ./bench -backend sqlite [-scenario NAME[,NAME...]] [-durability normal|full] [-smoke]
//
// Scenario names never change, so figures can be compared over time (the
// table in docs/benchmarks.md records them with the machine and date). Figures are
// measurements of one run on one machine; compare ratios within a run.
// -smoke runs every scenario with tiny counts so `make test` proves the
// harness still works; it asserts nothing about speed.
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"runtime/pprof"
	"slices"
	"sort"
	"strings"
	"syscall"
	"time"
)

type options struct {
	backend    string
	scenario   string
	durability string
	smoke      bool
	worker     bool
	dsn        string
	cpuprofile string
	// startProject, set, makes this process start1001's child: it runs the
	// project in that folder and reports when it is ready.
	startProject string
}

// result is one line of output.
type result struct {
	Backend    string  `json:"backend"`
	Scenario   string  `json:"scenario"`
	Value      float64 `json:"value"`
	Unit       string  `json:"unit"`
	Ops        int     `json:"ops"`
	Durability string  `json:"durability"`
	Commit     string  `json:"commit"`
	Date       string  `json:"date"`
}

// env is one backend's way to make and open databases.
type env interface {
	// fresh creates an empty database and returns its DSN and a cleanup.
	fresh(ctx context.Context) (dsn string, cleanup func(), err error)
	// open opens the backend on dsn; count, if set, counts statements.
	open(ctx context.Context, dsn string, count *counter) (backend, error)
	// baseline runs one-row INSERT+COMMIT transactions on conns
	// connections for d and returns the commits.
	baseline(ctx context.Context, dsn string, conns int, d time.Duration) (int, error)
}

// backends maps -backend names to their env constructors; each env file
// adds itself.
var backends = map[string]func(o options) (env, error){}

// scenario is one named measurement.
type scenario struct {
	name string
	run  func(ctx context.Context, r *runner) error
	// figures names what run prints besides name, so
	// -scenario accepts any printed name (ask_latency_p99_ms runs
	// ask_latency).
	figures []string
}

// matches reports whether -scenario want (a name or a comma-separated
// list of names) selects s.
func (s scenario) matches(want string) bool {
	if want == "" {
		return true
	}
	for _, w := range strings.Split(want, ",") {
		if w = strings.TrimSpace(w); w == s.name || slices.Contains(s.figures, w) {
			return true
		}
	}
	return false
}

func main() {
	var o options
	flag.StringVar(&o.backend, "backend", "sqlite", "backend: "+strings.Join(backendNames(), ", "))
	flag.StringVar(&o.scenario, "scenario", "", "run only these scenarios, a comma-separated list of names (default: all)")
	flag.StringVar(&o.durability, "durability", "normal", "SQLite synchronous mode: normal or full")
	flag.BoolVar(&o.smoke, "smoke", false, "tiny operation counts (proves the harness runs; figures mean nothing)")
	flag.BoolVar(&o.worker, "worker", false, "internal: run as a worker process")
	flag.StringVar(&o.dsn, "dsn", "", "internal: the worker's database")
	flag.StringVar(&o.cpuprofile, "cpuprofile", "", "write a CPU profile of the run to this file (start_1001_interfaces: each starting engine's, a child process, to this file.child, .child_restart and .child_busy)")
	flag.StringVar(&o.startProject, "start-project", "", "internal: run this project folder's engine and report when it is ready (start_1001_interfaces)")
	flag.Parse()
	if err := run(o); err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		os.Exit(1)
	}
}

func backendNames() []string {
	var out []string
	for n := range backends {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

func run(o options) error {
	mk, ok := backends[o.backend]
	if !ok {
		return fmt.Errorf("unknown backend %q (have %s)", o.backend, strings.Join(backendNames(), ", "))
	}
	if o.durability != "normal" && o.durability != "full" {
		return fmt.Errorf("-durability must be normal or full, not %q", o.durability)
	}
	e, err := mk(o)
	if err != nil {
		return err
	}
	// Ctrl-C ends the scenario in progress and still drops its database.
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if o.cpuprofile != "" {
		f, err := os.Create(o.cpuprofile)
		if err != nil {
			return err
		}
		defer f.Close()
		if err := pprof.StartCPUProfile(f); err != nil {
			return err
		}
		defer pprof.StopCPUProfile()
	}
	if o.worker {
		return workerMain(ctx, e, o)
	}
	if o.startProject != "" {
		return startMain(ctx, e, o)
	}
	if o.smoke && o.backend != "sqlite" {
		// make test smoke-runs every backend it can reach; like the test
		// suites, an unreachable server skips with a line, or fails with
		// CI=true.
		_, cleanup, err := e.fresh(ctx)
		if err != nil {
			if os.Getenv("CI") == "true" {
				return err
			}
			fmt.Fprintf(os.Stderr, "bench: %s smoke run skipped, server unreachable (%v); set CI=true to fail instead\n", o.backend, err)
			return nil
		}
		cleanup()
	}
	r := &runner{o: o, env: e, commit: gitCommit(), date: time.Now().UTC().Format(time.RFC3339), baselines: map[int]float64{}}
	list := selectScenarios(o.scenario)
	if len(list) == 0 {
		var names []string
		for _, s := range allScenarios() {
			names = append(names, s.name)
			names = append(names, s.figures...)
		}
		return fmt.Errorf("no scenario named %q (have %s)", o.scenario, strings.Join(names, ", "))
	}
	for i, s := range list {
		fmt.Fprintf(os.Stderr, "[%d/%d] %s on %s ...\n", i+1, len(list), s.name, o.backend)
		start := time.Now()
		unwatch := watchdog(o, s.name)
		err := s.run(ctx, r)
		unwatch()
		if err != nil {
			return fmt.Errorf("%s: %w", s.name, err)
		}
		fmt.Fprintf(os.Stderr, "[%d/%d] %s done in %s\n", i+1, len(list), s.name, time.Since(start).Round(time.Millisecond))
	}
	return nil
}

// selectScenarios returns the scenarios -scenario names, in the order a
// full run takes them. A scenario that prints a ratio to the run's
// baseline_commit figures brings baseline_commit in first when it was not
// named.
func selectScenarios(want string) []scenario {
	var list []scenario
	baseline, needed := false, false
	for _, s := range allScenarios() {
		if s.matches(want) {
			list = append(list, s)
			baseline = baseline || s.name == "baseline_commit"
			needed = needed || needsBaseline(s.name)
		}
	}
	if needed && !baseline {
		for _, s := range allScenarios() {
			if s.name == "baseline_commit" {
				list = append([]scenario{s}, list...)
			}
		}
	}
	return list
}

// smokeLimit bounds one scenario of a smoke run, which takes seconds. A
// scenario still running then is hung, and make test would otherwise sit
// until CI's own limit (it once did, for 82 minutes, on a worker that
// missed its SIGTERM).
const smokeLimit = 5 * time.Minute

// watchdog ends a hung smoke run: past smokeLimit it prints every
// goroutine's stack on stderr and exits 1. Worker processes die with it
// (workerAttr); the scenario's database is left behind. Full runs have no
// limit: their scenarios' lengths depend on the machine.
func watchdog(o options, name string) (stop func()) {
	if !o.smoke {
		return func() {}
	}
	t := time.AfterFunc(smokeLimit, func() {
		fmt.Fprintf(os.Stderr, "bench: %s still running after %s of a smoke run; its goroutines:\n", name, smokeLimit)
		_ = pprof.Lookup("goroutine").WriteTo(os.Stderr, 2)
		os.Exit(1)
	})
	return func() { t.Stop() }
}

// runner carries what scenarios share.
type runner struct {
	o      options
	env    env
	commit string
	date   string
	// baselines holds this run's baseline_commit figures (tx/s) by
	// connections, for the scenarios that print a ratio to them.
	baselines map[int]float64
}

// n scales an operation count: the full figure, or a tiny one in smoke mode.
func (r *runner) n(full, smoke int) int {
	if r.o.smoke {
		return smoke
	}
	return full
}

func (r *runner) print(name string, value float64, unit string, ops int) {
	b, _ := json.Marshal(result{Backend: r.o.backend, Scenario: name, Value: round(value), Unit: unit, Ops: ops,
		Durability: r.o.durability, Commit: r.commit, Date: r.date})
	fmt.Println(string(b))
}

func round(v float64) float64 {
	if v >= 100 {
		return float64(int64(v*10+0.5)) / 10
	}
	return float64(int64(v*1000+0.5)) / 1000
}

// progress prints a line on stderr at most every second.
type progress struct {
	what  string
	total int
	last  time.Time
}

func (p *progress) at(done int) {
	if time.Since(p.last) < time.Second {
		return
	}
	p.last = time.Now()
	fmt.Fprintf(os.Stderr, "    %s: %d/%d\n", p.what, done, p.total)
}

func gitCommit() string {
	out, err := exec.Command("git", "rev-parse", "--short", "HEAD").Output()
	if err != nil {
		return "unknown"
	}
	return strings.TrimSpace(string(out))
}
