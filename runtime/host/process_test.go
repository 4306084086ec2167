package host

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/ductus/ductus/internal/testutil"

	"github.com/ductus/ductus/actor"
	"github.com/ductus/ductus/runtime/store"
)

// TestProcessPruneOnStart leaves a stopped and a silent process row older
// than the retention: a starting host deletes both and keeps its own.
func TestProcessPruneOnStart(t *testing.T) {
	be := openSQLite(t)
	ctx := testutil.Context(t)
	for _, id := range []string{"stopped", "silent"} {
		if err := be.ProcessRegister(ctx, &store.ProcessInfo{ID: id, Kind: "test", Host: "gone", PID: 1, Version: "old"}); err != nil {
			t.Fatal(err)
		}
	}
	if err := be.ProcessStop(ctx, "stopped"); err != nil {
		t.Fatal(err)
	}
	const retention = time.Second
	time.Sleep(retention + 300*time.Millisecond)
	h := startHost(t, be, tallyRegistry(&testHooks{}), func(c *Config) { c.ProcessRetention = retention; c.Heartbeat = 100 * time.Millisecond })
	testutil.Eventually(t, 10*time.Second, "the stale rows to be pruned", func() bool {
		procs, err := be.ProcessList(ctx)
		if err != nil {
			t.Fatal(err)
		}
		return len(procs) == 1 && procs[0].ID == h.ID()
	})
}

// TestIDBytesConfigurable sets a small actor ID limit: every way an ID
// enters (Tell, Destroy, a send staged by a turn) refuses one byte more.
func TestIDBytesConfigurable(t *testing.T) {
	be := openSQLite(t)
	const limit = 8
	h := startHost(t, be, tallyRegistry(&testHooks{}), func(c *Config) { c.Limits = actor.Limits{IDBytes: limit} })
	ctx := testutil.Context(t)
	atLimit, over := strings.Repeat("i", limit), strings.Repeat("i", limit+1)
	overLimit := func(what string, err error) {
		t.Helper()
		var le *actor.LimitError
		if !errors.As(err, &le) || le.What != "actor ID" || le.Limit != limit {
			t.Errorf("%s: err = %v, want the %d-byte ID limit", what, err, limit)
		}
	}
	_, err := h.Tell(ctx, tref(over), "add", 1)
	overLimit("tell", err)
	_, err = h.Destroy(ctx, tref(over))
	overLimit("destroy", err)
	_, err = h.Ask(ctx, tref("sender"), "send", over) // dead-lettered: the cause survives
	overLimit("send from a turn", err)
	if _, err := h.Ask(ctx, tref(atLimit), "add", 1); err != nil {
		t.Fatalf("an ID at the limit: %v", err)
	}
	if _, err := h.Ask(ctx, tref("sender"), "send", atLimit); err != nil {
		t.Fatalf("a send to an ID at the limit: %v", err)
	}
}

// TestIDBytesOverSchema refuses an ID limit wider than every backend's
// schema stores, at New rather than at the first long ID.
func TestIDBytesOverSchema(t *testing.T) {
	_, err := New(Config{Backend: openSQLite(t), Registry: tallyRegistry(&testHooks{}), Limits: actor.Limits{IDBytes: actor.MaxIDBytes + 1}})
	if err == nil || !strings.Contains(err.Error(), "IDBytes") {
		t.Fatalf("New with IDBytes %d: err = %v, want the ID limit refused", actor.MaxIDBytes+1, err)
	}
}
