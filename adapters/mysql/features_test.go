package mysql

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/ductus/ductus/actor"
	"github.com/ductus/ductus/internal/testutil"
	"github.com/ductus/ductus/runtime/store"
)

// listen runs b.Listen until the test ends and collects the signals.
type signals struct {
	mu   sync.Mutex
	work int
	done []int64
	at   []time.Time
}

func listen(t *testing.T, b *Backend) *signals {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	s := &signals{}
	ended := make(chan error, 1)
	go func() {
		ended <- b.Listen(ctx, func(sig store.Signal) {
			s.mu.Lock()
			defer s.mu.Unlock()
			if sig.Work {
				s.work++
			}
			s.done = append(s.done, sig.Done...)
			s.at = append(s.at, time.Now())
		})
	}()
	t.Cleanup(func() {
		cancel()
		if err := <-ended; err != context.Canceled {
			t.Errorf("Listen returned %v, want context.Canceled", err)
		}
	})
	return s
}

func (s *signals) snapshot() (int, []int64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.work, slices.Clone(s.done)
}

// TestSignalerAcrossBackends: one backend (another process, in effect)
// listens, another writes; work and finished messages arrive by polling.
func TestSignalerAcrossBackends(t *testing.T) {
	dsn := newDatabase(t)
	writer := openBackend(t, Config{DSN: dsn})
	reader := openBackend(t, Config{DSN: dsn, SignalPoll: 20 * time.Millisecond})
	sig := listen(t, reader)
	ctx := context.Background()
	time.Sleep(100 * time.Millisecond) // the listener has read its starting cursor

	// An enqueue without Signal wakes nobody.
	r := actor.Ref{Type: "t", ID: "x"}
	if _, err := writer.MailboxEnqueue(ctx, nil, &store.MailboxEnqueueParams{Messages: []store.NewMessage{{Ref: r, Name: "m", Args: []byte(`1`)}}}); err != nil {
		t.Fatal(err)
	}
	time.Sleep(100 * time.Millisecond)
	if w, _ := sig.snapshot(); w != 0 {
		t.Fatalf("%d work signals for an enqueue without Signal", w)
	}

	var latencies []time.Duration
	for i := 0; i < 10; i++ {
		before, _ := sig.snapshot()
		start := time.Now()
		// The first Tell takes the general path (a new actor), later ones
		// the one-round-trip path: both must signal.
		ref := actor.Ref{Type: "t", ID: fmt.Sprint("s", i%2)}
		if _, err := writer.MailboxEnqueue(ctx, nil, &store.MailboxEnqueueParams{Signal: true,
			Messages: []store.NewMessage{{Ref: ref, Name: "m", Args: []byte(`1`)}}}); err != nil {
			t.Fatal(err)
		}
		testutil.Eventually(t, 5*time.Second, "the work signal", func() bool { w, _ := sig.snapshot(); return w > before })
		latencies = append(latencies, time.Since(start))
	}

	// A commit with SignalDone publishes the finished message.
	ls, err := writer.LeaseClaim(ctx, &store.LeaseClaimParams{Owner: "w", TTL: time.Minute, Limit: 1, Types: []string{"t"}, PKs: nil})
	if err != nil || len(ls) == 0 {
		t.Fatal(ls, err)
	}
	msgs, err := writer.MessageTake(ctx, &store.MessageTakeParams{Owner: "w", Lease: ls[0].LeaseRef, Limit: 10})
	if err != nil || len(msgs) == 0 {
		t.Fatal(msgs, err)
	}
	var ids []int64
	comps := make([]store.Completion, len(msgs))
	for i, m := range msgs {
		comps[i] = store.Completion{MessageID: m.ID, Attempt: m.Attempt}
		ids = append(ids, m.ID)
	}
	start := time.Now()
	if _, err := writer.TurnCommit(ctx, &store.TurnCommitParams{Owner: "w", Lease: ls[0].LeaseRef, Completed: comps, SignalDone: ids}); err != nil {
		t.Fatal(err)
	}
	testutil.Eventually(t, 5*time.Second, "the done signals", func() bool {
		_, d := sig.snapshot()
		for _, id := range ids {
			if !slices.Contains(d, id) {
				return false
			}
		}
		return true
	})
	latencies = append(latencies, time.Since(start))
	// A stale commit publishes nothing.
	_, err = writer.TurnCommit(ctx, &store.TurnCommitParams{Owner: "someone-else", Lease: ls[0].LeaseRef, SignalDone: []int64{424242}})
	if err == nil {
		t.Fatal("a stale commit was accepted")
	}
	time.Sleep(100 * time.Millisecond)
	if _, d := sig.snapshot(); slices.Contains(d, 424242) {
		t.Fatal("a refused commit signalled")
	}
	slices.Sort(latencies)
	t.Logf("cross-backend wake-up latency at a 20ms poll: min %v, median %v, max %v", latencies[0], latencies[len(latencies)/2], latencies[len(latencies)-1])
}

