package ixstoretest

import (
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/ductus/ductus/actor"
	"github.com/ductus/ductus/integration/ixstore"
	"github.com/ductus/ductus/runtime/store"
)

// auditTests are the audit log methods' cases.
var auditTests = map[string]func(*testing.T, *suite){
	"InsertInTransactions": testAuditTransactions,
	"ListFiltersAndPages":  testAuditList,
	"ListWholeLogInOrder":  testAuditWholeLog,
	"DetailRoundTrip":      testAuditDetail,
	"TimeRoundTrip":        testAuditTime,
	"BadInputRefused":      testAuditBadInput,
}

// An audit row commits with the transaction it is written in: on its own
// (nil tx), not at all when the caller's transaction rolls back, and only
// at the commit when it commits (other connections do not see it before).
func testAuditTransactions(t *testing.T, s *suite) {
	ctx := s.ctx(t)
	actorName := s.name("tx")
	present := func(id string) bool {
		t.Helper()
		return slices.Contains(ids(s.list(t, ixstore.AuditListParams{Actor: actorName, Limit: 10})), id)
	}

	own := s.entry(t, actorName, "own")
	s.insertEntry(t, nil, own)
	if !present(own.ID) {
		t.Error("a row written with a nil tx is not in the log")
	}

	for _, commit := range []bool{false, true} {
		e := s.entry(t, actorName, "in tx")
		tx, err := s.be.Begin(ctx, store.TxOptions{})
		if err != nil {
			t.Fatal(err)
		}
		s.insertEntry(t, tx, e)
		if present(e.ID) {
			t.Error("a row of an open transaction is visible outside it")
		}
		if commit {
			err = tx.Commit(ctx)
		} else {
			err = tx.Rollback(ctx)
		}
		if err != nil {
			t.Fatal(err)
		}
		if got := present(e.ID); got != commit {
			t.Errorf("after the transaction ended (commit %v), the row is in the log: %v", commit, got)
		}
	}
}

// AuditList filters exactly by action and by actor, newest first, and
// pages backwards with Before.
func testAuditList(t *testing.T, s *suite) {
	alice, bob := s.name("alice"), s.name("bob")
	create, revoke := s.name("create"), s.name("revoke")
	// Written oldest first: each entry's UUIDv7 sorts after the one before.
	var all []ixstore.AuditEntry
	for _, w := range []struct{ actor, action string }{
		{alice, create}, {bob, create}, {alice, revoke}, {alice, create}, {bob, revoke}, {alice, create},
	} {
		e := s.entry(t, w.actor, w.action)
		s.insertEntry(t, nil, e)
		all = append(all, e)
	}
	// newest returns the IDs of the entries at idx, newest first.
	newest := func(idx ...int) []string {
		out := make([]string, 0, len(idx))
		for i := len(idx) - 1; i >= 0; i-- {
			out = append(out, all[idx[i]].ID)
		}
		return out
	}
	oldest := func(idx ...int) []string {
		out := make([]string, 0, len(idx))
		for _, i := range idx {
			out = append(out, all[i].ID)
		}
		return out
	}
	cases := []struct {
		name string
		p    ixstore.AuditListParams
		want []string
	}{
		{"by actor", ixstore.AuditListParams{Actor: alice, Limit: 10}, newest(0, 2, 3, 5)},
		{"by action", ixstore.AuditListParams{Action: create, Limit: 10}, newest(0, 1, 3, 5)},
		{"by actor and action", ixstore.AuditListParams{Actor: alice, Action: create, Limit: 10}, newest(0, 3, 5)},
		{"an actor nobody is", ixstore.AuditListParams{Actor: alice + "x", Limit: 10}, nil},
		{"an actor's case differs", ixstore.AuditListParams{Actor: strings.ToUpper(alice), Limit: 10}, nil},
		{"limited", ixstore.AuditListParams{Actor: alice, Limit: 2}, newest(3, 5)},
		{"before", ixstore.AuditListParams{Actor: alice, Before: all[3].ID, Limit: 10}, newest(0, 2)},
		{"before the oldest", ixstore.AuditListParams{Actor: alice, Before: all[0].ID, Limit: 10}, nil},
		{"before, by action", ixstore.AuditListParams{Action: revoke, Before: all[4].ID, Limit: 10}, newest(2)},
		{"oldest first", ixstore.AuditListParams{Actor: alice, OldestFirst: true, Limit: 10}, oldest(0, 2, 3, 5)},
		{"oldest first, after", ixstore.AuditListParams{Actor: alice, OldestFirst: true, After: all[2].ID, Limit: 10}, oldest(3, 5)},
		{"oldest first, limited", ixstore.AuditListParams{Action: create, OldestFirst: true, Limit: 2}, oldest(0, 1)},
		{"after, newest first", ixstore.AuditListParams{Actor: alice, After: all[0].ID, Before: all[5].ID, Limit: 10}, newest(2, 3)},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := ids(s.list(t, tc.p)); !slices.Equal(got, tc.want) {
				t.Errorf("AuditList = %v, want %v", got, tc.want)
			}
		})
	}

	t.Run("pages", func(t *testing.T) {
		var got []string
		p := ixstore.AuditListParams{Actor: alice, Limit: 3}
		for range 4 {
			page := s.list(t, p)
			if len(page) == 0 {
				break
			}
			got = append(got, ids(page)...)
			p.Before = page[len(page)-1].ID
		}
		if want := newest(0, 2, 3, 5); !slices.Equal(got, want) {
			t.Errorf("paged = %v, want %v", got, want)
		}
	})

	t.Run("rows read back whole", func(t *testing.T) {
		got := s.list(t, ixstore.AuditListParams{Actor: bob, Limit: 10})
		if len(got) != 2 {
			t.Fatalf("%d rows, want 2", len(got))
		}
		checkEntry(t, got[0], all[4])
		checkEntry(t, got[1], all[1])
	})
}

