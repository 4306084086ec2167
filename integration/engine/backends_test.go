package engine

import (
	"testing"

	"github.com/ductus/ductus/integration/ixstore"
	"github.com/ductus/ductus/internal/testutil/backendtest"
)

// The engine's end-to-end tests run on every backend this machine has:
// SQLite always, PostgreSQL and MySQL/MariaDB when reachable
// (DUCTUS_TEST_POSTGRES, DUCTUS_TEST_MYSQL, else the local servers; "off"
// skips one). With CI=true an unreachable server fails.

// forEachBackend runs fn on a fresh database of each backend.
func forEachBackend(t *testing.T, fn func(t *testing.T, be ixstore.Backend)) {
	backendtest.ForEach(t, func(t *testing.T, spec backendtest.Spec) { fn(t, spec.OpenT(t)) })
}
