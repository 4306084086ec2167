package ixstoretest

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/ductus/ductus/actor"
	"github.com/ductus/ductus/integration/ixstore"
	"github.com/ductus/ductus/runtime/store"
)

// searchTests are the message browser's filters (MessageList).
var searchTests = map[string]func(*testing.T, *suite){
	"Filters":         testSearchFilters,
	"PagesAndRanges":  testSearchPages,
	"TypeReadBack":    testSearchTypeReadBack,
	"BadTypeRefused":  testSearchBadType,
	"OtherInterfaces": testSearchOtherInterfaces,
}

// searchSet is 30 messages of one interface made for this run: message i
// has ID ids[i] (UUIDv7-shaped, growing with i), ordering key K<i%3>,
// dedupe key D<i>, type ADT^A01 or ADT^A02 by i's parity but none for
// every fifth, and status duplicate for every seventh.
type searchSet struct {
	iface string
	ids   []string
}

func (s *suite) searchSet(t *testing.T) searchSet {
	t.Helper()
	set := searchSet{iface: "search-" + s.run + randHex(2)}
	// Two sets made in one millisecond get IDs of their own: a tag in the
	// random bits, the order within a set by the millisecond.
	base, tag := time.Now().UnixMilli(), randHex(2)[:3]
	var msgs []ixstore.Message
	for i := range 30 {
		ms := base + int64(i)
		id := fmt.Sprintf("%08x-%04x-7abc-8%s-%012x", ms>>16, ms&0xffff, tag, i)
		set.ids = append(set.ids, id)
		m := ixstore.Message{ID: id, Interface: set.iface, ReceivedAt: time.UnixMilli(ms), Status: "pending",
			Key: fmt.Sprintf("K%d", i%3), DedupeKey: fmt.Sprintf("D%d", i), Type: fmt.Sprintf("ADT^A0%d", i%2+1), Payload: []byte("MSH")}
		if i%5 == 0 {
			m.Type = ""
		}
		if i%7 == 0 {
			m.Status = "duplicate"
		}
		msgs = append(msgs, m)
	}
	// Inserted out of order: the list orders by ID, not by insert.
	slices.Reverse(msgs)
	ctx := s.ctx(t)
	tx, err := s.be.Begin(ctx, store.TxOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(ctx)
	if err := s.ix.MessageInsert(ctx, tx, &ixstore.MessageInsertParams{Messages: msgs}); err != nil {
		t.Fatal(err)
	}
	if err := tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	return set
}

// want is the IDs of the set's messages i that keep, newest first.
func (set searchSet) want(keep func(i int) bool) []string {
	var out []string
	for i := len(set.ids) - 1; i >= 0; i-- {
		if keep(i) {
			out = append(out, set.ids[i])
		}
	}
	return out
}

// search lists with p (Interface set to the set's), failing on an error.
func (s *suite) search(t *testing.T, set searchSet, p ixstore.MessageListParams) []string {
	t.Helper()
	p.Interface = set.iface
	if p.Limit == 0 {
		p.Limit = 100
	}
	got, err := s.ix.MessageList(s.ctx(t), &p)
	if err != nil {
		t.Fatalf("MessageList(%+v): %v", p, err)
	}
	out := make([]string, len(got))
	for i, m := range got {
		out[i] = m.ID
	}
	return out
}

func checkIDs(t *testing.T, what string, got, want []string) {
	t.Helper()
	if !slices.Equal(got, want) {
		t.Errorf("%s: got %d IDs %v\nwant %d %v", what, len(got), got, len(want), want)
	}
}

// Each filter alone, and two at once, keep exactly the matching messages,
// newest first.
func testSearchFilters(t *testing.T, s *suite) {
	set := s.searchSet(t)
	hasType := func(i int, typ int) bool { return i%5 != 0 && i%2+1 == typ }
	for _, c := range []struct {
		name string
		p    ixstore.MessageListParams
		keep func(int) bool
	}{
		{"none", ixstore.MessageListParams{}, func(int) bool { return true }},
		{"key", ixstore.MessageListParams{Key: "K1"}, func(i int) bool { return i%3 == 1 }},
		{"dedupe key", ixstore.MessageListParams{DedupeKey: "D17"}, func(i int) bool { return i == 17 }},
		{"type", ixstore.MessageListParams{Type: "ADT^A02"}, func(i int) bool { return hasType(i, 2) }},
		{"status", ixstore.MessageListParams{Status: "duplicate"}, func(i int) bool { return i%7 == 0 }},
		{"type and key", ixstore.MessageListParams{Type: "ADT^A01", Key: "K2"}, func(i int) bool { return hasType(i, 1) && i%3 == 2 }},
		{"key and status", ixstore.MessageListParams{Key: "K0", Status: "pending"}, func(i int) bool { return i%3 == 0 && i%7 != 0 }},
		{"no match", ixstore.MessageListParams{Type: "ORU^R01"}, func(int) bool { return false }},
	} {
		checkIDs(t, c.name, s.search(t, set, c.p), set.want(c.keep))
	}
}

// Pages chain with Before and end; From and Before bound an ID (time)
// range, with and without a filter.
func testSearchPages(t *testing.T, s *suite) {
	set := s.searchSet(t)
	for _, p := range []ixstore.MessageListParams{{}, {Key: "K1"}, {Type: "ADT^A02"}} {
		var got []string
		before := ""
		for range 20 {
			q := p
			q.Before, q.Limit = before, 4
			page := s.search(t, set, q)
			got = append(got, page...)
			if len(page) < 4 {
				break
			}
			before = page[len(page)-1]
		}
		all := p
		checkIDs(t, fmt.Sprintf("pages of 4 with %+v", p), got, s.search(t, set, all))
	}
	inRange := func(i int) bool { return i >= 10 && i < 20 }
	checkIDs(t, "a range", s.search(t, set, ixstore.MessageListParams{From: set.ids[10], Before: set.ids[20]}), set.want(inRange))
	checkIDs(t, "a range and a key", s.search(t, set, ixstore.MessageListParams{From: set.ids[10], Before: set.ids[20], Key: "K2"}),
		set.want(func(i int) bool { return inRange(i) && i%3 == 2 }))
	checkIDs(t, "a range and a type", s.search(t, set, ixstore.MessageListParams{From: set.ids[10], Before: set.ids[20], Type: "ADT^A01"}),
		set.want(func(i int) bool { return inRange(i) && i%5 != 0 && i%2 == 0 }))
}

// A message's type reads back with it, by ID and in a list; a message
// without one reads back without.
func testSearchTypeReadBack(t *testing.T, s *suite) {
	set := s.searchSet(t)
	got, err := s.ix.MessageGetMany(s.ctx(t), &ixstore.MessageGetManyParams{IDs: []string{set.ids[0], set.ids[1], set.ids[2]}})
	if err != nil {
		t.Fatal(err)
	}
	types := map[string]string{}
	for _, m := range got {
		types[m.ID] = m.Type
	}
	if types[set.ids[0]] != "" || types[set.ids[1]] != "ADT^A02" || types[set.ids[2]] != "ADT^A01" {
		t.Errorf("types read by ID: %v", types)
	}
	list, err := s.ix.MessageList(s.ctx(t), &ixstore.MessageListParams{Interface: set.iface, Limit: 2})
	if err != nil {
		t.Fatal(err)
	}
	if len(list) != 2 || list[0].Type != "ADT^A02" || list[1].Type != "ADT^A01" || list[1].Key != "K1" || list[1].DedupeKey != "D28" {
		t.Errorf("the newest two: %+v", list)
	}
}

// A type longer than the search column is refused before anything is
// written.
func testSearchBadType(t *testing.T, s *suite) {
	ctx := s.ctx(t)
	iface := "search-bad-" + s.run
	m := ixstore.Message{ID: s.name("m"), Interface: iface, ReceivedAt: time.Now(), Status: "pending",
		Type: strings.Repeat("T", 256), Payload: []byte("x")}
	tx, err := s.be.Begin(ctx, store.TxOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(ctx)
	if err := s.ix.MessageInsert(ctx, tx, &ixstore.MessageInsertParams{Messages: []ixstore.Message{m}}); !errors.Is(err, actor.ErrInvalidArguments) {
		t.Fatalf("a 256-byte type: %v", err)
	}
}

// Another interface's messages never show, whatever the filter.
func testSearchOtherInterfaces(t *testing.T, s *suite) {
	a, b := s.searchSet(t), s.searchSet(t)
	for _, p := range []ixstore.MessageListParams{{}, {Key: "K1"}, {Type: "ADT^A01"}, {DedupeKey: "D3"}, {Status: "duplicate"}} {
		got := s.search(t, a, p)
		for _, id := range got {
			if slices.Contains(b.ids, id) {
				t.Fatalf("%+v on %s lists %s of %s", p, a.iface, id, b.iface)
			}
		}
	}
}
