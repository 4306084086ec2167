package storetest

import (
	"testing"
	"time"

	"github.com/ductus/ductus/internal/testutil"

	"github.com/ductus/ductus/actor"
	"github.com/ductus/ductus/runtime/store"
)

func stageReminder(t *testing.T, b store.Backend, r actor.Ref, changes ...store.ReminderChange) {
	t.Helper()
	enqueueN(t, b, r, 1)
	owner := newOwner()
	l := claimOne(t, b, owner, r)
	msgs := take(t, b, owner, l, 1)
	commit(t, b, &store.TurnCommitParams{Owner: owner, Lease: l.LeaseRef, Completed: completeAll(msgs), Reminders: changes})
	if err := b.LeaseRelease(testutil.Context(t), &store.LeaseReleaseParams{Owner: owner, Leases: []store.LeaseRef{l.LeaseRef}}); err != nil {
		t.Fatal(err)
	}
}

func claimReminders(t *testing.T, b store.Backend, owner string) []store.Reminder {
	t.Helper()
	rs, err := b.ReminderClaim(testutil.Context(t), &store.ReminderClaimParams{Owner: owner, TTL: time.Minute, Limit: 100, Types: allTypes})
	if err != nil {
		t.Fatalf("claim reminders: %v", err)
	}
	return rs
}

