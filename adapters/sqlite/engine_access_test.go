package sqlite_test

import (
	"testing"

	"github.com/ductus/ductus/adapters/sqlite"
	"github.com/ductus/ductus/integration/ixstore/ixstoretest"
)

// TestEngineAccessStore runs the engine store's tokens and audit log
// suite on a fresh database file.
func TestEngineAccessStore(t *testing.T) {
	ixstoretest.Run(t, ixstoretest.Migrate(t, open(t).(*sqlite.Backend)))
}
