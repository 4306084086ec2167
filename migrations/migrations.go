// Package migrations embeds the schema of every backend. Each backend has
// its own folder of numbered SQL files (0001_name.sql, ...), applied in order
// by store.Migrate at open.
//
// Migrations are expand-only: a file may add tables, columns and indexes but
// never drop or rename what an older binary still reads, so rolling back is
// reinstalling the previous binary (which ignores newer files it does not
// know). Every file opens with a header of two comment lines:
//
//	-- Upgrade: what the file does
//	-- Heavy: each existing table it rewrites or scans, or "none"
//
// A file that is applied never changes; fix mistakes with a new file.
package migrations

import (
	"embed"
	"io/fs"
)

//go:embed sqlite/*.sql postgres/*.sql mysql/*.sql
var files embed.FS

// For returns the migration files of a backend ("sqlite", "postgres",
// "mysql") as a file system whose root holds the numbered files.
func For(backend string) (fs.FS, error) {
	return fs.Sub(files, backend)
}
