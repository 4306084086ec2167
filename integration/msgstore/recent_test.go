package msgstore

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/ductus/ductus/actor"
	"github.com/ductus/ductus/integration/ixstore"
)

// countingStore is an engine store whose only working method is
// MessageGetMany, which counts its reads (any other call panics through the
// nil embedded interface: these tests make none).
type countingStore struct {
	ixstore.Store
	rows  map[string]Message
	reads int
}

func (c *countingStore) MessageGetMany(_ context.Context, p *ixstore.MessageGetManyParams) ([]Message, error) {
	c.reads++
	var out []Message
	for _, id := range p.IDs {
		if m, ok := c.rows[id]; ok {
			out = append(out, m)
		}
	}
	return out, nil
}

func newCountingStore(rows ...Message) (*Store, *countingStore) {
	c := &countingStore{rows: map[string]Message{}}
	for _, m := range rows {
		c.rows[m.ID] = m
	}
	return &Store{ix: c, recent: newRecent(recentMaxBytes)}, c
}

func msg(id, status, payload string) Message {
	return Message{ID: id, Interface: "adt", Status: status, Payload: []byte(payload), Meta: map[string]any{"file": id}}
}

func TestQueuedReadsThroughOnce(t *testing.T) {
	ctx := context.Background()
	s, c := newCountingStore(msg("a", StatusPending, "MSH|a"))
	for range 3 {
		m, err := s.Queued(ctx, "a")
		if err != nil {
			t.Fatal(err)
		}
		if string(m.Payload) != "MSH|a" {
			t.Fatalf("payload %q", m.Payload)
		}
	}
	if c.reads != 1 {
		t.Errorf("three lanes' reads of one message went to the database %d times, want once", c.reads)
	}
	if _, err := s.Queued(ctx, "missing"); !errors.Is(err, actor.ErrNotFound) {
		t.Errorf("a message that is not stored: %v, want ErrNotFound", err)
	}
}

// Only what the intake queued is kept: a duplicate or a rejected record has
// no delivery to read it.
func TestRememberKeepsTheQueued(t *testing.T) {
	ctx := context.Background()
	rows := []Message{msg("p", StatusPending, "MSH|p"), msg("d", StatusDuplicate, "MSH|d"), msg("r", StatusRejected, "x,y")}
	s, c := newCountingStore(rows...)
	s.Remember(rows)
	for _, tc := range []struct {
		id    string
		reads int
	}{{"p", 0}, {"d", 1}, {"r", 2}} {
		if _, err := s.Queued(ctx, tc.id); err != nil {
			t.Fatal(err)
		}
		if c.reads != tc.reads {
			t.Errorf("after reading %s: %d reads of the database, want %d", tc.id, c.reads, tc.reads)
		}
	}
}

// The cache keeps its own copy: the intake's buffers may be reused.
func TestRememberCopies(t *testing.T) {
	s, _ := newCountingStore()
	rows := []Message{msg("a", StatusPending, "MSH|a")}
	s.Remember(rows)
	rows[0].Payload[0] = 'X'
	rows[0].Meta["file"] = "changed"
	m, err := s.Queued(context.Background(), "a")
	if err != nil {
		t.Fatal(err)
	}
	if string(m.Payload) != "MSH|a" || m.Meta["file"] != "a" {
		t.Errorf("the cached message changed with the caller's: %q %v", m.Payload, m.Meta)
	}
}

func TestRecentBoundedByBytes(t *testing.T) {
	payload := func(n int) string { return string(bytes.Repeat([]byte{'x'}, n)) }
	for _, tc := range []struct {
		name  string
		max   int
		sizes []int  // payloads put in order, IDs m0, m1, …
		kept  []bool // which are still there afterwards
	}{
		{name: "all fit", max: 4 * (100 + recentEntryCost), sizes: []int{100, 100, 100}, kept: []bool{true, true, true}},
		{name: "oldest out first", max: 3 * (1000 + recentEntryCost), sizes: []int{1000, 1000, 1000, 1000, 1000}, kept: []bool{false, false, true, true, true}},
		{name: "one large pushes out several", max: 3 * (1000 + recentEntryCost), sizes: []int{1000, 1000, 1000, 2500}, kept: []bool{false, false, true, true}},
		{name: "over the entry limit is never kept", max: recentMaxBytes, sizes: []int{10, recentMaxEntry + 1, 10}, kept: []bool{true, false, true}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := newRecent(tc.max)
			for i, n := range tc.sizes {
				m := msg(fmt.Sprintf("m%d", i), StatusPending, payload(n))
				r.put(&m)
			}
			for i, want := range tc.kept {
				if _, got := r.get(fmt.Sprintf("m%d", i)); got != want {
					t.Errorf("m%d kept %v, want %v", i, got, want)
				}
			}
			if r.bytes > tc.max {
				t.Errorf("holds %d bytes, over its bound %d", r.bytes, tc.max)
			}
		})
	}
}

// Putting a message again (two lanes missing it at once) replaces it
// without counting it twice.
func TestRecentPutAgain(t *testing.T) {
	r := newRecent(recentMaxBytes)
	m := msg("a", StatusPending, "MSH|a")
	r.put(&m)
	r.put(&m)
	if want := cost(&m); r.bytes != want {
		t.Errorf("holds %d bytes after putting one message twice, want %d", r.bytes, want)
	}
}
