package deptest

import (
	"context"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

const mod = "github.com/ductus/ductus"

// engineSeam is the one integration/ package the adapters may import: the
// engine store seam's interface and row types, which each adapter
// implements beside its other SQL. It imports only actor and runtime/store,
// and the adapters rule below checks that through it.
const engineSeam = mod + "/integration/ixstore"

// engineOpensBackends is the integration/ package allowed to link the
// adapters: the engine opens the backend a project's database URL names.
// Everything else in integration/ reaches a backend only
// through store.Backend, handed over by cmd/ or a test.
const engineOpensBackends = mod + "/integration/engine"

// serviceTestHost is the runtime package allowed to link an adapter: test
// support for service authors (like River's rivertest), which runs a host
// on a temporary SQLite database. Nothing but tests may import it, which
// the testing rule below sees to (it imports "testing").
const serviceTestHost = mod + "/runtime/hosttest"

// The database drivers (for adapters/, the bench and internal/testdb) and
// the V8 binding (for integration/script alone).
var (
	drivers = []string{
		"github.com/jackc/pgx/v5/...",
		"github.com/go-sql-driver/mysql/...",
		"modernc.org/sqlite/...",
		"github.com/uptrace/bun/dialect/...",
		"github.com/uptrace/bun/driver/...",
	}
	v8 = "rogchap.com/v8go/..."
)

// ours turns module-relative patterns into import paths.
func ours(patterns ...string) []string {
	out := make([]string, len(patterns))
	for i, p := range patterns {
		out[i] = mod + "/" + p
	}
	return out
}

// testSupport reports whether a package exists to help tests and so may
// import "testing": named like net/http/httptest (storetest, scenariotest,
// crashtest, ...), or internal/testutil and below.
func testSupport(path string) bool {
	return strings.HasSuffix(path, "test") || matches(mod+"/internal/testutil/...", path)
}

// rules are the module's dependency rules: imports point one way, actor ←
// runtime ← adapters, with integration and realtime beside the adapters
// and cmd/ wiring them together (docs/architecture.md).
var rules = []rule{
	{
		name:   "actor imports nothing of ours",
		from:   ours("actor/..."),
		forbid: []string{mod + "/..."},
		allow:  ours("actor/..."),
	},
	{
		name:   "runtime imports no adapter, driver, integration, realtime or V8",
		from:   ours("runtime/..."),
		except: []string{serviceTestHost},
		forbid: slices.Concat(ours("adapters/...", "integration/...", "realtime/...", "cmd/...", "bench/...", "internal/testdb/..."),
			drivers, []string{v8}),
	},
	{
		name:   "runtime/hosttest links no adapter but SQLite's, and no integration (but the seam's types) or V8",
		from:   []string{serviceTestHost},
		forbid: slices.Concat(ours("adapters/...", "integration/...", "realtime/...", "internal/testdb/..."), drivers, []string{v8}),
		// bun's dialect core and its SQLite dialect come with the
		// adapter's read side (adapters/internal/readside).
		allow: slices.Concat(ours("adapters/sqlite/...", "adapters/internal/..."), []string{"modernc.org/sqlite/...", engineSeam,
			"github.com/uptrace/bun/dialect", "github.com/uptrace/bun/dialect/feature", "github.com/uptrace/bun/dialect/sqltype",
			"github.com/uptrace/bun/dialect/sqlitedialect"}),
		optional: true,
	},
	{
		name:   "only integration/script links V8",
		from:   []string{mod + "/..."},
		except: ours("integration/script"),
		forbid: []string{v8},
		direct: true,
	},
	{
		name:   "actor, runtime and adapters link no V8",
		from:   ours("actor/...", "runtime/...", "adapters/..."),
		forbid: []string{v8},
	},
	{
		name:   "no non-test package imports testing (test-support packages are named *test)",
		from:   []string{mod + "/..."},
		exempt: testSupport,
		forbid: []string{"testing"},
	},
	{
		name:   "adapters import no integration package but the engine seam's types",
		from:   ours("adapters/..."),
		forbid: ours("integration/...", "realtime/...", "cmd/...", "bench/..."),
		allow:  []string{engineSeam},
	},
	{
		name:   "the postgres adapter imports no other adapter",
		from:   ours("adapters/postgres/..."),
		forbid: ours("adapters/mysql/...", "adapters/sqlite/..."),
	},
	{
		name:   "the mysql adapter imports no other adapter",
		from:   ours("adapters/mysql/..."),
		forbid: ours("adapters/postgres/...", "adapters/sqlite/..."),
	},
	{
		name:   "the sqlite adapter imports no other adapter",
		from:   ours("adapters/sqlite/..."),
		forbid: ours("adapters/postgres/...", "adapters/mysql/..."),
	},
	{
		name:   "integration imports no adapter or driver (cmd/ and tests wire them)",
		from:   ours("integration/..."),
		except: []string{engineOpensBackends},
		forbid: slices.Concat(ours("adapters/...", "internal/testdb/..."), drivers),
	},
	{
		// The API reads the engine through its Engine interface, so the
		// API's tests build without V8 and the engine is one implementer.
		name:   "the operator API and its access rules import no engine, script or V8",
		from:   ours("integration/api/...", "integration/access/..."),
		forbid: slices.Concat(ours("integration/engine/...", "integration/script/..."), []string{v8}),
	},
	{
		name:     "realtime imports no adapter or driver (cmd/ and tests wire them)",
		from:     ours("realtime/..."),
		forbid:   slices.Concat(ours("adapters/...", "integration/...", "internal/testdb/..."), drivers),
		optional: true,
	},
	{
		name:   "only tests and the benchmark harness make throwaway databases",
		from:   []string{mod + "/..."},
		except: ours("internal/testdb/...", "bench"),
		exempt: testSupport,
		forbid: ours("internal/testdb/..."),
	},
}

// TestDependencies checks every rule against the module's import graph.
func TestDependencies(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	root := moduleRoot(t)
	statSources(t, root)
	g, err := loadGraph(ctx, root, "./...")
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := g[mod+"/actor"]; !ok {
		t.Fatalf("go list in %s did not list %s/actor: not the module's root?", root, mod)
	}
	for _, r := range rules {
		t.Run(r.name, func(t *testing.T) {
			for _, line := range r.check(g) {
				t.Error(line)
			}
		})
	}
}

// moduleRoot is the directory of the module's go.mod.
func moduleRoot(t *testing.T) string {
	t.Helper()
	out, err := exec.Command("go", "env", "GOMOD").Output()
	if err != nil {
		t.Fatalf("go env GOMOD: %v", err)
	}
	gomod := strings.TrimSpace(string(out))
	if gomod == "" || gomod == "/dev/null" {
		t.Fatal("go env GOMOD: not inside a module")
	}
	return filepath.Dir(gomod)
}

// statSources stats every Go file and directory of the module. The go
// command caches a test's result until a file or directory the test itself
// read changes; the graph comes from a `go list` child it cannot see, so
// without this a new import would leave the cached pass standing.
func statSources(t *testing.T, root string) {
	t.Helper()
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			switch name := d.Name(); {
			case path == root:
			case name == "testdata" || name == "node_modules" || strings.HasPrefix(name, "."):
				return filepath.SkipDir
			default:
				if _, err := os.Stat(filepath.Join(path, "go.mod")); err == nil {
					return filepath.SkipDir // another module (bench/peers/river)
				}
			}
			return nil
		}
		if strings.HasSuffix(path, ".go") || path == filepath.Join(root, "go.mod") {
			_, err = os.Stat(path)
		}
		return err
	})
	if err != nil {
		t.Fatalf("walk the module's sources: %v", err)
	}
}