// The unfiltered log is newest first across pages, and holds the test's
// rows in their order among everyone else's.
func testAuditWholeLog(t *testing.T, s *suite) {
	var mine []string
	for range 3 {
		e := s.entry(t, s.name("whole"), s.name("whole"))
		s.insertEntry(t, nil, e)
		mine = append(mine, e.ID)
	}
	slices.Reverse(mine)
	var seen, found []string
	p := ixstore.AuditListParams{Limit: 4}
	for len(seen) < 10000 {
		page := s.list(t, p)
		if len(page) == 0 {
			break
		}
		if len(page) > p.Limit {
			t.Fatalf("a page of %d rows, limit %d", len(page), p.Limit)
		}
		for _, e := range page {
			if n := len(seen); n > 0 && e.ID >= seen[n-1] {
				t.Fatalf("the log is not newest first: %s after %s", e.ID, seen[n-1])
			}
			seen = append(seen, e.ID)
			if slices.Contains(mine, e.ID) {
				found = append(found, e.ID)
			}
		}
		p.Before = page[len(page)-1].ID
	}
	if !slices.Equal(found, mine) {
		t.Errorf("the test's rows read as %v, want %v", found, mine)
	}
}

// checkEntry compares an audit row read back with the one written.
func checkEntry(t *testing.T, got, want ixstore.AuditEntry) {
	t.Helper()
	if got.ID != want.ID || got.Actor != want.Actor || got.Via != want.Via || got.Address != want.Address ||
		got.Action != want.Action || got.Target != want.Target || got.Outcome != want.Outcome ||
		string(got.Detail) != string(want.Detail) {
		t.Errorf("audit row read back = %+v, want %+v", got, want)
	}
	if !sameTime(got.At, want.At) {
		t.Errorf("audit row %s: At = %v, want %v", want.ID, got.At, micro(want.At))
	}
}

