// Package console runs the web console's browser tests (console.test.mjs)
// from go test: it builds the ductus binary with the built console
// embedded, writes a small project (an MLLP feed to a file archive that
// saves its output and quarantines a marked message, to JSON and CSV
// files that save theirs, and to an MLLP EMR that is down at first),
// makes an admin and a viewer account, runs the engine and then the node
// script, which drives Debian's chromium with playwright-core and checks
// each page with axe-core (both installed by make browser).
package console

import (
	"bufio"
	"context"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ductus/ductus/integration/console"
	"github.com/ductus/ductus/internal/testutil"
)

// skip explains why the browser tests cannot run here; with CI=true that
// fails the run instead.
func skip(t *testing.T, why string) {
	t.Helper()
	if os.Getenv("CI") == "true" {
		t.Fatalf("console browser tests cannot run: %s; CI requires them", why)
	}
	t.Skipf("console browser tests skipped: %s", why)
}

const (
	adminName      = "ana"
	adminFirstPW   = "first-password-from-cli"
	adminNewPW     = "ana-chose-this-one"
	viewerName     = "vic"
	viewerPassword = "viewer-password-1"
)

func TestConsoleInBrowser(t *testing.T) {
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat("/usr/bin/chromium"); err != nil {
		skip(t, "/usr/bin/chromium is missing (run make browser)")
	}
	node, err := exec.LookPath("node")
	if err != nil {
		skip(t, "node is not installed")
	}
	for _, mod := range []string{"playwright-core", "axe-core"} {
		if _, err := os.Stat(filepath.Join(root, "e2e", "node_modules", mod)); err != nil {
			skip(t, "e2e/node_modules has no "+mod+" (run make browser)")
		}
	}
	if !console.Built() {
		skip(t, "the console is not built (run make console)")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 6*time.Minute)
	defer cancel()

	tmp := t.TempDir()
	bin := filepath.Join(tmp, "ductus")
	build := exec.CommandContext(ctx, "go", "build", "-o", bin, "./cmd/ductus")
	build.Dir = root
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("building cmd/ductus: %v\n%s", err, out)
	}

	apiAddr, mllpAddr, emrAddr := testutil.FreePort(t), testutil.FreePort(t), testutil.FreePort(t)
	emrHost, emrPort, _ := strings.Cut(emrAddr, ":")
	proj := filepath.Join(tmp, "project")
	write(t, proj, "ductus.yaml", fmt.Sprintf("partitions: 4\nscript: { isolates: 1 }\napi: { listen: %q }\nlog: { level: warn }\n", apiAddr))
	write(t, proj, "interfaces/adt/interface.yaml", fmt.Sprintf(`description: ADT over MLLP, archived as files and sent to the EMR.
format: hl7v2
source: { type: mllp, listen: %q }
ordering_key: PID-3.1
destinations:
  archive:
    type: file
    path: out/archive
    name: "{{.ID}}.hl7"
    save_output: true
    transform: toArchive
  events:
    type: file
    path: out/events
    name: "{{.ID}}.json"
    format: json
    save_output: true
    transform: toEvent
  census:
    type: file
    path: out/census
    name: "{{.ID}}.csv"
    format: csv
    save_output: true
    transform: toEvent
  emr:
    type: mllp
    host: %s
    port: %s
    ack_timeout: 1s
    # A connection a lane (the test's three messages have a lane each), so
    # their sends fail at once, and each connection's reconnect back-off
    # (doubling after each failed dial) stays short for when the EMR comes
    # back; two attempts 15 s apart: while the EMR is down each send holds
    # its lane for about 15 s, long enough for the browser to see the
    # blocked lanes (hotspots) and the oldest pending age, then it is
    # quarantined.
    connections: 3
    retry: { initial: 15s, max: 15s, max_attempts: 2 }
`, mllpAddr, emrHost, emrPort))
	write(t, proj, "interfaces/adt/transform.js", `// A message whose family name is QUARANTINE is held for an operator; the
// archive's copy names it in MSH-6 (the console shows the diff).
function toArchive(msg, meta) {
  if (msg.get("PID-5.1") === "QUARANTINE") quarantine("marked for quarantine");
  msg.set("MSH-6", "ARCHIVE");
  return msg;
}
function transform(msg, meta) { return msg; }
// The same event as JSON (events) and as a CSV row (census).
function toEvent(msg, meta) {
  return { mrn: msg.get("PID-3.1"), family: msg.get("PID-5.1"), given: msg.get("PID-5.2"), event: msg.get("MSH-9.2") };
}
`)

	pwFile := func(name, pw string) string {
		p := filepath.Join(tmp, name+".pw")
		if err := os.WriteFile(p, []byte(pw+"\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	run := func(args ...string) {
		t.Helper()
		cmd := exec.CommandContext(ctx, bin, args...)
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("ductus %s: %v\n%s", strings.Join(args, " "), err, out)
		}
	}
	run("user", "create", "-role", "admin", "-perm", "payloads,audit", "-password-file", pwFile(adminName, adminFirstPW), proj, adminName)
	run("user", "create", "-role", "viewer", "-must-change=false", "-password-file", pwFile(viewerName, viewerPassword), proj, viewerName)

	engine := exec.CommandContext(ctx, bin, "run", proj)
	logPath := filepath.Join(tmp, "engine.log")
	logf, err := os.Create(logPath)
	if err != nil {
		t.Fatal(err)
	}
	defer logf.Close()
	engine.Stdout, engine.Stderr = logf, logf
	if err := engine.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() {
		_ = engine.Process.Signal(os.Interrupt)
		done := make(chan struct{})
		go func() { _ = engine.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(15 * time.Second):
			_ = engine.Process.Kill()
			<-done
		}
		if t.Failed() {
			if b, err := os.ReadFile(logPath); err == nil {
				t.Logf("engine log:\n%s", tail(string(b), 60))
			}
		}
	}()
	base := "http://" + apiAddr
	waitHealthy(t, ctx, base)

	shots := filepath.Join(root, "e2e", "console", "screenshots")
	if err := os.MkdirAll(shots, 0o755); err != nil {
		t.Fatal(err)
	}
	cmd := exec.CommandContext(ctx, node, filepath.Join("e2e", "console", "console.test.mjs"))
	cmd.Dir = root
	cmd.Env = append(os.Environ(),
		"DUCTUS_URL="+base,
		"MLLP_ADDR="+mllpAddr,
		"EMR_ADDR="+emrAddr,
		"ADMIN_NAME="+adminName, "ADMIN_FIRST_PW="+adminFirstPW, "ADMIN_NEW_PW="+adminNewPW,
		"VIEWER_NAME="+viewerName, "VIEWER_PW="+viewerPassword,
		"SCREENSHOTS="+shots,
	)
	// The README's screenshots are refreshed only when asked
	// (DUCTUS_DOCS_SCREENSHOTS=1), so a test run leaves the tree clean.
	if os.Getenv("DUCTUS_DOCS_SCREENSHOTS") == "1" {
		cmd.Env = append(cmd.Env, "DOCS_SCREENSHOTS="+filepath.Join(root, "docs", "console"))
	}
	out, err := cmd.CombinedOutput()
	t.Logf("node e2e/console/console.test.mjs:\n%s", out)
	if err != nil {
		t.Fatalf("console browser tests failed: %v", err)
	}
}

func write(t *testing.T, dir, name, content string) {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

// waitHealthy waits for GET /api/v1/health to answer 200.
func waitHealthy(t *testing.T, ctx context.Context, base string) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		req, _ := http.NewRequestWithContext(ctx, "GET", base+"/api/v1/health", nil)
		if res, err := http.DefaultClient.Do(req); err == nil {
			res.Body.Close()
			if res.StatusCode == http.StatusOK {
				return
			}
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Fatalf("the engine's API at %s did not answer within 30 s", base)
}

// tail is the last n lines of s.
func tail(s string, n int) string {
	var lines []string
	sc := bufio.NewScanner(strings.NewReader(s))
	for sc.Scan() {
		lines = append(lines, sc.Text())
	}
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}
