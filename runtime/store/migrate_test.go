package store

import (
	"reflect"
	"testing"
)

func TestSplitStatements(t *testing.T) {
	tests := []struct {
		name string
		sql  string
		want []string
	}{
		{"comments and statements", "-- Upgrade: x\n-- Heavy: none\n\nCREATE TABLE a (x INT);\nCREATE TABLE b (\n    y INT\n);\n",
			[]string{"CREATE TABLE a (x INT);", "CREATE TABLE b (\n    y INT\n);"}},
		{"only comments", "-- Upgrade: nothing\n-- Heavy: none\n\n-- Deliberately empty.\n", nil},
		{"a block is one statement", "CREATE TABLE a (x INT);\n" + StatementBegin + "\nCREATE PROCEDURE p()\nBEGIN\n    SELECT 1;\n    SELECT 2;\nEND;\n" + StatementEnd + "\nCREATE TABLE b (y INT);\n",
			[]string{"CREATE TABLE a (x INT);", "CREATE PROCEDURE p()\nBEGIN\n    SELECT 1;\n    SELECT 2;\nEND", "CREATE TABLE b (y INT);"}},
		{"comments inside a block are kept", StatementBegin + "\nCREATE PROCEDURE p()\n-- why\nBEGIN SELECT 1; END\n" + StatementEnd + "\n",
			[]string{"CREATE PROCEDURE p()\n-- why\nBEGIN SELECT 1; END"}},
		{"an unterminated last statement", "SELECT 1", []string{"SELECT 1"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := SplitStatements(tt.sql); !reflect.DeepEqual(got, tt.want) {
				t.Errorf("SplitStatements() = %q, want %q", got, tt.want)
			}
		})
	}
}
