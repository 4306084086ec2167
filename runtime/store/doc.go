// Package store is the seam between the runtime and a database: the
// [Backend] interface every adapter (adapters/sqlite, adapters/postgres,
// adapters/mysql) implements, the row and parameter types it speaks, and the
// few pieces of logic the adapters share (lock ordering, error
// classification, retry of transient failures).
//
// Each Backend method is one short transaction of the runtime's transaction
// map (docs/architecture.md): enqueue, claim, take, commit, renew/release, destroy,
// reminder occurrence, and claim/finish of the outbox tables. Methods take
// (ctx, *Params) and return this package's row types, in the manner of
// River's drivers, so the runtime never sees SQL and an adapter never sees
// actor code. The conformance suite in store/storetest checks every method
// on every backend; passing one backend's run says nothing about another.
//
// Times that decide correctness (lease expiry, due times, back-off) are
// computed by the database: parameters carry durations relative to the
// database's clock, never the worker's wall clock. Absolute times appear
// only where a caller chose one (AvailableAt) or where the runtime derived
// one from a database timestamp (a cron occurrence).
package store
