// Package actor is the public API of the Ductus virtual actor runtime.
//
// An actor is a logical object addressed by a [Ref] (a registered type name and
// an ID). Its in-memory activation is created on demand by a runtime worker,
// processes one mailbox message at a time and keeps JSON state that the
// runtime commits atomically with the message's completion and everything the
// turn staged (effects, reminders, actor-to-actor sends, observable changes).
//
// The contract every backend keeps:
//
//	Messages for one actor are durably enqueued and processed sequentially,
//	at least once, by at most one valid (fenced) lease holder at a time.
//
// A handler can therefore run more than once for the same message (a worker
// may lose its lease after running the handler but before committing); state
// transitions should guard on durable state, and external systems should
// deduplicate effects by their stable effect ID.
//
// This package holds only definitions: actor types ([Type], [Message],
// [Query]), the [Registry], [Ref], the turn [Context], the [Client] interface,
// authorization hooks, errors and the strict JSON rules with their limits. It
// imports nothing else of Ductus; the engine that runs actors lives in
// runtime/host and the storage adapters under adapters/.
package actor