// The detail is stored as the JSON text given, byte for byte, and none
// (nil or empty) reads back as nil; empty address and target round-trip
// as empty.
func testAuditDetail(t *testing.T, s *suite) {
	actorName := s.name("detail")
	cases := []struct {
		name   string
		detail string
		blank  bool // with an empty address and target (a CLI call on no target)
	}{
		{"none", "", false},
		{"an object", `{"name":"deploy","role":"admin","n":1.5,"ok":true,"none":null}`, false},
		{"spacing kept", `{ "b" : [1, 2] ,"a":{} }`, false},
		{"unicode and escapes", `{"s":"é😀\u0000\"\\ line\nnext"}`, false},
		{"an array", `[1,"two",[3]]`, false},
		{"a string", `"just text"`, false},
		{"empty address and target", `{}`, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			for _, detail := range [][]byte{[]byte(tc.detail), nil} {
				if tc.detail != "" && detail == nil {
					continue // nil and empty differ only for "none"
				}
				e := s.entry(t, actorName, s.name("detail"))
				e.Detail = detail
				if tc.blank {
					e.Address, e.Target = "", ""
				}
				s.insertEntry(t, nil, e)
				got := s.list(t, ixstore.AuditListParams{Action: e.Action, Limit: 2})
				if len(got) != 1 {
					t.Fatalf("%d rows, want 1", len(got))
				}
				if len(detail) == 0 && got[0].Detail != nil {
					t.Errorf("Detail = %q, want nil", got[0].Detail)
				}
				checkEntry(t, got[0], e)
			}
		})
	}
}

// Times round-trip to the microsecond: the nanoseconds are dropped, the
// instant is kept, in every time zone and before the epoch.
func testAuditTime(t *testing.T, s *suite) {
	east := time.FixedZone("UTC+5:30", 5*3600+1800)
	for _, at := range []time.Time{
		time.Date(2025, 12, 31, 23, 59, 59, 999999999, time.UTC),
		time.Date(2024, 2, 29, 12, 0, 0, 1000, east),
		time.Date(1969, 7, 20, 20, 17, 40, 500, time.UTC),
		time.Now(),
	} {
		e := s.entry(t, s.name("time"), s.name("time"))
		e.At = at
		s.insertEntry(t, nil, e)
		got := s.list(t, ixstore.AuditListParams{Actor: e.Actor, Limit: 1})
		if len(got) != 1 || !got[0].At.Equal(micro(at)) {
			t.Errorf("At %v read back as %+v, want %v", at, got, micro(at))
		}
	}
}

// An audit row the table cannot hold as given, or a page of no rows, is
// refused with actor.ErrInvalidArguments before anything is written.
func testAuditBadInput(t *testing.T, s *suite) {
	actorName := s.name("bad")
	cases := map[string]func(*ixstore.AuditEntry){
		"no ID":               func(e *ixstore.AuditEntry) { e.ID = "" },
		"detail not JSON":     func(e *ixstore.AuditEntry) { e.Detail = []byte(`{"a":`) },
		"an action too long":  func(e *ixstore.AuditEntry) { e.Action = strings.Repeat("a", 129) },
		"an outcome too long": func(e *ixstore.AuditEntry) { e.Outcome = strings.Repeat("o", 17) },
		"a target not UTF-8":  func(e *ixstore.AuditEntry) { e.Target = "\xc3" },
	}
	for name, spoil := range cases {
		t.Run(name, func(t *testing.T) {
			e := s.entry(t, actorName, "bad")
			spoil(&e)
			if err := s.ix.AuditInsert(s.ctx(t), nil, &ixstore.AuditInsertParams{Entry: e}); !errors.Is(err, actor.ErrInvalidArguments) {
				t.Fatalf("AuditInsert = %v, want actor.ErrInvalidArguments", err)
			}
		})
	}
	if got := s.list(t, ixstore.AuditListParams{Actor: actorName, Limit: 10}); len(got) != 0 {
		t.Errorf("refused rows were written: %+v", got)
	}
	for _, limit := range []int{0, -1} {
		if _, err := s.ix.AuditList(s.ctx(t), &ixstore.AuditListParams{Limit: limit}); !errors.Is(err, actor.ErrInvalidArguments) {
			t.Errorf("AuditList(limit %d) = %v, want actor.ErrInvalidArguments", limit, err)
		}
	}
}
