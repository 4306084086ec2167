package config

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// baseFiles is a minimal valid project; cases change it.
var baseFiles = map[string]string{
	"ductus.yaml": "api:\n  listen: 127.0.0.1:7700\n",
	"interfaces/adt/interface.yaml": `source:
  type: mllp
  listen: 127.0.0.1:2575
destinations:
  emr:
    type: mllp
    host: emr.local
    port: 6661
`,
	"interfaces/adt/transform.js": "function transform(m) { return m; }\n",
}

// writeProject writes baseFiles with changes into a temporary folder. A
// change whose content is "<delete>" removes the file; "<dir>" makes a folder.
func writeProject(t *testing.T, changes map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	files := map[string]string{}
	for k, v := range baseFiles {
		files[k] = v
	}
	for k, v := range changes {
		files[k] = v
	}
	for name, content := range files {
		p := filepath.Join(dir, filepath.FromSlash(name))
		switch content {
		case "<delete>":
			continue
		case "<dir>":
			if err := os.MkdirAll(p, 0o755); err != nil {
				t.Fatal(err)
			}
			continue
		}
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// env is a fixed environment for tests.
func env(vars map[string]string) LoadOptions {
	return LoadOptions{LookupEnv: func(k string) (string, bool) {
		v, ok := vars[k]
		return v, ok
	}}
}

// want is an expected problem: file, line and field exactly, message by
// substring.
type want struct {
	file  string
	line  int
	field string
	msg   string
}

// loadProblems loads dir and returns its problems, failing the test if the
// load succeeds or fails in another way.
func loadProblems(t *testing.T, dir string, opts LoadOptions) []Problem {
	t.Helper()
	p, err := Load(dir, opts)
	if err == nil {
		t.Fatalf("Load succeeded, want problems; project has %d interfaces", len(p.Interfaces))
	}
	var ve *ValidationError
	if !errors.As(err, &ve) {
		t.Fatalf("Load error is %T (%v), want *ValidationError", err, err)
	}
	return ve.Problems
}

// matchProblems checks that got holds exactly the wanted problems.
func matchProblems(t *testing.T, got []Problem, wants []want) {
	t.Helper()
	used := make([]bool, len(got))
	for _, w := range wants {
		found := false
		for i, g := range got {
			if !used[i] && g.File == w.file && g.Line == w.line && g.Field == w.field && strings.Contains(g.Message, w.msg) {
				used[i], found = true, true
				break
			}
		}
		if !found {
			t.Errorf("missing problem %s:%d: %s: …%s…", w.file, w.line, w.field, w.msg)
		}
	}
	for i, g := range got {
		if !used[i] {
			t.Errorf("unexpected problem %s", g)
		}
	}
}