// TestSignalLateCommitAndCleanup: a signal row whose id was taken before
// a later one but committed after it is still delivered (the listener
// asks for ids it skipped), and rows older than a minute are deleted.
func TestSignalLateCommitAndCleanup(t *testing.T) {
	dsn := newDatabase(t)
	b := openBackend(t, Config{DSN: dsn, SignalPoll: 10 * time.Millisecond})
	db := rawDB(t, dsn)
	ctx := context.Background()
	if _, err := db.Exec(`INSERT INTO ductus_signals (kind, message_id, created_at) VALUES (2, 1, UTC_TIMESTAMP(6) - INTERVAL 2 MINUTE)`); err != nil {
		t.Fatal(err)
	}
	sig := listen(t, b)
	time.Sleep(100 * time.Millisecond)
	testutil.Eventually(t, 5*time.Second, "the old row's cleanup", func() bool {
		var n int
		db.QueryRow(`SELECT COUNT(*) FROM ductus_signals WHERE message_id = 1`).Scan(&n)
		return n == 0
	})
	if _, d := sig.snapshot(); slices.Contains(d, 1) {
		t.Fatal("a row from before the listener started was delivered")
	}
	late, _ := db.Conn(ctx)
	defer late.Close()
	late.ExecContext(ctx, "START TRANSACTION")
	if _, err := late.ExecContext(ctx, `INSERT INTO ductus_signals (kind, message_id, created_at) VALUES (2, 100, UTC_TIMESTAMP(6))`); err != nil {
		t.Fatal(err)
	}
	if _, err := db.Exec(`INSERT INTO ductus_signals (kind, message_id, created_at) VALUES (2, 101, UTC_TIMESTAMP(6))`); err != nil {
		t.Fatal(err)
	}
	testutil.Eventually(t, 5*time.Second, "the later row", func() bool { _, d := sig.snapshot(); return slices.Contains(d, 101) })
	time.Sleep(50 * time.Millisecond)
	if _, err := late.ExecContext(ctx, "COMMIT"); err != nil {
		t.Fatal(err)
	}
	testutil.Eventually(t, 5*time.Second, "the row committed late", func() bool { _, d := sig.snapshot(); return slices.Contains(d, 100) })
}

