package storetest

import (
	"context"
	"fmt"
	"maps"
	"slices"

	"github.com/ductus/ductus/runtime/store"
)

// RuntimeTables are the tables the runtime writes. Table names are the
// same on every backend.
var RuntimeTables = []string{
	"ductus_actors", "ductus_messages", "ductus_ready", "ductus_claimed", "ductus_dead_letters",
	"ductus_effects", "ductus_outbox", "ductus_reminders", "ductus_broadcasts",
}

// RowCounts counts the rows of tables (RuntimeTables when none are
// named) with Backend.TableCount, read directly rather than through the
// runtime's own bookkeeping, so a test can prove that a refused call wrote
// nothing or that no message is left ready or claimed.
func RowCounts(ctx context.Context, be store.Backend, tables ...string) (map[string]int64, error) {
	if len(tables) == 0 {
		tables = RuntimeTables
	}
	out := make(map[string]int64, len(tables))
	for _, t := range tables {
		n, err := be.TableCount(ctx, t)
		if err != nil {
			return nil, fmt.Errorf("storetest: count %s: %w", t, err)
		}
		out[t] = n
	}
	return out, nil
}

// RowDiff describes how two RowCounts differ ("" when equal).
func RowDiff(before, after map[string]int64) string {
	var out string
	for _, t := range slices.Sorted(maps.Keys(after)) {
		if before[t] != after[t] {
			out += fmt.Sprintf(" %s %d -> %d;", t, before[t], after[t])
		}
	}
	return out
}
