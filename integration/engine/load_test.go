package engine

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ductus/ductus/internal/testutil"
)

// loadProject is n interfaces with an HTTP source and a file destination,
// and the transform each one's script gives (pass-through by default).
func loadProject(t *testing.T, n int, scripts map[int]string) map[string]string {
	t.Helper()
	files := map[string]string{"ductus.yaml": "script: { isolates: 2 }\napi: { listen: off }\n"}
	for i := 0; i < n; i++ {
		d := fmt.Sprintf("interfaces/i%02d/", i)
		files[d+"interface.yaml"] = fmt.Sprintf("format: text\nsource: { type: http, listen: %q, path: /in }\n"+
			"destinations:\n  out: { type: file, path: out/i%02d, name: \"{{.ID}}.txt\" }\n", testutil.FreePort(t), i)
		js, ok := scripts[i]
		if !ok {
			js = "function transform(msg) { return msg; }\n"
		}
		files[d+"transform.js"] = js
	}
	return files
}

// TestEveryInterfaceLoads: with the interfaces' scripts loading on two
// isolates at once, every one of them is loaded when New returns. (That
// the loads overlap is a start-up time, measured by the bench's
// start_1001_interfaces, not asserted here.)
func TestEveryInterfaceLoads(t *testing.T) {
	proj := project(t, loadProject(t, 12, nil))
	e := running(t, proj, testBackend(t))
	for _, in := range proj.Interfaces {
		if _, ok := e.scripts.Status(in.Name); !ok {
			t.Errorf("interface %s is not loaded", in.Name)
		}
	}
}

// TestEveryBrokenInterfaceIsReported: a start with several broken
// interfaces names each of them, in the project's order, not only the
// first one checked.
func TestEveryBrokenInterfaceIsReported(t *testing.T) {
	proj := project(t, loadProject(t, 8, map[int]string{
		2: "function transform(msg) { return msg;\n",                                           // a syntax error
		5: "throw new Error(\"no configuration\");\nfunction transform(msg) { return msg; }\n", // top-level code throws
	}))
	e, err := New(context.Background(), proj, Options{Backend: testBackend(t), Logger: testutil.Logger()})
	if err == nil {
		e.Close()
		t.Fatal("New started a project with two broken interfaces")
	}
	msg := err.Error()
	t.Log(msg)
	i2, i5 := strings.Index(msg, "i02"), strings.Index(msg, "i05")
	if i2 < 0 || i5 < 0 || i2 > i5 {
		t.Fatalf("error %q: want i02's and then i05's problem", msg)
	}
	for _, ok := range []string{"i00", "i01", "i03", "i04", "i06", "i07"} {
		if strings.Contains(msg, ok+"/") || strings.Contains(msg, "interface "+ok) {
			t.Errorf("error %q names %s, which is fine", msg, ok)
		}
	}
}

// TestStartReportsScriptsAndFolders: the scripts and the destinations'
// folders are prepared at once, and a start that fails in both reports
// both: a broken script and a folder that cannot be made (its parent is a
// file).
func TestStartReportsScriptsAndFolders(t *testing.T) {
	proj := project(t, loadProject(t, 6, map[int]string{2: "function transform(msg) { return msg;\n"}))
	blocker := filepath.Join(t.TempDir(), "a-file")
	if err := os.WriteFile(blocker, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	proj.Interfaces[4].Destinations[0].File.Path = filepath.Join(blocker, "out")
	e, err := New(context.Background(), proj, Options{Backend: testBackend(t), Logger: testutil.Logger()})
	if err == nil {
		e.Close()
		t.Fatal("New started a project with a broken script and a folder it cannot make")
	}
	msg := err.Error()
	if !strings.Contains(msg, "i02") || !strings.Contains(msg, "interface i04 destination out: the destination folder") {
		t.Fatalf("error %q: want i02's script and i04's folder", msg)
	}
}
