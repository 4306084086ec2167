// Package e2e runs the browser end-to-end tests (e2e/realtime/*.mjs) from
// go test: it builds the example server and runs the node script, which
// drives Debian's chromium with playwright-core (installed by make browser).
package e2e

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"
)

// skip explains why the browser tests cannot run here; with CI=true that
// fails the run instead.
func skip(t *testing.T, why string) {
	t.Helper()
	if os.Getenv("CI") == "true" {
		t.Fatalf("browser tests cannot run: %s (run make browser); CI requires them", why)
	}
	t.Skipf("browser tests skipped: %s (run make browser to install chromium and playwright-core)", why)
}

func TestCartInBrowser(t *testing.T) {
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat("/usr/bin/chromium"); err != nil {
		skip(t, "/usr/bin/chromium is missing")
	}
	node, err := exec.LookPath("node")
	if err != nil {
		skip(t, "node is not installed")
	}
	if _, err := os.Stat(filepath.Join(root, "e2e", "node_modules", "playwright-core")); err != nil {
		skip(t, "e2e/node_modules has no playwright-core")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	bin := filepath.Join(t.TempDir(), "cart")
	build := exec.CommandContext(ctx, "go", "build", "-o", bin, "./examples/cart")
	build.Dir = root
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("building examples/cart: %v\n%s", err, out)
	}
	cmd := exec.CommandContext(ctx, node, filepath.Join("e2e", "realtime", "cart.test.mjs"))
	cmd.Dir = root
	cmd.Env = append(os.Environ(), "CART_BIN="+bin)
	out, err := cmd.CombinedOutput()
	t.Logf("node e2e/realtime/cart.test.mjs:\n%s", out)
	if err != nil {
		t.Fatalf("browser tests failed: %v", err)
	}
}
