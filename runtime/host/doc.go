// Package host runs actors: it is the Ductus runtime engine that a Go
// service embeds. A Host owns one process's workers over a store.Backend:
// it claims activations of actors with due work, runs their messages in
// order with no transaction open, commits each batch in one fenced
// transaction, retries and dead-letters failures, renews and releases
// leases, and runs the effect, reminder, outbox and broadcast workers. It is
// also the actor.Client for the same process (Tell, TellBatch, Ask,
// Destroy) and the operator API (dead letters, pause, directory, backlog).
//
// A service needs this package, actor/ and the adapter it opens (or
// adapters/dburl to open any of them from a URL); the operator calls take and
// return this package's own types (ActorQuery and ActorInfo, EffectQuery and
// EffectInfo, ...), never the storage seam's. Close the backend after
// Shutdown: Shutdown does not close it. runtime/hosttest runs a host in
// tests; docs/runtime-guide.md is the guide for service authors.
//
// Correctness never rests on this process's memory: every decision that
// matters is a conditional write in the database (the lease's owner,
// generation and database-time expiry fence each commit), so any number of
// hosts may share a database, crash at any point, or pause past their lease,
// and each actor still applies its messages in order, at least once, under
// one valid lease at a time.
//
// Performance comes from batching rather than from cutting corners: a
// leased actor takes up to BatchSize ready messages at once, runs them in
// memory and commits them together (taking the next batch in the same
// transaction), so a busy actor costs a small constant number of statements
// per batch, not per message. The design and its rules: docs/architecture.md.
package host
