package store

import (
	"context"
	"fmt"
	"io/fs"
	"regexp"
	"sort"
	"strconv"
	"strings"
)

// MigrationFile is one numbered schema file.
type MigrationFile struct {
	Version int
	Name    string // the file name
	SQL     string
	Upgrade string // the header's "-- Upgrade:" text
	Heavy   string // the header's "-- Heavy:" text
}

var migrationName = regexp.MustCompile(`^(\d{4})_[a-z0-9_]+\.sql$`)

// ReadMigrations lists the migration files of fsys in version order,
// refusing a file without its header or with a bad name.
func ReadMigrations(fsys fs.FS) ([]MigrationFile, error) {
	entries, err := fs.ReadDir(fsys, ".")
	if err != nil {
		return nil, fmt.Errorf("migrations: %w", err)
	}
	var out []MigrationFile
	seen := map[int]string{}
	for _, e := range entries {
		if e.IsDir() || !strings.HasSuffix(e.Name(), ".sql") {
			continue
		}
		m := migrationName.FindStringSubmatch(e.Name())
		if m == nil {
			return nil, fmt.Errorf("migrations: %s: the name must be NNNN_lower_case.sql", e.Name())
		}
		v, _ := strconv.Atoi(m[1])
		if prev, dup := seen[v]; dup {
			return nil, fmt.Errorf("migrations: %s and %s share version %d", prev, e.Name(), v)
		}
		seen[v] = e.Name()
		b, err := fs.ReadFile(fsys, e.Name())
		if err != nil {
			return nil, fmt.Errorf("migrations: %w", err)
		}
		f := MigrationFile{Version: v, Name: e.Name(), SQL: string(b)}
		lines := strings.SplitN(f.SQL, "\n", 3)
		if len(lines) < 3 || !strings.HasPrefix(lines[0], "-- Upgrade: ") || !strings.HasPrefix(lines[1], "-- Heavy: ") {
			return nil, fmt.Errorf("migrations: %s must open with the lines \"-- Upgrade: ...\" and \"-- Heavy: ...\"", e.Name())
		}
		f.Upgrade = strings.TrimPrefix(lines[0], "-- Upgrade: ")
		f.Heavy = strings.TrimPrefix(lines[1], "-- Heavy: ")
		out = append(out, f)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Version < out[j].Version })
	return out, nil
}

// Migrator is what an adapter provides to apply its schema.
type Migrator interface {
	// MigrationsApplied returns the versions already applied (creating
	// the bookkeeping table if needed).
	MigrationsApplied(ctx context.Context) (map[int]bool, error)
	// MigrationApply runs one file and records it, atomically where the
	// database allows DDL in a transaction.
	MigrationApply(ctx context.Context, f MigrationFile) error
}

// Migrate applies every file of fsys not yet applied, in order. Versions
// applied by a newer binary that this one does not know are left alone:
// migrations are expand-only, so an older binary keeps working.
func Migrate(ctx context.Context, m Migrator, fsys fs.FS) error {
	files, err := ReadMigrations(fsys)
	if err != nil {
		return err
	}
	applied, err := m.MigrationsApplied(ctx)
	if err != nil {
		return err
	}
	for _, f := range files {
		if applied[f.Version] {
			continue
		}
		if err := m.MigrationApply(ctx, f); err != nil {
			return fmt.Errorf("migration %s: %w", f.Name, err)
		}
	}
	return nil
}

// SplitStatements splits a migration file into statements at semicolons
// that end a line, for drivers that run one statement per call. Migration
// files keep to that layout (no semicolon at a line end inside a
// statement), except between a line "-- +ductus StatementBegin" and a line
// "-- +ductus StatementEnd": that block is one statement whatever it holds
// (a stored procedure's body is statements ending in semicolons).
func SplitStatements(sql string) []string {
	var out []string
	var cur strings.Builder
	block := false
	for _, line := range strings.Split(sql, "\n") {
		trimmed := strings.TrimSpace(line)
		switch {
		case trimmed == StatementBegin:
			block = true
			continue
		case trimmed == StatementEnd:
			block = false
			if s := strings.TrimSuffix(strings.TrimSpace(cur.String()), ";"); s != "" {
				out = append(out, s)
			}
			cur.Reset()
			continue
		case block:
			cur.WriteString(line)
			cur.WriteByte('\n')
			continue
		}
		if (trimmed == "" || strings.HasPrefix(trimmed, "--")) && strings.TrimSpace(cur.String()) == "" {
			cur.Reset() // comments and blank lines between statements are not sent
			continue
		}
		cur.WriteString(line)
		cur.WriteByte('\n')
		if strings.HasSuffix(trimmed, ";") {
			if s := strings.TrimSpace(cur.String()); s != ";" {
				out = append(out, s)
			}
			cur.Reset()
		}
	}
	if s := strings.TrimSpace(cur.String()); s != "" {
		out = append(out, s)
	}
	return out
}

// The lines that open and close a block SplitStatements keeps whole.
const (
	StatementBegin = "-- +ductus StatementBegin"
	StatementEnd   = "-- +ductus StatementEnd"
)
