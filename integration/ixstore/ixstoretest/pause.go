package ixstoretest

import (
	"testing"
	"time"

	"github.com/ductus/ductus/integration/ixstore"
)

var pauseTests = map[string]func(*testing.T, *suite){
	"InsertListDelete": testPauseInsertListDelete,
}

// A pause is recorded once (a second keeps the first's who and why),
// lists whole (time to the microsecond), and is deleted once.
func testPauseInsertListDelete(t *testing.T, s *suite) {
	ctx := s.ctx(t)
	iface := s.name("iface")
	at := time.Date(2026, 12, 6, 3, 4, 5, 123456789, time.UTC)
	first := ixstore.Pause{Interface: iface, Destination: "emr", Reason: "EMR upgrade tonight", By: "op", At: at}
	insert := func(p ixstore.Pause) bool {
		t.Helper()
		ok, err := s.ix.PauseInsert(ctx, &p)
		if err != nil {
			t.Fatalf("PauseInsert(%s/%s): %v", p.Interface, p.Destination, err)
		}
		return ok
	}
	mine := func() map[string]ixstore.Pause {
		t.Helper()
		all, err := s.ix.PauseList(ctx)
		if err != nil {
			t.Fatal(err)
		}
		out := map[string]ixstore.Pause{}
		for _, p := range all {
			if p.Interface == iface {
				out[p.Destination] = p
			}
		}
		return out
	}
	if !insert(first) {
		t.Fatal("a first pause was not recorded")
	}
	if insert(ixstore.Pause{Interface: iface, Destination: "emr", Reason: "again", By: "other", At: at.Add(time.Hour)}) {
		t.Error("a second pause of a paused destination was recorded")
	}
	if !insert(ixstore.Pause{Interface: iface, Destination: "archive", Reason: "disk full", By: "op", At: at}) {
		t.Fatal("a pause of another destination was not recorded")
	}
	got := mine()
	want := first
	want.At = at.Truncate(time.Microsecond)
	if p := got["emr"]; p != want {
		t.Fatalf("the pause reads back %+v, want %+v", p, want)
	}
	if len(got) != 2 {
		t.Fatalf("pauses: %+v, want emr and archive", got)
	}
	del := func(dest string) bool {
		t.Helper()
		ok, err := s.ix.PauseDelete(ctx, &ixstore.PauseDeleteParams{Interface: iface, Destination: dest})
		if err != nil {
			t.Fatal(err)
		}
		return ok
	}
	if !del("emr") {
		t.Fatal("deleting a pause reported none")
	}
	if del("emr") {
		t.Error("deleting a deleted pause reported one")
	}
	if got := mine(); len(got) != 1 || got["archive"].Reason != "disk full" {
		t.Fatalf("after deleting emr's pause: %+v", got)
	}
}
