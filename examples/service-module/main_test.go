package main

import (
	"bytes"
	"context"
	"database/sql"
	"path/filepath"
	"strings"
	"testing"

	_ "modernc.org/sqlite"
)

// TestRun runs the service on a fresh SQLite file and checks what it
// printed and that the database holds the runtime's tables and none of
// the integration engine's (ductus_ix_*): a service gets the runtime only.
func TestRun(t *testing.T) {
	path := filepath.Join(t.TempDir(), "service.db")
	var out bytes.Buffer
	if err := run(context.Background(), "sqlite:"+path, &out); err != nil {
		t.Fatal(err)
	}
	// Deposits 1..40 round-robin over four accounts: ann gets 1, 5, ... 37.
	want := "ann 190\nbob 200\ncat 210\ndan 220\nledger 820, notifications 40\n"
	if out.String() != want {
		t.Fatalf("printed %q, want %q", out.String(), want)
	}
	db, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	rows, err := db.Query(`SELECT name FROM sqlite_master WHERE type = 'table' AND name LIKE 'ductus\_%' ESCAPE '\'`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var tables []string
	for rows.Next() {
		var n string
		if err := rows.Scan(&n); err != nil {
			t.Fatal(err)
		}
		tables = append(tables, n)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	all := strings.Join(tables, " ")
	if !strings.Contains(all, "ductus_actors") {
		t.Fatalf("no runtime tables found (%s): the check reads the wrong database", all)
	}
	for _, n := range tables {
		if strings.HasPrefix(n, "ductus_ix_") {
			t.Errorf("the runtime created the engine's table %s in a service's database", n)
		}
	}
}
