package engine

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"

	"github.com/ductus/ductus/integration/ixstore"
	"github.com/ductus/ductus/internal/testutil"
)

// Many callers at once: every request is in exactly one batch, is
// answered once, and no more than the limit of batches commit at a time.
func TestGroupCommitAnswersEachRequestOnce(t *testing.T) {
	for _, limit := range []int{1, 2, 4} {
		t.Run(fmt.Sprintf("limit=%d", limit), func(t *testing.T) {
			g := &groupCommit{limit: limit}
			var active, peak atomic.Int32
			var mu sync.Mutex
			seen := map[*intakeReq]int{}
			commit := func(batch []*intakeReq) {
				n := active.Add(1)
				for {
					p := peak.Load()
					if n <= p || peak.CompareAndSwap(p, n) {
						break
					}
				}
				mu.Lock()
				for _, r := range batch {
					seen[r]++
					r.out = []Stored{{ID: fmt.Sprint(len(r.recs))}}
				}
				mu.Unlock()
				active.Add(-1)
			}
			const callers, calls = 32, 50
			reqs := make([][]*intakeReq, callers)
			var wg sync.WaitGroup
			for c := range callers {
				wg.Add(1)
				go func() {
					defer wg.Done()
					for i := range calls {
						r := &intakeReq{ctx: context.Background(), recs: make([]Record, 1+(c+i)%3)}
						g.do(r, commit)
						if r.out == nil {
							t.Errorf("caller %d call %d returned without its answer", c, i)
						}
						reqs[c] = append(reqs[c], r)
					}
				}()
			}
			wg.Wait()
			for _, rs := range reqs {
				for _, r := range rs {
					if seen[r] != 1 {
						t.Fatalf("a request was committed %d times", seen[r])
					}
				}
			}
			if p := peak.Load(); p > int32(limit) {
				t.Fatalf("%d batches committed at once, limit %d", p, limit)
			}
			if g.leaders != 0 || len(g.pending) != 0 {
				t.Fatalf("after the last call: %d leaders, %d pending", g.leaders, len(g.pending))
			}
		})
	}
}

// What queues while a batch commits is the next batch, whole and in
// arrival order, led by its oldest request.
func TestGroupCommitQueuedRequestsShareTheNextBatch(t *testing.T) {
	g := &groupCommit{limit: 1}
	release := make(chan struct{})
	var batches [][]*intakeReq
	commit := func(batch []*intakeReq) {
		batches = append(batches, batch) // one leader at a time
		if len(batches) == 1 {
			<-release
		}
	}
	first := &intakeReq{ctx: context.Background(), recs: make([]Record, 1)}
	done := make(chan struct{})
	go func() { g.do(first, commit); close(done) }()
	testutil.Eventually(t, 10*time.Second, "the first request leading", func() bool {
		g.mu.Lock()
		defer g.mu.Unlock()
		return g.leaders == 1 && len(g.pending) == 0
	})
	const queued = 5
	var wg sync.WaitGroup
	reqs := make([]*intakeReq, queued)
	for i := range reqs {
		reqs[i] = &intakeReq{ctx: context.Background(), recs: make([]Record, 1)}
		wg.Add(1)
		go func() { defer wg.Done(); g.do(reqs[i], commit) }()
		// Queue them one by one, so arrival order is known.
		testutil.Eventually(t, 10*time.Second, "request queued", func() bool {
			g.mu.Lock()
			defer g.mu.Unlock()
			return len(g.pending) == i+1
		})
	}
	close(release)
	wg.Wait()
	<-done
	if len(batches) != 2 {
		t.Fatalf("%d batches, want 2 (the first alone, then everything queued meanwhile)", len(batches))
	}
	if len(batches[0]) != 1 || batches[0][0] != first {
		t.Fatalf("the first batch holds %d requests", len(batches[0]))
	}
	for i, r := range batches[1] {
		if r != reqs[i] {
			t.Fatalf("the second batch's request %d is not the %dth to arrive", i, i)
		}
	}
	if len(batches[1]) != queued {
		t.Fatalf("the second batch holds %d requests, want %d", len(batches[1]), queued)
	}
}

