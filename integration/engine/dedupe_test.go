package engine

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/ductus/ductus/integration/ixstore"
	"github.com/ductus/ductus/internal/testutil"
)

func dedupeProject(t *testing.T, api, window string) map[string]string {
	return map[string]string{
		"ductus.yaml": "partitions: 4\nscript: { isolates: 1 }\napi: { listen: off }\n",
		"interfaces/orders/interface.yaml": fmt.Sprintf(`
format: json
source: { type: internal }
ordering_key: $.patient
dedupe: { key: $.id, window: %s }
destinations:
  api: { type: http, url: %q, retry: { initial: 50ms, max: 200ms } }
`, window, api),
		"interfaces/orders/transform.js": `function transform(msg) { return msg; }`,
	}
}

// A sender that resends a message on a new connection after an ACK
// timeout races its own first attempt: concurrent intakes of one dedupe
// key must store one original and queue it once; the others are its
// duplicates.
func TestConcurrentIntakesOfOneKeyQueueOnce(t *testing.T) {
	forEachBackend(t, func(t *testing.T, be ixstore.Backend) {
		api := newReceiver(t)
		e := running(t, project(t, dedupeProject(t, api.srv.URL, "1h")), be)
		const keys, racers = 12, 8
		type answer struct {
			st  Stored
			err error
		}
		results := make([][]answer, keys)
		for k := 0; k < keys; k++ {
			results[k] = make([]answer, racers)
			start := make(chan struct{})
			var wg sync.WaitGroup
			for r := 0; r < racers; r++ {
				wg.Add(1)
				go func() {
					defer wg.Done()
					<-start
					payload := fmt.Sprintf(`{"id":"k%d","patient":"p%d","attempt":%d}`, k, k%3, r)
					st, err := e.Intake(context.Background(), "orders", []Record{{Payload: []byte(payload)}}, nil)
					if err == nil {
						results[k][r] = answer{st: st[0]}
					} else {
						results[k][r] = answer{err: err}
					}
				}()
			}
			close(start)
			wg.Wait()
		}
		for k, rs := range results {
			originals := map[string]bool{}
			for _, a := range rs {
				if a.err != nil {
					t.Fatalf("key k%d: intake failed: %v", k, a.err)
				}
				if !a.st.Duplicate {
					originals[a.st.ID] = true
				}
			}
			if len(originals) != 1 {
				t.Fatalf("key k%d: %d originals among %d concurrent intakes, want 1", k, len(originals), racers)
			}
			for _, a := range rs {
				if a.st.Duplicate && !originals[a.st.DuplicateOf] {
					t.Fatalf("key k%d: a duplicate of %s, but the original is %v", k, a.st.DuplicateOf, originals)
				}
			}
		}
		testutil.Eventually(t, 20*time.Second, "one delivery per key", func() bool { return api.count() >= keys })
		time.Sleep(300 * time.Millisecond)
		if n := api.count(); n != keys {
			t.Fatalf("the API received %d messages for %d keys", n, keys)
		}
		if n := dedupeRows(t, be); n != keys {
			t.Fatalf("%d dedupe rows for %d keys", n, keys)
		}
	})
}

// Expired dedupe keys are deleted on a timer; a key seen again after its
// window is an original again.
func TestExpiredDedupeKeysArePruned(t *testing.T) {
	forEachBackend(t, func(t *testing.T, be ixstore.Backend) {
		api := newReceiver(t)
		e := runningWith(t, project(t, dedupeProject(t, api.srv.URL, "1s")), be, Options{DedupePruneEvery: 200 * time.Millisecond})
		ctx := context.Background()
		var recs []Record
		for i := 0; i < 30; i++ {
			recs = append(recs, Record{Payload: []byte(fmt.Sprintf(`{"id":"x%d","patient":"p"}`, i))})
		}
		if _, err := e.Intake(ctx, "orders", recs, nil); err != nil {
			t.Fatal(err)
		}
		if n := dedupeRows(t, be); n != 30 {
			t.Fatalf("%d dedupe rows after storing 30 keys", n)
		}
		again, err := e.Intake(ctx, "orders", recs[:1], nil)
		if err != nil || !again[0].Duplicate {
			t.Fatalf("a repeat within the window: %+v %v", again, err)
		}
		// The window is 1s and the prune keeps a second's margin.
		testutil.Eventually(t, 15*time.Second, "the expired keys pruned", func() bool { return dedupeRows(t, be) == 0 })
		later, err := e.Intake(ctx, "orders", recs[:1], nil)
		if err != nil || later[0].Duplicate {
			t.Fatalf("a repeat after the window: %+v %v", later, err)
		}
		testutil.Eventually(t, 20*time.Second, "31 deliveries", func() bool { return api.count() == 31 })
	})
}

func dedupeRows(t *testing.T, be ixstore.Backend) int {
	t.Helper()
	n, err := be.TableCount(context.Background(), "ductus_ix_dedupe")
	if err != nil {
		t.Fatal(err)
	}
	return int(n)
}
