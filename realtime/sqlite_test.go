package realtime

import (
	"path/filepath"
	"testing"

	"github.com/ductus/ductus/runtime/store"
)

func openSQLite(t *testing.T) store.Backend {
	t.Helper()
	return dbSpec{Driver: "sqlite", DSN: filepath.Join(t.TempDir(), "rt.db")}.openT(t)
}
