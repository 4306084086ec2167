package mysql

import (
	"testing"

	"github.com/ductus/ductus/integration/ixstore/ixstoretest"
)

// TestEngineAccessStore runs the engine store's tokens and audit log
// suite on a fresh database.
func TestEngineAccessStore(t *testing.T) {
	ixstoretest.Run(t, ixstoretest.Migrate(t, openBackend(t, Config{})))
}