var reminderTests = map[string]func(*testing.T, store.Backend){
	"FireAdvanceAndOccurrenceKey": func(t *testing.T, b store.Backend) {
		stageReminder(t, b, ref("x"), store.ReminderChange{Name: "tick", Message: "tick", Args: []byte(`{"k":1}`), Schedule: []byte(`{"every":60000000000}`)})
		owner := newOwner()
		var rs []store.Reminder
		testutil.Eventually(t, 5*time.Second, "the reminder to come due", func() bool { rs = claimReminders(t, b, owner); return len(rs) == 1 })
		r := rs[0]
		if r.Ref != ref("x") || r.Name != "tick" || r.Occurrence != 0 || r.Now.IsZero() {
			t.Fatalf("reminder = %+v", r)
		}
		if again := claimReminders(t, b, newOwner()); len(again) != 0 {
			t.Fatal("a claimed reminder was claimed again")
		}
		fire := store.ReminderFire{ID: r.ID, Occurrence: 1, Message: store.NewMessage{Ref: r.Ref, Name: r.Message, Args: r.Args}, Next: r.Now.Add(time.Hour)}
		if err := b.ReminderFire(testutil.Context(t), &store.ReminderFireParams{Owner: owner, Fires: []store.ReminderFire{fire}}); err != nil {
			t.Fatal(err)
		}
		// A second scheduler firing the same occurrence changes nothing.
		if err := b.ReminderFire(testutil.Context(t), &store.ReminderFireParams{Owner: owner, Fires: []store.ReminderFire{fire}}); err != nil {
			t.Fatal(err)
		}
		l := claimOne(t, b, owner, ref("x"))
		msgs := take(t, b, owner, l, 10)
		if len(msgs) != 1 || msgs[0].Name != "tick" || string(msgs[0].Args) != `{"k":1}` {
			t.Fatalf("occurrence messages = %+v", msgs)
		}
		m, _ := b.MessageGet(testutil.Context(t), msgs[0].ID)
		if m.IdempotencyKey == "" {
			t.Fatal("the occurrence has no idempotency key")
		}
		list, err := b.ReminderList(testutil.Context(t), ref("x"))
		if err != nil || len(list) != 1 || list[0].Occurrence != 1 || list[0].NextAt.Before(r.Now.Add(59*time.Minute)) {
			t.Fatalf("reminder after firing = %+v, %v", list, err)
		}
	},
	"OneShotIsDeletedAndCancel": func(t *testing.T, b store.Backend) {
		now, _ := b.Now(testutil.Context(t))
		stageReminder(t, b, ref("x"),
			store.ReminderChange{Name: "once", Message: "m", Args: []byte(`{}`), Schedule: []byte(`{}`), NextAt: now},
			store.ReminderChange{Name: "gone", Message: "m", Args: []byte(`{}`), Schedule: []byte(`{}`), NextIn: time.Hour})
		stageReminder(t, b, ref("x"), store.ReminderChange{Name: "gone", Cancel: true})
		owner := newOwner()
		rs := claimReminders(t, b, owner)
		if len(rs) != 1 || rs[0].Name != "once" {
			t.Fatalf("claimed %+v", rs)
		}
		fire := store.ReminderFire{ID: rs[0].ID, Occurrence: 1, Message: store.NewMessage{Ref: ref("x"), Name: "m", Args: []byte(`{}`)}}
		if err := b.ReminderFire(testutil.Context(t), &store.ReminderFireParams{Owner: owner, Fires: []store.ReminderFire{fire}}); err != nil {
			t.Fatal(err)
		}
		if list, _ := b.ReminderList(testutil.Context(t), ref("x")); len(list) != 0 {
			t.Fatalf("reminders left: %+v", list)
		}
	},
	"ReplaceByName": func(t *testing.T, b store.Backend) {
		stageReminder(t, b, ref("x"), store.ReminderChange{Name: "r", Message: "a", Args: []byte(`1`), Schedule: []byte(`{}`), NextIn: time.Hour})
		stageReminder(t, b, ref("x"), store.ReminderChange{Name: "r", Message: "b", Args: []byte(`2`), Schedule: []byte(`{}`), NextIn: 2 * time.Hour})
		list, err := b.ReminderList(testutil.Context(t), ref("x"))
		if err != nil || len(list) != 1 || list[0].Message != "b" || string(list[0].Args) != "2" {
			t.Fatalf("after replace = %+v, %v", list, err)
		}
	},
	"DestroyedActorIsNotRecreated": func(t *testing.T, b store.Backend) {
		stageReminder(t, b, ref("x"), store.ReminderChange{Name: "r", Message: "m", Args: []byte(`{}`), Schedule: []byte(`{}`)})
		owner := newOwner()
		var rs []store.Reminder
		testutil.Eventually(t, 5*time.Second, "the reminder", func() bool { rs = claimReminders(t, b, owner); return len(rs) == 1 })
		if _, err := b.ActorDestroy(testutil.Context(t), ref("x")); err != nil {
			t.Fatal(err)
		}
		fire := store.ReminderFire{ID: rs[0].ID, Occurrence: 1, Message: store.NewMessage{Ref: ref("x"), Name: "m", Args: []byte(`{}`)}}
		if err := b.ReminderFire(testutil.Context(t), &store.ReminderFireParams{Owner: owner, Fires: []store.ReminderFire{fire}}); err != nil {
			t.Fatal(err)
		}
		if a, err := b.ActorGet(testutil.Context(t), ref("x")); err == nil {
			t.Fatalf("a reminder recreated a destroyed actor: %+v", a)
		}
	},
	"NominalNextAndJitteredDue": func(t *testing.T, b store.Backend) {
		// next_at keeps the schedule's nominal time, due_at the jittered
		// delivery: the staged first occurrence and every fire.
		now, err := b.Now(testutil.Context(t))
		if err != nil {
			t.Fatal(err)
		}
		nominal := now.Add(-time.Hour).Truncate(time.Millisecond)
		stageReminder(t, b, ref("x"), store.ReminderChange{Name: "j", Message: "m", Args: []byte(`{}`), Schedule: []byte(`{}`),
			NextAt: nominal, Jitter: 90 * time.Second})
		list, err := b.ReminderList(testutil.Context(t), ref("x"))
		if err != nil || len(list) != 1 || !list[0].NextAt.Equal(nominal) || !list[0].DueAt.Equal(nominal.Add(90*time.Second)) {
			t.Fatalf("staged reminder = %+v, %v; want next %s, due 90s later", list, err, nominal)
		}
		owner := newOwner()
		rs := claimReminders(t, b, owner)
		if len(rs) != 1 || !rs[0].NextAt.Equal(nominal) {
			t.Fatalf("claimed %+v; want the nominal time %s", rs, nominal)
		}
		next := nominal.Add(2 * time.Hour)
		fire := store.ReminderFire{ID: rs[0].ID, Occurrence: 1, Message: store.NewMessage{Ref: ref("x"), Name: "m", Args: []byte(`{}`)},
			Next: next, Due: next.Add(3 * time.Minute)}
		if err := b.ReminderFire(testutil.Context(t), &store.ReminderFireParams{Owner: owner, Fires: []store.ReminderFire{fire}}); err != nil {
			t.Fatal(err)
		}
		list, err = b.ReminderList(testutil.Context(t), ref("x"))
		if err != nil || len(list) != 1 || !list[0].NextAt.Equal(next) || !list[0].DueAt.Equal(next.Add(3*time.Minute)) {
			t.Fatalf("fired reminder = %+v, %v; want next %s, due 3m later", list, err, next)
		}
	},
}
