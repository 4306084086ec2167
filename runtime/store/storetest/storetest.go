// Package storetest is the conformance suite every store.Backend runs: one
// test per row of the transaction map, plus the concurrency and bad-input
// cases. An adapter's test file calls Run with a factory that returns a
// fresh, empty backend (its own database), so the same assertions hold on
// SQLite, Postgres and MySQL. Passing one backend's run is no evidence for
// another.
package storetest

import (
	"encoding/json"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ductus/ductus/actor"
	"github.com/ductus/ductus/internal/testutil"
	"github.com/ductus/ductus/runtime/store"
)

// Factory returns a fresh, empty backend for one test; the factory
// registers its cleanup with t.
type Factory func(t *testing.T) store.Backend

// Run runs the whole suite.
func Run(t *testing.T, newBackend Factory) {
	groups := []struct {
		name  string
		tests map[string]func(*testing.T, store.Backend)
	}{
		{"Mailbox", mailboxTests},
		{"Lease", leaseTests},
		{"Turn", turnTests},
		{"Destroy", destroyTests},
		{"Effects", effectTests},
		{"Reminders", reminderTests},
		{"Outbox", outboxTests},
		{"Broadcasts", broadcastTests},
		{"Processes", processTests},
		{"Admin", adminTests},
		{"Counts", countTests},
	}
	for _, g := range groups {
		t.Run(g.name, func(t *testing.T) {
			for _, name := range sortedKeys(g.tests) {
				fn := g.tests[name]
				t.Run(name, func(t *testing.T) { fn(t, newBackend(t)) })
			}
		})
	}
}

// Types every test uses; claims are filtered by type.
const (
	typeA = "storetest.a"
	typeB = "storetest.b"
)

var allTypes = []string{typeA, typeB}

var ownerSeq atomic.Int64

func newOwner() string { return fmt.Sprintf("owner-%d-%d", time.Now().UnixNano(), ownerSeq.Add(1)) }

func ref(id string) actor.Ref { return actor.Ref{Type: typeA, ID: id} }

func args(v any) []byte {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return b
}

func msg(r actor.Ref, name string, a any) store.NewMessage {
	return store.NewMessage{Ref: r, Name: name, Args: args(a)}
}

func enqueue(t *testing.T, b store.Backend, msgs ...store.NewMessage) []store.EnqueueResult {
	t.Helper()
	res, err := b.MailboxEnqueue(testutil.Context(t), nil, &store.MailboxEnqueueParams{Messages: msgs})
	if err != nil {
		t.Fatalf("enqueue: %v", err)
	}
	if len(res) != len(msgs) {
		t.Fatalf("enqueue returned %d results for %d messages", len(res), len(msgs))
	}
	return res
}

func enqueueN(t *testing.T, b store.Backend, r actor.Ref, n int) []store.EnqueueResult {
	t.Helper()
	msgs := make([]store.NewMessage, n)
	for i := range msgs {
		msgs[i] = msg(r, "inc", map[string]int{"n": i})
	}
	return enqueue(t, b, msgs...)
}

func claim(t *testing.T, b store.Backend, owner string, ttl time.Duration, limit int) []store.Lease {
	t.Helper()
	l, err := b.LeaseClaim(testutil.Context(t), &store.LeaseClaimParams{Owner: owner, TTL: ttl, Limit: limit, Types: allTypes})
	if err != nil {
		t.Fatalf("claim: %v", err)
	}
	return l
}

// claimOne claims and expects exactly the actor r.
func claimOne(t *testing.T, b store.Backend, owner string, r actor.Ref) store.Lease {
	t.Helper()
	ls := claim(t, b, owner, time.Minute, 10)
	for _, l := range ls {
		if l.Ref == r {
			return l
		}
	}
	t.Fatalf("claim did not return %s (got %v)", r, ls)
	return store.Lease{}
}

func take(t *testing.T, b store.Backend, owner string, l store.Lease, limit int) []store.Message {
	t.Helper()
	m, err := b.MessageTake(testutil.Context(t), &store.MessageTakeParams{Owner: owner, Lease: l.LeaseRef, Limit: limit})
	if err != nil {
		t.Fatalf("take: %v", err)
	}
	return m
}

func completeAll(msgs []store.Message) []store.Completion {
	out := make([]store.Completion, len(msgs))
	for i, m := range msgs {
		out[i] = store.Completion{MessageID: m.ID, Attempt: m.Attempt, Result: args(map[string]int64{"seq": m.Seq})}
	}
	return out
}

func commit(t *testing.T, b store.Backend, p *store.TurnCommitParams) store.TurnCommitResult {
	t.Helper()
	res, err := b.TurnCommit(testutil.Context(t), p)
	if err != nil {
		t.Fatalf("commit: %v", err)
	}
	return res
}

func status(t *testing.T, b store.Backend, id int64) store.MessageStatus {
	t.Helper()
	st, err := b.MessageStatus(testutil.Context(t), []int64{id})
	if err != nil || len(st) != 1 {
		t.Fatalf("status of %d: %v %v", id, st, err)
	}
	return st[0]
}

func actorInfo(t *testing.T, b store.Backend, r actor.Ref) *store.ActorInfo {
	t.Helper()
	a, err := b.ActorGet(testutil.Context(t), r)
	if err != nil {
		t.Fatalf("actor %s: %v", r, err)
	}
	return a
}

// runAll processes every message of the leased actor and commits them.
func runAll(t *testing.T, b store.Backend, owner string, l store.Lease) []store.Message {
	t.Helper()
	var all []store.Message
	for {
		msgs := take(t, b, owner, l, 100)
		if len(msgs) == 0 {
			return all
		}
		commit(t, b, &store.TurnCommitParams{Owner: owner, Lease: l.LeaseRef, Completed: completeAll(msgs)})
		all = append(all, msgs...)
	}
}

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	for i := 1; i < len(out); i++ {
		for j := i; j > 0 && out[j] < out[j-1]; j-- {
			out[j], out[j-1] = out[j-1], out[j]
		}
	}
	return out
}
