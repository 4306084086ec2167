// Package deptest holds the module's dependency test (in the manner of
// Tailscale's tstest/deptest): the rules that keep imports pointing one way,
// actor ← runtime ← adapters, with integration, realtime and the V8 host
// each kept where docs/architecture.md puts them. The rules and their test
// are in deptest_test.go; this file loads the import graph and checks a
// rule against it, so the checker itself can be tested on a made-up graph.
package deptest

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os/exec"
	"slices"
	"strings"
)

// graph maps an import path to the packages it imports directly (non-test
// code only: a test may import what its package may not).
type graph map[string][]string

// loadGraph runs `go list -deps -json` on patterns in dir, the module's
// root, and returns the import graph of every package they build.
func loadGraph(ctx context.Context, dir string, patterns ...string) (graph, error) {
	args := append([]string{"list", "-deps", "-json=ImportPath,Imports,Error"}, patterns...)
	cmd := exec.CommandContext(ctx, "go", args...)
	cmd.Dir = dir
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("go list -deps: %w: %s", err, strings.TrimSpace(stderr.String()))
	}
	g := graph{}
	dec := json.NewDecoder(bytes.NewReader(out))
	for {
		var p struct {
			ImportPath string
			Imports    []string
			Error      *struct{ Err string }
		}
		if err := dec.Decode(&p); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			return nil, fmt.Errorf("decode go list output: %w", err)
		}
		if p.Error != nil {
			return nil, fmt.Errorf("go list: %s: %s", p.ImportPath, p.Error.Err)
		}
		g[p.ImportPath] = p.Imports
	}
	return g, nil
}

// matches reports whether path matches pattern: an exact import path, or
// "x/..." for x and everything below it (as the go command reads it).
func matches(pattern, path string) bool {
	if base, ok := strings.CutSuffix(pattern, "/..."); ok {
		return path == base || strings.HasPrefix(path, base+"/")
	}
	return path == pattern
}

func matchesAny(patterns []string, path string) bool {
	return slices.ContainsFunc(patterns, func(p string) bool { return matches(p, path) })
}

// rule is one constraint on the import graph: the packages matched by from
// (less except) must not depend on anything matched by forbid (less allow).
// Patterns are full import paths as matches reads them.
type rule struct {
	name   string   // what the rule keeps, said when it is broken
	from   []string // the packages it holds for
	except []string // packages among from that it does not hold for
	// exempt, when set, also takes packages out of from (a naming rule
	// rather than a list, e.g. test-support packages).
	exempt func(path string) bool
	forbid []string // what they must not depend on
	allow  []string // what, among forbid, they may depend on after all
	// direct limits the rule to direct imports; otherwise every package
	// reached through imports counts, which is what a binary links.
	direct bool
	// optional lets from match no package (a part not yet written);
	// otherwise a rule that holds for nothing is reported, since it could
	// never fail.
	optional bool
}

// applies reports whether r holds for package path.
func (r rule) applies(path string) bool {
	if !matchesAny(r.from, path) || matchesAny(r.except, path) {
		return false
	}
	return r.exempt == nil || !r.exempt(path)
}

func (r rule) forbids(path string) bool {
	return matchesAny(r.forbid, path) && !matchesAny(r.allow, path)
}

// check returns one line per breach of r in g, each naming the import
// chain from the offending package to what it must not depend on (the
// shortest one), sorted.
func (r rule) check(g graph) []string {
	var out []string
	applied := false
	for pkg := range g {
		if !r.applies(pkg) {
			continue
		}
		applied = true
		for _, chain := range r.breaches(g, pkg) {
			out = append(out, fmt.Sprintf("%s: %s", r.name, strings.Join(chain, " → ")))
		}
	}
	if !applied && !r.optional {
		out = append(out, fmt.Sprintf("%s: the rule matches no package (from %v), so it could never fail", r.name, r.from))
	}
	slices.Sort(out)
	return out
}

// breaches walks pkg's imports breadth-first and returns, for each
// forbidden package reached, the first (shortest) chain that reaches it.
// The walk stops at a forbidden package (what lies behind it adds nothing)
// and at another package the rule holds for, which answers for its own
// imports: each breach is reported once, where it is made.
func (r rule) breaches(g graph, pkg string) [][]string {
	parent := map[string]string{pkg: ""}
	queue := []string{pkg}
	var out [][]string
	for len(queue) > 0 {
		cur := queue[0]
		queue = queue[1:]
		if cur != pkg {
			if r.forbids(cur) {
				var chain []string
				for p := cur; p != ""; p = parent[p] {
					chain = append(chain, p)
				}
				slices.Reverse(chain)
				out = append(out, chain)
				continue
			}
			if r.direct || r.applies(cur) {
				continue
			}
		}
		for _, imp := range g[cur] {
			if _, seen := parent[imp]; !seen {
				parent[imp] = cur
				queue = append(queue, imp)
			}
		}
	}
	return out
}