// TestJSONFilters runs state filters over states with every JSON scalar
// kind: the kind must match as on SQLite (the string "1" is not the number
// 1, false is not 0), strings compare exactly (case, accents), numbers
// numerically.
func TestJSONFilters(t *testing.T) {
	b := openBackend(t, Config{})
	ctx := context.Background()
	states := map[string]string{
		"a": `{"s":"open","n":1,"f":1.5,"b":true,"z":null,"deep":{"k":"v"},"u":"é"}`,
		"b": `{"s":"Open","n":2,"f":2.0,"b":false,"z":0,"deep":{"k":"w"},"u":"e"}`,
		"c": `{"s":"1","n":-3,"f":1e3,"b":"true","z":"null","deep":{"k":null}}`,
		"d": `{"s":"open ","n":"1","f":1000,"b":0}`,
		"e": `[1,2,3]`,
	}
	for id, st := range states {
		r := actor.Ref{Type: "j", ID: id}
		if _, err := b.MailboxEnqueue(ctx, nil, &store.MailboxEnqueueParams{Messages: []store.NewMessage{{Ref: r, Name: "m", Args: []byte(`1`)}}}); err != nil {
			t.Fatal(err)
		}
		ls, err := b.LeaseClaim(ctx, &store.LeaseClaimParams{Owner: "o", TTL: time.Minute, Limit: 1, Types: []string{"j"}})
		if err != nil || len(ls) != 1 {
			t.Fatal(ls, err)
		}
		msgs, _ := b.MessageTake(ctx, &store.MessageTakeParams{Owner: "o", Lease: ls[0].LeaseRef, Limit: 1})
		if _, err := b.TurnCommit(ctx, &store.TurnCommitParams{Owner: "o", Lease: ls[0].LeaseRef, State: []byte(st), StateVersion: 1,
			Completed: []store.Completion{{MessageID: msgs[0].ID, Attempt: 1}}}); err != nil {
			t.Fatal(err)
		}
	}
	cases := []struct {
		path  string
		value any
		want  []string
	}{
		{"s", "open", []string{"a"}},
		{"s", "Open", []string{"b"}},
		{"s", "open ", []string{"d"}},
		{"s", "1", []string{"c"}},
		{"s", 1, nil},
		{"n", 1, []string{"a"}},
		{"n", int64(2), []string{"b"}},
		{"n", -3, []string{"c"}},
		{"n", "1", []string{"d"}},
		{"n", 1.0, []string{"a"}},
		{"n", json.Number("2"), []string{"b"}},
		{"f", 1.5, []string{"a"}},
		{"f", 2, []string{"b"}},
		{"f", 1000, []string{"c", "d"}},
		{"f", json.Number("1e3"), []string{"c", "d"}},
		{"b", true, []string{"a"}},
		{"b", false, []string{"b"}},
		{"b", "true", []string{"c"}},
		{"b", 0, []string{"d"}},
		{"z", nil, []string{"a"}},
		{"z", 0, []string{"b"}},
		{"z", "null", []string{"c"}},
		{"deep.k", "v", []string{"a"}},
		{"deep.k", nil, []string{"c"}},
		{"u", "é", []string{"a"}},
		{"u", "e", []string{"b"}},
		{"missing", nil, nil},
	}
	for _, c := range cases {
		t.Run(fmt.Sprintf("%s=%v(%T)", c.path, c.value, c.value), func(t *testing.T) {
			got, err := b.ActorList(ctx, &store.ActorListParams{Type: "j", Limit: 10, Filter: &store.StateFilter{Path: c.path, Value: c.value}})
			if err != nil {
				t.Fatal(err)
			}
			var ids []string
			for _, a := range got {
				ids = append(ids, a.Ref.ID)
			}
			if fmt.Sprint(ids) != fmt.Sprint(c.want) {
				t.Fatalf("got %v, want %v", ids, c.want)
			}
		})
	}
	for _, bad := range []store.StateFilter{{Path: "a b", Value: 1}, {Path: "$.x", Value: 1}, {Path: "x", Value: []int{1}}, {Path: "n", Value: json.Number("x")}} {
		if _, err := b.ActorList(ctx, &store.ActorListParams{Type: "j", Filter: &bad}); err == nil {
			t.Errorf("filter %+v was accepted", bad)
		}
	}
}

