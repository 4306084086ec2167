package host

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/ductus/ductus/actor"
	"github.com/ductus/ductus/internal/testutil"
)

// TestOperatorCallsRefuseBadQueries: every operator query answers bad
// input with a typed error naming the field, before reading anything.
func TestOperatorCallsRefuseBadQueries(t *testing.T) {
	reg := actor.NewRegistry()
	reg.MustRegister(tallyDef(&testHooks{}))
	h := startHost(t, openSQLite(t), reg)
	ctx := testutil.Context(t)
	cases := []struct {
		name string
		call func(context.Context) error
		want error
		text string
	}{
		{"effects without a state", func(c context.Context) error { _, err := h.Effects(c, EffectQuery{}); return err }, actor.ErrInvalidArguments, "EffectQuery.State"},
		{"effects of an unknown state", func(c context.Context) error { _, err := h.Effects(c, EffectQuery{State: "lost"}); return err }, actor.ErrInvalidArguments, `"lost"`},
		{"effects of an ID without a type", func(c context.Context) error {
			_, err := h.Effects(c, EffectQuery{State: EffectDead, ID: "x"})
			return err
		}, actor.ErrInvalidArguments, "EffectQuery.ID"},
		{"effects with a negative limit", func(c context.Context) error {
			_, err := h.Effects(c, EffectQuery{State: EffectDead, Limit: -1})
			return err
		}, actor.ErrInvalidArguments, "EffectQuery.Limit"},
		{"backlog of an ID without a type", func(c context.Context) error { _, err := h.Backlog(c, BacklogQuery{ID: "x"}); return err }, actor.ErrInvalidArguments, "BacklogQuery.ID"},
		{"backlog by actor without a type", func(c context.Context) error { _, err := h.BacklogByActor(c, ""); return err }, actor.ErrInvalidArguments, "BacklogByActor"},
		{"dead letters with a negative limit", func(c context.Context) error {
			_, err := h.DeadLetters(c, DeadLetterQuery{Limit: -5})
			return err
		}, actor.ErrInvalidArguments, "DeadLetterQuery.Limit"},
		{"actors of an unknown type", func(c context.Context) error { _, err := h.Actors(c, ActorQuery{Type: "nope"}); return err }, actor.ErrUnknownType, "nope"},
		{"actors with a negative limit", func(c context.Context) error {
			_, err := h.Actors(c, ActorQuery{Type: tallyType, Limit: -1})
			return err
		}, actor.ErrInvalidArguments, "ActorQuery.Limit"},
		{"reminders without a ref", func(c context.Context) error { _, err := h.Reminders(c, ReminderQuery{}); return err }, actor.ErrInvalidArguments, "ReminderQuery.Ref"},
		{"preview of an unknown message", func(c context.Context) error {
			_, err := h.Preview(c, actor.Ref{Type: tallyType, ID: "a"}, "nope", nil)
			return err
		}, actor.ErrUnknownMessage, "nope"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			err := c.call(ctx)
			if !errors.Is(err, c.want) || !strings.Contains(err.Error(), c.text) {
				t.Fatalf("got %v, want %v naming %s", err, c.want, c.text)
			}
		})
	}
}

// TestBacklogFollowsWork: a paused actor's messages show in
// Backlog at every scope and in the actor row, and are gone once run.
func TestBacklogFollowsWork(t *testing.T) {
	reg := actor.NewRegistry()
	reg.MustRegister(tallyDef(&testHooks{}))
	h := startHost(t, openSQLite(t), reg)
	ctx := testutil.Context(t)
	a := actor.Ref{Type: tallyType, ID: "a"}
	if _, err := h.Ask(ctx, a, "add", 1); err != nil {
		t.Fatal(err)
	}
	if _, err := h.Pause(ctx, a); err != nil {
		t.Fatal(err)
	}
	for range 3 {
		if _, err := h.Tell(ctx, a, "add", 1); err != nil {
			t.Fatal(err)
		}
	}
	for _, q := range []BacklogQuery{{}, {Type: tallyType}, {Type: tallyType, ID: "a"}} {
		n, err := h.Backlog(ctx, q)
		if err != nil || n.Messages != 3 || n.Idle() {
			t.Fatalf("backlog of %+v = %+v, %v; want 3 messages", q, n, err)
		}
	}
	rows, err := h.BacklogByActor(ctx, tallyType)
	if err != nil || len(rows) != 1 || rows[0].Oldest.IsZero() || rows[0].Oldest.After(time.Now()) {
		t.Fatalf("backlog by actor = %+v, %v; want a's 3 messages, the first told before now", rows, err)
	}
	if rows[0].Oldest = (time.Time{}); rows[0] != (ActorBacklog{ID: "a", Messages: 3}) {
		t.Fatalf("backlog by actor = %+v; want a's 3 messages", rows)
	}
	if n, err := h.Backlog(ctx, BacklogQuery{Type: tallyType, ID: "b"}); err != nil || !n.Idle() {
		t.Fatalf("another actor's backlog = %+v, %v", n, err)
	}
	info, err := h.Actor(ctx, a)
	if err != nil || info.Unfinished != 3 || !info.Paused || string(info.State) != `{"n":1}` {
		t.Fatalf("actor = %+v, %v", info, err)
	}
	if _, err := h.Resume(ctx, a); err != nil {
		t.Fatal(err)
	}
	if got, err := actor.AskAs[int](ctx, h, a, "add", 0); err != nil || got != 4 {
		t.Fatalf("after resuming: %d, %v", got, err)
	}
	if n, err := h.Backlog(ctx, BacklogQuery{}); err != nil || !n.Idle() {
		t.Fatalf("backlog after the work = %+v, %v", n, err)
	}
	if rows, err := h.BacklogByActor(ctx, tallyType); err != nil || len(rows) != 0 {
		t.Fatalf("backlog by actor after the work = %+v, %v", rows, err)
	}
}
