package engine

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/ductus/ductus/runtime/host"
)

// TestRuntimeWorkersReachTheRuntime: ductus.yaml's runtime.workers is the
// number of activations the engine's runtime runs at once, as the process
// it registers says.
func TestRuntimeWorkersReachTheRuntime(t *testing.T) {
	proj := project(t, map[string]string{
		"ductus.yaml":                  "runtime: { workers: 3 }\nscript: { isolates: 1 }\napi: { listen: off }\n",
		"interfaces/in/interface.yaml": "format: text\nsource: { type: file, path: inbox, poll: 20ms }\ndestinations:\n  out: { type: file, path: out }\n",
		"interfaces/in/transform.js":   "function transform(m) { return m; }\n",
	})
	e := running(t, proj, testBackend(t))
	procs, err := e.Host().Processes(context.Background(), host.ProcessQuery{Running: true})
	if err != nil {
		t.Fatal(err)
	}
	if len(procs) != 1 {
		t.Fatalf("running processes = %d, want 1", len(procs))
	}
	var meta struct{ Workers int }
	if err := json.Unmarshal(procs[0].Metadata, &meta); err != nil {
		t.Fatal(err)
	}
	if meta.Workers != 3 {
		t.Errorf("the runtime runs %d workers, want 3 (metadata %s)", meta.Workers, procs[0].Metadata)
	}
}
