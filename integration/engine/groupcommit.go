package engine

import (
	"context"
	"sync"
)

// Group commit: concurrent intakes share one transaction.
//
// Every intake used to be a transaction of its own, so sixteen MLLP
// connections cost sixteen commits (sixteen fsyncs on SQLite's one
// writer, sixteen row locks on a lane's actor row in turn on PostgreSQL)
// and barely beat one connection. Now an intake joins a queue; the first
// caller to find no commit running becomes the leader, takes everything
// queued (up to maxGroupRecords records), stores it in one transaction
// and hands each caller its own answer. Whatever queued meanwhile is
// handed, as a whole, to the next leader: the oldest waiter, so no caller
// commits more than the one batch that holds its own records and none
// waits behind an unbounded stream.
//
// Persist before acknowledge is unchanged: a caller gets its answer only
// after the commit that holds its records returned. A batch that fails
// before its commit is run again one request at a time, so one bad request
// (a record the database refuses) fails only itself; a commit whose
// outcome is unknown fails every request in it, as a lone intake's did.

// maxGroupRecords bounds the records of one group transaction (a file
// batch larger than this still commits alone, whole).
const maxGroupRecords = 512

// maxLeaders is how many group transactions may run at once. One keeps
// SQLite's single writer busy with the largest batches; the server
// backends commit in parallel, and a second leader fills the time the
// first spends waiting for its commit.
const maxLeaders = 2

// intakeReq is one Intake call in the queue.
type intakeReq struct {
	ctx   context.Context
	ir    *ifaceRuntime
	recs  []Record
	state *StateWrite

	// wake receives the batch the request is to lead (its first member),
	// or nil when its answer (out, err) is set.
	wake chan []*intakeReq
	out  []Stored
	err  error
}

// groupCommit is the queue and its leaders.
type groupCommit struct {
	mu      sync.Mutex
	pending []*intakeReq
	leaders int // batches being committed (at most limit)
	// limit overrides maxLeaders when set (a test makes every intake its
	// own leader, as before group commit, to compare).
	limit int
}

// do queues req and returns once its answer is set, having led the batch
// that holds it if the lead fell to it. commit stores a batch and sets
// each request's answer.
//
// A batch is always taken from the queue under the lock, by the request
// that becomes its leader or, for the next leader, by the one finishing:
// a request is never both in the queue and in a batch, so it is answered
// once and leads at most once.
func (g *groupCommit) do(req *intakeReq, commit func(batch []*intakeReq)) {
	req.wake = make(chan []*intakeReq, 1)
	g.mu.Lock()
	g.pending = append(g.pending, req)
	var batch []*intakeReq
	limit := maxLeaders
	if g.limit > 0 {
		limit = g.limit
	}
	if g.leaders < limit {
		g.leaders++
		batch = g.take()
	}
	g.mu.Unlock()
	if batch == nil {
		// A follower waits even when its context ends: the lead may be
		// handed to it, and a queue nobody leads would hang every caller
		// behind it. The leader answers a request whose context has ended
		// without storing it.
		if batch = <-req.wake; batch == nil {
			return
		}
	}
	commit(batch)
	for _, r := range batch {
		if r != req {
			r.wake <- nil
		}
	}
	g.mu.Lock()
	if len(g.pending) == 0 {
		g.leaders--
		g.mu.Unlock()
		return
	}
	next := g.take()
	g.mu.Unlock()
	next[0].wake <- next
}

// take removes a batch from the queue: the oldest requests up to
// maxGroupRecords records, at least one; the first is its leader. Called
// with mu held. (A caller that finds fewer than maxLeaders leaders finds
// the queue empty, since a leader only steps down when nothing is queued:
// its batch is itself.)
func (g *groupCommit) take() []*intakeReq {
	n, records := 0, 0
	for n < len(g.pending) {
		r := g.pending[n]
		if n > 0 && records+len(r.recs) > maxGroupRecords {
			break
		}
		records += len(r.recs)
		n++
	}
	batch := append([]*intakeReq(nil), g.pending[:n]...)
	g.pending = append([]*intakeReq(nil), g.pending[n:]...)
	return batch
}