// TestRoundTrips counts the round trips (and statements) of the hot
// operations: the figures the adapter's design is about.
func TestRoundTrips(t *testing.T) {
	b := openBackend(t, Config{})
	ctx := context.Background()
	r := actor.Ref{Type: "t", ID: "x"}
	tell := func(ref actor.Ref) store.EnqueueResult {
		res, err := b.MailboxEnqueue(ctx, nil, &store.MailboxEnqueueParams{MailboxCap: 10_000, Messages: []store.NewMessage{{Ref: ref, Name: "m", Args: []byte(`{}`)}}})
		if err != nil {
			t.Fatal(err)
		}
		return res[0]
	}
	measure := func(name string, wantRTs int64, fn func()) {
		t.Helper()
		before := b.Stats()
		fn()
		after := b.Stats()
		rts, stmts := after.RoundTrips-before.RoundTrips, after.Statements-before.Statements
		t.Logf("%-40s %d round trips, %d statements", name, rts, stmts)
		if rts != wantRTs {
			t.Errorf("%s took %d round trips, want %d", name, rts, wantRTs)
		}
	}
	measure("Tell to a new actor", 3, func() { tell(r) })
	measure("Tell to a known actor", 1, func() {
		if res := tell(r); res.Seq != 2 || res.MessageID == 0 || res.ActorPK == 0 {
			t.Errorf("fast Tell result %+v", res)
		}
	})
	for i := 0; i < 30; i++ {
		tell(r)
	}
	var batch []store.NewMessage
	for i := 0; i < 1000; i++ {
		batch = append(batch, store.NewMessage{Ref: actor.Ref{Type: "t", ID: fmt.Sprint("b", i%100)}, Name: "m", Args: []byte(`{}`)})
	}
	measure("batch of 1000 over 100 new actors", 3, func() {
		if _, err := b.MailboxEnqueue(ctx, nil, &store.MailboxEnqueueParams{Messages: batch}); err != nil {
			t.Fatal(err)
		}
	})
	measure("batch of 1000 over 100 known actors", 2, func() {
		if _, err := b.MailboxEnqueue(ctx, nil, &store.MailboxEnqueueParams{Messages: batch}); err != nil {
			t.Fatal(err)
		}
	})
	var ls []store.Lease
	measure("claim (10 actors)", 3, func() {
		var err error
		ls, err = b.LeaseClaim(ctx, &store.LeaseClaimParams{Owner: "o", TTL: time.Minute, Limit: 10, Types: []string{"t"}})
		if err != nil || len(ls) != 10 {
			t.Fatal(ls, err)
		}
	})
	var l store.Lease
	for _, x := range ls {
		if x.Ref == r {
			l = x
		}
	}
	if l.ActorPK == 0 {
		t.Fatal("x was not claimed")
	}
	var msgs []store.Message
	measure("take 10", 1, func() {
		var err error
		msgs, err = b.MessageTake(ctx, &store.MessageTakeParams{Owner: "o", Lease: l.LeaseRef, Limit: 10})
		if err != nil || len(msgs) != 10 {
			t.Fatal(msgs, err)
		}
	})
	done := func(ms []store.Message) []store.Completion {
		out := make([]store.Completion, len(ms))
		for i, m := range ms {
			out[i] = store.Completion{MessageID: m.ID, Attempt: m.Attempt, Result: []byte(`1`)}
		}
		return out
	}
	measure("commit of 10", 1, func() {
		if _, err := b.TurnCommit(ctx, &store.TurnCommitParams{Owner: "o", Lease: l.LeaseRef, State: []byte(`{"n":10}`), Completed: done(msgs)}); err != nil {
			t.Fatal(err)
		}
	})
	msgs, _ = b.MessageTake(ctx, &store.MessageTakeParams{Owner: "o", Lease: l.LeaseRef, Limit: 10})
	measure("commit of 10 with TakeNext 10", 1, func() {
		res, err := b.TurnCommit(ctx, &store.TurnCommitParams{Owner: "o", Lease: l.LeaseRef, State: []byte(`{"n":20}`), Completed: done(msgs), TakeNext: 10})
		if err != nil || len(res.Next) != 10 {
			t.Fatal(res, err)
		}
		msgs = res.Next
	})
	measure("commit of 1 with TakeNext 1", 1, func() {
		res, err := b.TurnCommit(ctx, &store.TurnCommitParams{Owner: "o", Lease: l.LeaseRef, Completed: done(msgs[:1]), Returned: ids(msgs[1:]), TakeNext: 1})
		if err != nil || len(res.Next) != 1 {
			t.Fatal(res, err)
		}
	})
	measure("renew", 1, func() {
		if got, err := b.LeaseRenew(ctx, &store.LeaseRenewParams{Owner: "o", TTL: time.Minute, Leases: []store.LeaseRef{l.LeaseRef}}); err != nil || len(got) != 1 {
			t.Fatal(got, err)
		}
	})
	measure("release", 1, func() {
		if err := b.LeaseRelease(ctx, &store.LeaseReleaseParams{Owner: "o", Leases: []store.LeaseRef{l.LeaseRef}}); err != nil {
			t.Fatal(err)
		}
	})
}

func ids(ms []store.Message) []int64 {
	out := make([]int64, len(ms))
	for i, m := range ms {
		out[i] = m.ID
	}
	return out
}
