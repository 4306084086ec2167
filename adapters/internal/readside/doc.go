// Package readside is the engine store's read side on bun
// (github.com/uptrace/bun), one implementation the three adapters share:
// the message browser (an interface's messages, filtered and paged; a
// message's deliveries), the audit log, accounts, sessions, API tokens and
// paused destinations. The writes and everything on the message path
// (intake, lanes, effects, dedupe) stay each adapter's hand-written SQL,
// where the statements are tuned per backend and measured; these reads
// are the same on every backend, so bun's query builder writes them once
// and its dialects spell them for each (identifier quoting, booleans,
// literals).
//
// bun interpolates arguments into the statement text (quoted by the
// dialect), so what the adapters' plan tests EXPLAIN (MessageListQuery's
// String) is exactly what runs. Every engine table keeps times as
// microseconds since the epoch in a BIGINT, so no dialect's time type is
// involved.
//
// It is internal to adapters/: the runtime and the engine see only
// ixstore.Store, which each adapter implements with a Reader for these
// methods.
package readside
