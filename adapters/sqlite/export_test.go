package sqlite

import "github.com/uptrace/bun"

// ReadSideDB is the read side's bun handle, for the plan tests (package
// sqlite_test) that render its queries.
func ReadSideDB(b *Backend) *bun.DB { return b.readSide.DB() }
