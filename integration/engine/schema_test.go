package engine

import (
	"context"
	"testing"
	"time"

	"github.com/ductus/ductus/integration/ixstore"
	"github.com/ductus/ductus/integration/msgstore"
	"github.com/ductus/ductus/migrations"
	"github.com/ductus/ductus/runtime/store"
)

// engineTables are the tables of the engine's migration line.
var engineTables = []string{"ductus_ix_messages", "ductus_ix_deliveries", "ductus_ix_dedupe", "ductus_ix_source_state",
	"ductus_ix_tokens", "ductus_ix_audit", "ductus_ix_dismissals", "ductus_ix_pauses", "ductus_ix_users", "ductus_ix_sessions",
	"ductus_ix_schema_migrations"}

// The engine's tables are the engine's: the runtime's Open creates none of
// them (a runtime-only user such as examples/counter gets only the
// runtime's), and the engine's migration creates every one.
func TestRuntimeOpenCreatesNoEngineTable(t *testing.T) {
	forEachBackend(t, func(t *testing.T, be ixstore.Backend) {
		ctx := context.Background()
		if _, err := be.TableCount(ctx, "ductus_actors"); err != nil {
			t.Fatalf("the runtime's tables: %v", err)
		}
		for _, table := range engineTables {
			if n, err := be.TableCount(ctx, table); err == nil {
				t.Errorf("a runtime-only database has %s (%d rows)", table, n)
			}
		}
		if err := be.EngineStore().SchemaMigrate(ctx); err != nil {
			t.Fatal(err)
		}
		for _, table := range engineTables {
			if _, err := be.TableCount(ctx, table); err != nil {
				t.Errorf("after the engine's migration: %v", err)
			}
		}
	})
}

// A database migrated before the engine had its own line has the engine's
// tables (created by the runtime line's version 2) and no record of the
// engine's line. The engine opens it: its first migration recognises the
// tables, records itself, and the rows already there stay readable.
func TestEngineMigratesOldLayout(t *testing.T) {
	forEachBackend(t, func(t *testing.T, be ixstore.Backend) {
		ctx := context.Background()
		ix := be.EngineStore()
		if err := ix.SchemaMigrate(ctx); err != nil {
			t.Fatal(err)
		}
		ms := msgstore.New(be)
		at := time.UnixMicro(time.Now().UnixMicro())
		old := msgstore.Message{ID: "0190a0a0-0000-7000-8000-000000000001", Interface: "adt", ReceivedAt: at, Status: msgstore.StatusPending,
			Key: "k1", Payload: []byte("MSH|old"), ACK: []byte("MSA|AA"), Meta: map[string]any{"file": "a.hl7"}}
		tx, err := be.Begin(ctx, store.TxOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if err := ms.Insert(ctx, tx, []msgstore.Message{old}, nil); err != nil {
			t.Fatal(err)
		}
		if err := tx.Commit(ctx); err != nil {
			t.Fatal(err)
		}
		// The old layout: the tables without the engine line's record.
		x, ok := be.(execer)
		if !ok {
			t.Fatalf("backend %s runs no statements of a test's own", be.Name())
		}
		if _, err := x.Exec(ctx, "DROP TABLE ductus_ix_schema_migrations"); err != nil {
			t.Fatal(err)
		}
		if err := ix.SchemaMigrate(ctx); err != nil {
			t.Fatalf("the engine's migration on the old layout: %v", err)
		}
		// Every file of the line is recorded again (the later ones' tables,
		// left in place here, are created only if missing).
		fsys, err := migrations.Engine("sqlite") // every backend's line has the same versions
		if err != nil {
			t.Fatal(err)
		}
		files, err := store.ReadMigrations(fsys)
		if err != nil {
			t.Fatal(err)
		}
		if n, err := be.TableCount(ctx, "ductus_ix_schema_migrations"); err != nil || n != int64(len(files)) {
			t.Fatalf("the engine line's record: %d rows, %v; want %d", n, err, len(files))
		}
		got, err := ms.Get(ctx, old.ID)
		if err != nil {
			t.Fatal(err)
		}
		if got.Interface != "adt" || got.Key != "k1" || string(got.Payload) != "MSH|old" || string(got.ACK) != "MSA|AA" ||
			!got.ReceivedAt.Equal(at) || got.Meta["file"] != "a.hl7" || got.Lane != 0 || got.DedupeKey != "" {
			t.Fatalf("the message read back = %+v", got)
		}
		// Migrating again changes nothing.
		if err := ix.SchemaMigrate(ctx); err != nil {
			t.Fatal(err)
		}
		if n, _ := be.TableCount(ctx, "ductus_ix_messages"); n != 1 {
			t.Fatalf("%d messages after migrating again, want 1", n)
		}
	})
}

// The seam refuses what it cannot do with a clear error before writing
// anything.
func TestEngineStoreRefusesBadInput(t *testing.T) {
	forEachBackend(t, func(t *testing.T, be ixstore.Backend) {
		ctx := context.Background()
		ix := be.EngineStore()
		if err := ix.SchemaMigrate(ctx); err != nil {
			t.Fatal(err)
		}
		cases := map[string]func() error{
			"insert without a transaction": func() error {
				return ix.MessageInsert(ctx, nil, &ixstore.MessageInsertParams{Messages: []ixstore.Message{{ID: "x"}}})
			},
			"claim without a transaction": func() error {
				_, err := ix.DedupeClaim(ctx, nil, &ixstore.DedupeClaimParams{Interface: "a", Keys: map[string]string{"k": "x"}})
				return err
			},
			"list with limit 0": func() error {
				_, err := ix.MessageList(ctx, &ixstore.MessageListParams{Interface: "a"})
				return err
			},
			"prune with limit 0": func() error {
				_, err := ix.DedupePrune(ctx, &ixstore.DedupePruneParams{Interface: "a", Before: time.Now()})
				return err
			},
			"count a table not the backend's": func() error {
				_, err := be.TableCount(ctx, "pg_class; DROP TABLE ductus_actors")
				return err
			},
		}
		for name, call := range cases {
			if err := call(); err == nil {
				t.Errorf("%s: no error", name)
			}
		}
		if n, err := be.TableCount(ctx, "ductus_ix_messages"); err != nil || n != 0 {
			t.Fatalf("messages after refused calls: %d, %v", n, err)
		}
	})
}