// TestRuleReportsChains checks the checker on made-up graphs: a breach is
// reported with its import chain, an allowed or exempted one is not, and a
// rule that matches nothing says so.
func TestRuleReportsChains(t *testing.T) {
	g := graph{
		mod + "/actor":                   {"fmt"},
		mod + "/runtime/store":           {mod + "/actor"},
		mod + "/runtime/host":            {mod + "/runtime/store", mod + "/adapters/postgres"},
		mod + "/adapters/postgres":       {mod + "/runtime/store", engineSeam, "github.com/jackc/pgx/v5"},
		engineSeam:                       {mod + "/actor", mod + "/integration/hl7"},
		mod + "/integration/hl7":         {"strings"},
		mod + "/runtime/store/storetest": {"testing"},
		mod + "/internal/testutil":       {"testing"},
		mod + "/bench":                   {"testing"},
		"github.com/jackc/pgx/v5":        {"net"},
		"fmt":                            nil,
		"net":                            nil,
		"strings":                        nil,
		"testing":                        nil,
	}
	byName := map[string]rule{}
	for _, r := range rules {
		byName[r.name] = r
	}
	cases := []struct {
		rule string
		want []string
	}{
		{"actor imports nothing of ours", nil},
		{"runtime imports no adapter, driver, integration, realtime or V8", []string{
			"runtime imports no adapter, driver, integration, realtime or V8: " + mod + "/runtime/host → " + mod + "/adapters/postgres",
		}},
		{"adapters import no integration package but the engine seam's types", []string{
			"adapters import no integration package but the engine seam's types: " + mod + "/adapters/postgres → " + engineSeam + " → " + mod + "/integration/hl7",
		}},
		{"no non-test package imports testing (test-support packages are named *test)", []string{
			"no non-test package imports testing (test-support packages are named *test): " + mod + "/bench → testing",
		}},
		{"realtime imports no adapter or driver (cmd/ and tests wire them)", nil},
		{"the mysql adapter imports no other adapter", []string{
			"the mysql adapter imports no other adapter: the rule matches no package (from [" + mod + "/adapters/mysql/...]), so it could never fail",
		}},
	}
	for _, c := range cases {
		t.Run(c.rule, func(t *testing.T) {
			r, ok := byName[c.rule]
			if !ok {
				t.Fatalf("no rule named %q", c.rule)
			}
			if got := r.check(g); !slices.Equal(got, c.want) {
				t.Errorf("check =\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(c.want, "\n"))
			}
		})
	}
}
