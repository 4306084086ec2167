package sqlite_test

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/ductus/ductus/adapters/sqlite"
	"github.com/ductus/ductus/runtime/store"
	"github.com/ductus/ductus/runtime/store/storetest"
)

func open(t *testing.T) store.Backend {
	b, err := sqlite.Open(context.Background(), sqlite.Config{Path: filepath.Join(t.TempDir(), "test.db")})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Close() })
	return b
}

func TestConformance(t *testing.T) { storetest.Run(t, open) }
