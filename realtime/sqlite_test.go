package realtime

import (
	"testing"

	"github.com/ductus/ductus/internal/testutil/backendtest"
	"github.com/ductus/ductus/runtime/store"
)

func openSQLite(t *testing.T) store.Backend {
	t.Helper()
	return backendtest.SQLite(t).OpenT(t)
}