// A batch is bounded by records, not requests, and always holds at least
// its leader.
func TestGroupCommitTakeBoundsRecords(t *testing.T) {
	for _, tc := range []struct {
		records []int // per queued request
		want    int   // requests in the batch taken
	}{
		{[]int{1}, 1},
		{[]int{1, 1, 1}, 3},
		{[]int{2000, 1}, 1},
		{[]int{1, 2000}, 1},
		{[]int{300, 300}, 1},
		{[]int{100, 100, 100, 100, 100, 100}, 5},
		{[]int{1, maxGroupRecords - 1, 1}, 2},
	} {
		g := &groupCommit{}
		for _, n := range tc.records {
			g.pending = append(g.pending, &intakeReq{recs: make([]Record, n)})
		}
		batch := g.take()
		if len(batch) != tc.want || len(g.pending) != len(tc.records)-tc.want {
			t.Errorf("records %v: took %d, left %d; want %d taken", tc.records, len(batch), len(g.pending), tc.want)
		}
	}
}

// The engine's group transaction: requests in one batch are stored in one
// transaction in arrival order (one ordering key's messages arrive in the
// order they were queued); a request the database step refuses fails
// alone, after the batch is run again one request at a time; a request
// whose caller has gone is not stored.
func TestGroupTransactionOrderAndFailures(t *testing.T) {
	forEachBackend(t, func(t *testing.T, be ixstore.Backend) {
		api := newReceiver(t)
		e := running(t, project(t, dedupeProject(t, api.srv.URL, "1h")), be)
		ir := e.ifaces["orders"]
		gone, cancel := context.WithCancel(context.Background())
		cancel()
		refused := errors.New("no ACK for this one")
		const n = 12
		var batch []*intakeReq
		for i := range n {
			rec := Record{Payload: fmt.Appendf(nil, `{"id":"g%d","patient":"same","seq":%d}`, i, i)}
			ctx := context.Background()
			switch i {
			case 4:
				rec.ACK = func(string) ([]byte, error) { return nil, refused }
			case 7:
				ctx = gone
			}
			batch = append(batch, &intakeReq{ctx: ctx, ir: ir, recs: []Record{rec}})
		}
		splits := counterValue(t, e.met.groupSplits)
		e.commitGroup(batch)
		for i, r := range batch {
			switch i {
			case 4:
				if !errors.Is(r.err, refused) {
					t.Fatalf("the refused request: err %v", r.err)
				}
			case 7:
				if !errors.Is(r.err, context.Canceled) {
					t.Fatalf("the request whose caller had gone: err %v", r.err)
				}
			default:
				if r.err != nil || len(r.out) != 1 || r.out[0].ID == "" {
					t.Fatalf("request %d: %+v %v", i, r.out, r.err)
				}
			}
		}
		if got := counterValue(t, e.met.groupSplits) - splits; got != 1 {
			t.Fatalf("%v splits, want 1", got)
		}
		var m dto.Metric
		if err := e.met.groupSize.Write(&m); err != nil {
			t.Fatal(err)
		}
		if m.GetHistogram().GetSampleSum() < n-1 {
			t.Fatalf("group size sum %v after a batch of %d live requests", m.GetHistogram().GetSampleSum(), n-1)
		}
		const want = n - 2
		testutil.Eventually(t, 20*time.Second, "the stored requests delivered", func() bool { return api.count() >= want })
		time.Sleep(300 * time.Millisecond)
		got := decodeAll[struct{ Seq int }](t, api.bodies())
		var seqs []int
		for _, b := range got {
			seqs = append(seqs, b.Seq)
		}
		wantSeqs := []int{0, 1, 2, 3, 5, 6, 8, 9, 10, 11}
		if fmt.Sprint(seqs) != fmt.Sprint(wantSeqs) {
			t.Fatalf("delivered %v, want %v (one key, in queue order, without the refused and the abandoned)", seqs, wantSeqs)
		}
	})
}
