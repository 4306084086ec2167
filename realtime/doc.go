// Package realtime streams actors' observables to browsers and services
// over WebSocket (github.com/gorilla/websocket). A Handler is a plain
// http.Handler any Go service mounts; one connection carries many
// subscriptions.
//
// # Protocol
//
// Every frame is one JSON text message with an "op". The client sends:
//
//	{"op":"subscribe","ref":{"type":"cart","id":"c1"},"observables":["count","total"],"token":"…","since":42}
//	{"op":"unsubscribe","ref":{"type":"cart","id":"c1"}}
//
// "observables" may be omitted (all the token grants); "since" is the
// version the client last applied, for a resume. A subscribe for a ref
// already subscribed replaces that subscription. The server sends:
//
//	{"op":"snapshot","ref":…,"version":57,"values":{"count":3,"total":1250}}
//	{"op":"update","ref":…,"version":58,"changes":{"count":4}}
//	{"op":"resumed","ref":…,"version":58}
//	{"op":"unsubscribed","ref":…}
//	{"op":"error","ref":…,"code":"forbidden","message":"…"}
//
// An error frame with a ref ends that subscription only (the connection
// and its other subscriptions stay open); without a ref it answers a frame
// that could not be read. Codes: bad_frame, bad_token, token_expired,
// token_scope, unknown_type, bad_ref, unknown_observable, forbidden,
// too_many_subscriptions, not_subscribed, internal. A frame over
// MaxFrameBytes closes the connection (1009, frame_too_large). The server
// pings every PingInterval; a connection silent for PingInterval+PongWait
// is closed. Before the upgrade, a foreign Origin gets 403, a caller over
// MaxConnsPerCaller 429, and a request Identify refuses 401.
//
// # Versions and ordering
//
// A version is the ID of the broadcast row a commit wrote for a changed
// observable. An actor's turns commit one after another under its lease,
// so its versions only grow; versions of different actors are unrelated.
// Values are absolute (the observable's whole JSON value), never deltas.
//
//   - Per subscription, frames arrive in version order: a snapshot (or,
//     on a resume, the missed updates and then resumed) first, then
//     updates with growing versions. Adjacent changes of one actor may be
//     merged into one update frame carrying the last version.
//   - A snapshot is read from committed state after the server saw its
//     version, so it is at least that new; an update that follows may
//     repeat a change the snapshot already shows, which changes nothing.
//   - Frames of different subscriptions on one connection are in the
//     order the server saw the commits; one connection's requests are
//     answered in order.
//
// # Tokens and authorization
//
// The application signs a token (Keyring.Sign) for one ref, a set of
// observables and an expiry; HMAC-SHA256 with a key ID, so keys rotate. The
// handler verifies it, resolves the type through the registry, then asks
// the runtime's subscription policy (actor.Policies.Subscription, with the
// connection's caller from Config.Identify and the claims from TokenFrom)
// and streams only if it allows. A token proves integrity, not permission.
// It is checked when a subscription starts or resumes, and nothing is sent
// on a subscription past its token's expiry: the subscription then ends
// with token_expired (the browser client fetches a fresh token and resumes
// with since). The policy runs again on every snapshot.
//
// # Resume
//
// The handler retains each actor's recent changes (RetainUpdates,
// RetainFor). A client resuming with since gets every change after it
// and then resumed, if all of them are still retained; otherwise a fresh
// snapshot. Never a silent gap: the current state is the source of truth.
//
// # Across processes
//
// Changes committed by any process reach this one's subscribers through
// the runtime's broadcasts: on PostgreSQL the committing process's
// NOTIFY wakes this one's broadcast reader at once; on MySQL/MariaDB
// through the signal table the runtime polls; SQLite is one process.
// docs/realtime.md states the measured latency per backend.
//
// # Backpressure
//
// Each connection has a bounded queue (QueueSize). The broadcaster never
// waits for a client: when the queue is full its pending updates are
// dropped (counted) and each affected subscription gets a fresh snapshot
// once the queue has drained.
package realtime
