package main

import (
	"context"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ductus/ductus/internal/testutil"
)

// pprofProject writes a one-interface project (MLLP in at the address it
// returns, a file out) on embedded SQLite.
func pprofProject(t *testing.T) (dir, mllp string) {
	dir, mllp = t.TempDir(), testutil.FreePort(t)
	files := map[string]string{
		"ductus.yaml": "script: { isolates: 1 }\napi: { listen: off }\n",
		"interfaces/adt/interface.yaml": "source: { type: mllp, listen: \"" + mllp + "\" }\n" +
			"destinations:\n  out: { type: file, path: out }\n",
		"interfaces/adt/transform.js": "function transform(msg) { return msg; }\n",
	}
	for name, body := range files {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir, mllp
}

func get(url string) (int, string, error) {
	res, err := http.Get(url)
	if err != nil {
		return 0, "", err
	}
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	return res.StatusCode, string(b), err
}

// TestRunServesPprofOnItsOwnListener: `ductus run --pprof ADDR` serves the
// profiles at ADDR/debug/pprof/ and nothing else there (its own mux, not
// the default one with whatever else a library registered on it).
func TestRunServesPprofOnItsOwnListener(t *testing.T) {
	dir, mllp := pprofProject(t)
	addr := testutil.FreePort(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var stdout, stderr testutil.SyncBuffer
	done := make(chan int, 1)
	go func() { done <- run(ctx, []string{"run", "--pprof", addr, dir}, &stdout, &stderr) }()
	defer func() {
		cancel()
		if code := <-done; code != 0 {
			t.Errorf("ductus run exited %d\n%s", code, stderr.String())
		}
	}()
	// The engine's own listener up means the start is over (stopping
	// earlier would fail the run with the cancelled database open).
	testutil.Eventually(t, 60*time.Second, "the engine to listen on "+mllp, func() bool {
		select {
		case code := <-done:
			done <- code
			t.Fatalf("ductus run exited %d\n%s", code, stderr.String())
		default:
		}
		c, err := net.Dial("tcp", mllp)
		if err == nil {
			c.Close()
		}
		return err == nil
	})
	if code, body, err := get("http://" + addr + "/debug/pprof/"); err != nil || code != http.StatusOK || !strings.Contains(body, "goroutine") {
		t.Fatalf("pprof index: %d %v\n%.200s", code, err, body)
	}
	if code, body, err := get("http://" + addr + "/debug/pprof/goroutine?debug=1"); err != nil || code != http.StatusOK || !strings.Contains(body, "goroutine profile:") {
		t.Fatalf("goroutine profile: %d %v\n%.200s", code, err, body)
	}
	if code, _, err := get("http://" + addr + "/debug/vars"); err != nil || code != http.StatusNotFound {
		t.Fatalf("/debug/vars on the pprof listener: %d %v; want 404 (only pprof is served there)", code, err)
	}
	if !strings.Contains(stderr.String(), "pprof listening") {
		t.Fatalf("no log line for the pprof listener:\n%s", stderr.String())
	}
}

// TestRunPprofBadAddress: a --pprof address that cannot be bound fails
// the start, before the engine opens anything.
func TestRunPprofBadAddress(t *testing.T) {
	dir, _ := pprofProject(t)
	var stdout, stderr testutil.SyncBuffer
	code := run(context.Background(), []string{"run", "--pprof", "127.0.0.1:notaport", dir}, &stdout, &stderr)
	if code != 1 || !strings.Contains(stderr.String(), "--pprof") {
		t.Fatalf("ductus run --pprof 127.0.0.1:notaport = %d, stderr %q; want 1 and a --pprof error", code, stderr.String())
	}
	if _, err := os.Stat(filepath.Join(dir, ".ductus")); err == nil {
		t.Fatal("the database was created although the start failed")
	}
}
