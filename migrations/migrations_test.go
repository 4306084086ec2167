package migrations

import (
	"io/fs"
	"testing"

	"github.com/ductus/ductus/runtime/store"
)

// Every backend's files are numbered, headed and in step: the same versions
// exist for every backend, so a schema change is never made for one only.
func TestEveryBackendHasHeadedFilesInStep(t *testing.T) {
	for _, line := range []struct {
		name string
		open func(string) (fs.FS, error)
	}{{"runtime", For}, {"engine", Engine}} {
		t.Run(line.name, func(t *testing.T) { headedInStep(t, line.open) })
	}
	if _, err := For("oracle"); err == nil {
		t.Error("For(oracle) answered migrations")
	}
}

func headedInStep(t *testing.T, open func(string) (fs.FS, error)) {
	versions := map[string][]int{}
	for _, b := range []string{"sqlite", "postgres", "mysql"} {
		fsys, err := open(b)
		if err != nil {
			t.Fatal(err)
		}
		files, err := store.ReadMigrations(fsys)
		if err != nil {
			t.Fatalf("%s: %v", b, err)
		}
		if len(files) == 0 {
			t.Fatalf("%s has no migrations", b)
		}
		for _, f := range files {
			if f.Upgrade == "" || f.Heavy == "" {
				t.Errorf("%s/%s: empty header", b, f.Name)
			}
			versions[b] = append(versions[b], f.Version)
		}
	}
	for b, v := range versions {
		if len(v) != len(versions["sqlite"]) {
			t.Errorf("%s has versions %v, sqlite %v", b, v, versions["sqlite"])
		}
	}
}
