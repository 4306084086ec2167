package ixstoretest

import (
	"testing"
	"time"

	"github.com/ductus/ductus/integration/ixstore"
	"github.com/ductus/ductus/runtime/store"
)

var deliveryTests = map[string]func(*testing.T, *suite){
	"Relink":  testDeliveryRelink,
	"Dismiss": testDeliveryDismiss,
}

// insertDeliveries stores a message with deliveries to a (lane message
// 10) and b (11), and returns its ID.
func (s *suite) insertDeliveries(t *testing.T) string {
	t.Helper()
	ctx := s.ctx(t)
	id := s.name("msg")
	m := ixstore.Message{ID: id, Interface: "ixstoretest", ReceivedAt: time.Now().UTC(), Status: "pending", Payload: []byte("x")}
	ds := []ixstore.Delivery{{MessageID: id, Destination: "a", LaneMessageID: 10}, {MessageID: id, Destination: "b", LaneMessageID: 11}}
	tx, err := s.be.Begin(ctx, store.TxOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.ix.MessageInsert(ctx, tx, &ixstore.MessageInsertParams{Messages: []ixstore.Message{m}, Deliveries: ds}); err != nil {
		t.Fatal(err)
	}
	if err := tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	return id
}

// deliveries reads a message's deliveries by destination.
func (s *suite) deliveries(t *testing.T, id string) map[string]ixstore.Delivery {
	t.Helper()
	got, err := s.ix.DeliveryList(s.ctx(t), &ixstore.DeliveryListParams{MessageID: id})
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]ixstore.Delivery{}
	for _, d := range got {
		out[d.Destination] = d
	}
	return out
}

// A dismissal is recorded once, only on the lane message it was decided
// for, reads back whole (time to the microsecond), and a relink clears it.
func testDeliveryDismiss(t *testing.T, s *suite) {
	ctx := s.ctx(t)
	id := s.insertDeliveries(t)
	at := time.Date(2026, 12, 6, 3, 4, 5, 123456789, time.UTC)
	dismiss := func(dest string, lane int64, reason string) bool {
		t.Helper()
		ok, err := s.ix.DeliveryDismiss(ctx, nil, &ixstore.DeliveryDismissParams{MessageID: id, Destination: dest, LaneMessageID: lane, At: at, By: "op", Reason: reason})
		if err != nil {
			t.Fatalf("DeliveryDismiss(%s %d): %v", dest, lane, err)
		}
		return ok
	}
	if dismiss("a", 99, "wrong lane") {
		t.Error("a dismissal for a lane message the delivery is not on was recorded")
	}
	if !dismiss("a", 10, "the EMR has it already") {
		t.Fatal("a dismissal was not recorded")
	}
	if dismiss("a", 10, "again") {
		t.Error("a second dismissal of a dismissed delivery was recorded")
	}
	got := s.deliveries(t, id)
	want := ixstore.Delivery{MessageID: id, Destination: "a", LaneMessageID: 10, DismissedAt: at.Truncate(time.Microsecond), DismissedBy: "op", DismissReason: "the EMR has it already"}
	if d := got["a"]; !d.DismissedAt.Equal(want.DismissedAt) || d.DismissedBy != want.DismissedBy || d.DismissReason != want.DismissReason || d.LaneMessageID != 10 {
		t.Fatalf("dismissed delivery reads back %+v, want %+v", d, want)
	}
	if d := got["b"]; !d.DismissedAt.IsZero() || d.DismissedBy != "" || d.DismissReason != "" {
		t.Fatalf("the other delivery reads back dismissed: %+v", d)
	}
	ok, err := s.ix.DeliveryRelink(ctx, nil, &ixstore.DeliveryRelinkParams{MessageID: id, Destination: "a", From: 10, To: 12})
	if err != nil || !ok {
		t.Fatalf("relink a dismissed delivery: %v %v", ok, err)
	}
	if d := s.deliveries(t, id)["a"]; !d.DismissedAt.IsZero() || d.DismissedBy != "" || d.DismissReason != "" || d.LaneMessageID != 12 {
		t.Fatalf("a relink left the dismissal: %+v", d)
	}
}

// DeliveryRelink moves a delivery only from the lane message it was read
// with, leaves the message's other deliveries alone, and commits or rolls
// back with its transaction.
func testDeliveryRelink(t *testing.T, s *suite) {
	ctx := s.ctx(t)
	id := s.insertDeliveries(t)
	lanes := func() map[string]int64 {
		t.Helper()
		out := map[string]int64{}
		for dest, d := range s.deliveries(t, id) {
			out[dest] = d.LaneMessageID
		}
		return out
	}
	relink := func(tx store.Tx, dest string, from, to int64) bool {
		t.Helper()
		ok, err := s.ix.DeliveryRelink(ctx, tx, &ixstore.DeliveryRelinkParams{MessageID: id, Destination: dest, From: from, To: to})
		if err != nil {
			t.Fatalf("DeliveryRelink(%s %d->%d): %v", dest, from, to, err)
		}
		return ok
	}

	if !relink(nil, "a", 10, 20) {
		t.Fatal("a relink from the current lane message reported nothing moved")
	}
	if relink(nil, "a", 10, 30) {
		t.Error("a relink from a lane message the delivery no longer points at moved it")
	}
	if relink(nil, "nowhere", 10, 30) {
		t.Error("a relink of a destination the message has none for moved something")
	}
	if got := lanes(); got["a"] != 20 || got["b"] != 11 {
		t.Fatalf("after relinking a: %v, want a=20 b=11", got)
	}

	for _, commit := range []bool{false, true} {
		tx, err := s.be.Begin(ctx, store.TxOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if !relink(tx, "b", 11, 21) {
			t.Fatal("a relink in a transaction moved nothing")
		}
		if commit {
			err = tx.Commit(ctx)
		} else {
			err = tx.Rollback(ctx)
		}
		if err != nil {
			t.Fatal(err)
		}
		want := int64(11)
		if commit {
			want = 21
		}
		if got := lanes()["b"]; got != want {
			t.Errorf("after the transaction ended (commit %v): b points at %d, want %d", commit, got, want)
		}
	}
}
