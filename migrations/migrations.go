// Package migrations embeds the schema of every backend. Each backend has
// its own folder of numbered SQL files (0001_name.sql, ...), applied in order
// by store.Migrate at open.
//
// There are two lines per backend, each numbered and recorded on its own:
// the runtime's (<backend>/*.sql, recorded in ductus_schema_migrations,
// applied by the adapter's Open) and the integration engine's
// (<backend>/engine/*.sql, recorded in ductus_ix_schema_migrations, applied
// by the engine through ixstore.Store.SchemaMigrate). A runtime-only user
// gets the runtime's tables and nothing of the engine's.
//
// Migrations are expand-only: a file may add tables, columns and indexes but
// never drop or rename what an older binary still reads, so rolling back is
// reinstalling the previous binary (which ignores newer files it does not
// know). An index no query needs may go (0006 drops one and narrows two to
// the rows a lookup can find): an index changes a plan, never an answer,
// and a unique one keeps its rule wherever it still applies. Every file
// opens with a header of two comment lines:
//
//	-- Upgrade: what the file does
//	-- Heavy: each existing table it rewrites or scans, or "none"
//
// A file that is applied never changes; fix mistakes with a new file.
package migrations

import (
	"embed"
	"fmt"
	"io/fs"
)

//go:embed sqlite/*.sql postgres/*.sql mysql/*.sql sqlite/engine/*.sql postgres/engine/*.sql mysql/engine/*.sql
var files embed.FS

// For returns the runtime's migration files of a backend ("sqlite",
// "postgres", "mysql") as a file system whose root holds the numbered files.
func For(backend string) (fs.FS, error) {
	return sub(backend)
}

// Engine returns the integration engine's migration files of a backend, in
// the same form as For.
func Engine(backend string) (fs.FS, error) {
	return sub(backend + "/engine")
}

func sub(dir string) (fs.FS, error) {
	if _, err := fs.Stat(files, dir); err != nil {
		return nil, fmt.Errorf("migrations: no migrations for %q: %w", dir, err)
	}
	return fs.Sub(files, dir)
}
