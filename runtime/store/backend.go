package store

import (
	"context"
	"time"

	"github.com/ductus/ductus/actor"
)

// Backend is everything the runtime needs from a database. Each method is
// one transaction of the transaction map; see the package documentation.
type Backend interface {
	Mailbox
	Leases
	Turns
	Effects
	Reminders
	Outbox
	Broadcasts
	Processes
	Admin
	Counts

	// Name is the backend's name as benchmarks and logs print it:
	// "sqlite", "postgres" or "mysql".
	Name() string
	// Now returns the database's current time.
	Now(ctx context.Context) (time.Time, error)
	// Begin opens a transaction for the caller's own writes; pass it to
	// MailboxEnqueue so the caller's rows and the messages commit together.
	Begin(ctx context.Context, opts TxOptions) (Tx, error)
	// Close releases the connections.
	Close() error
}

// Mailbox is the enqueue side.
type Mailbox interface {
	// MailboxEnqueue creates missing actors, locks them in a fixed order,
	// enforces mailbox caps and idempotency keys, allocates per-actor
	// sequences and inserts the messages and their ready rows. With a nil
	// tx it runs its own transaction; otherwise it runs inside tx and the
	// caller commits. The whole batch commits or none of it (a full mailbox
	// fails the batch with a *actor.MailboxFullError).
	MailboxEnqueue(ctx context.Context, tx Tx, p *MailboxEnqueueParams) ([]EnqueueResult, error)
	// MessageStatus reads the durable outcome of messages (Ask).
	MessageStatus(ctx context.Context, ids []int64) ([]MessageStatus, error)
	// MessageGet reads one message row.
	MessageGet(ctx context.Context, id int64) (*MessageInfo, error)
}

// Leases is the activation side.
type Leases interface {
	// LeaseClaim locks candidate actors (due head work, lease free or
	// expired, not paused), longest-waiting first, bumps each one's
	// generation and sets owner and expiry.
	LeaseClaim(ctx context.Context, p *LeaseClaimParams) ([]Lease, error)
	// LeaseRenew extends the given leases where owner and generation
	// still match and the lease has not expired; it returns the renewed ones.
	LeaseRenew(ctx context.Context, p *LeaseRenewParams) ([]LeaseRef, error)
	// LeaseRelease clears owner and expiry where owner and generation
	// still match.
	LeaseRelease(ctx context.Context, p *LeaseReleaseParams) error
	// LeaseOwnedDue lists actors leased by owner that have due work (a
	// message enqueued by another process into an activation cached here).
	LeaseOwnedDue(ctx context.Context, owner string) ([]LeaseRef, error)
}

// Turns is the message-processing side.
type Turns interface {
	// MessageTake moves ready messages of a leased actor to claimed; it
	// fails with actor.ErrLostActivation when the lease is not valid.
	MessageTake(ctx context.Context, p *MessageTakeParams) ([]Message, error)
	// TurnCommit commits a turn after the fenced check; a stale lease
	// changes nothing and returns actor.ErrLostActivation.
	TurnCommit(ctx context.Context, p *TurnCommitParams) (TurnCommitResult, error)
	// ActorDestroy locks the actor, deletes it and everything hanging off
	// it, and reports whether it existed.
	ActorDestroy(ctx context.Context, ref actor.Ref) (bool, error)
}

// Effects is the effect outbox.
type Effects interface {
	EffectClaim(ctx context.Context, p *EffectClaimParams) ([]Effect, error)
	EffectFinish(ctx context.Context, p *EffectFinishParams) error
	// EffectRetry makes a dead effect pending again (an operator action).
	EffectRetry(ctx context.Context, id int64) (bool, error)
	// EffectDiscard deletes a dead effect (an operator action) and reports
	// whether there was one; an effect in any other state is left alone.
	EffectDiscard(ctx context.Context, id int64) (bool, error)
	EffectList(ctx context.Context, p *EffectListParams) ([]EffectInfo, error)
	EffectGet(ctx context.Context, id int64) (*EffectInfo, error)
	// EffectListByMessages lists the effects the given messages' turns
	// staged, by effect ID (the integration engine derives a delivery's
	// status from its lane message and the send effect it staged).
	EffectListByMessages(ctx context.Context, messageIDs []int64) ([]EffectInfo, error)
}

// Reminders is the reminder scheduler's side.
type Reminders interface {
	ReminderClaim(ctx context.Context, p *ReminderClaimParams) ([]Reminder, error)
	// ReminderFire enqueues each occurrence and advances its reminder in
	// one transaction per batch; a reminder whose actor is gone fires
	// nothing.
	ReminderFire(ctx context.Context, p *ReminderFireParams) error
	ReminderList(ctx context.Context, ref actor.Ref) ([]ReminderInfo, error)
}

// Outbox is the actor-to-actor send side.
type Outbox interface {
	OutboxClaim(ctx context.Context, p *OutboxClaimParams) ([]OutboxRow, error)
	OutboxDeliver(ctx context.Context, p *OutboxDeliverParams) ([]OutboxResult, error)
}

// Broadcasts is the observable-change side. Every process tails the rows
// (each has its own subscribers), so reading does not claim.
type Broadcasts interface {
	BroadcastRead(ctx context.Context, p *BroadcastReadParams) ([]Broadcast, error)
	// BroadcastLatestID is where a new tail starts.
	BroadcastLatestID(ctx context.Context) (int64, error)
	BroadcastMarkDelivered(ctx context.Context, ids []int64) error
}

// Processes is the process registry.
type Processes interface {
	ProcessRegister(ctx context.Context, p *ProcessInfo) error
	ProcessHeartbeat(ctx context.Context, id string) error
	ProcessStop(ctx context.Context, id string) error
	// ProcessPrune deletes rows of processes stopped, or silent, for
	// longer than olderThan.
	ProcessPrune(ctx context.Context, olderThan time.Duration) (int, error)
	ProcessList(ctx context.Context) ([]ProcessInfo, error)
}

// Admin is the operator and read side.
type Admin interface {
	DeadLetterList(ctx context.Context, p *DeadLetterListParams) ([]DeadLetter, error)
	DeadLetterGet(ctx context.Context, messageID int64) (*DeadLetter, error)
	// DeadLetterRetry enqueues a copy of the dead message at the tail of
	// its actor's mailbox and removes the dead letter.
	DeadLetterRetry(ctx context.Context, messageID int64, mailboxCap int) (EnqueueResult, error)
	DeadLetterDiscard(ctx context.Context, messageID int64) (bool, error)
	// ActorPause holds (or releases) an actor's mailbox: nothing runs
	// while paused.
	ActorPause(ctx context.Context, ref actor.Ref, paused bool) (bool, error)
	// ActorSkipHead dead-letters the actor's earliest unfinished message
	// (not one running under a live lease) and returns its ID.
	ActorSkipHead(ctx context.Context, ref actor.Ref, reason string) (int64, error)
	ActorGet(ctx context.Context, ref actor.Ref) (*ActorInfo, error)
	ActorList(ctx context.Context, p *ActorListParams) ([]ActorInfo, error)
	Prune(ctx context.Context, p *PruneParams) (PruneResult, error)
	// TableCount counts the rows of one of the backend's tables (a name
	// starting ductus_) directly, not through the runtime's bookkeeping:
	// for tests that prove a refused call wrote nothing, and for
	// diagnostics. Any other name is refused with actor.ErrInvalidArguments.
	TableCount(ctx context.Context, table string) (int64, error)
}

// TxOptions configures a caller transaction.
type TxOptions struct {
	// Relaxed trades durability of this commit for latency where the
	// backend can (Postgres synchronous_commit = off): a crash may lose the
	// commit whole, never half of it.
	Relaxed bool
}

// Tx is a caller transaction: opaque outside the adapter that began it.
// The caller passes it to the methods that take one (MailboxEnqueue, the
// integration engine's store), which run their statements in it, and ends
// it; the adapter recovers its own transaction type inside those methods
// (a Tx from another backend is refused).
type Tx interface {
	Commit(ctx context.Context) error
	Rollback(ctx context.Context) error
}

// Signal is a cross-process wake-up.
type Signal struct {
	Work bool // new work was enqueued somewhere
	// Broadcast: observable changes were committed somewhere (a process
	// with realtime subscribers reads them at once, not at its next poll).
	// An older binary ignores it.
	Broadcast bool
	Done      []int64 // these messages finished
	// PKs, when set with Work, names the actors the work went to (an
	// adapter may know them): a process holding them runs them at once,
	// without looking for what is due.
	PKs []int64
}

// Signaler is implemented by backends that wake other processes (Postgres
// LISTEN/NOTIFY, MySQL's notification table). Listen calls fn for every
// signal until ctx ends; it reconnects on its own and returns only when
// ctx is done.
type Signaler interface {
	Listen(ctx context.Context, fn func(Signal)) error
}

// Notifier is implemented by backends that can send a cross-process
// wake-up on its own, outside any transaction. The runtime uses it to tell
// other processes about new work without putting a notification on the
// enqueue's commit path (on Postgres every NOTIFY takes a lock that
// serialises committing transactions); it is debounced, at most one per
// short window.
type Notifier interface {
	Notify(ctx context.Context, s Signal) error
}

// NotifyPacer is implemented by a Notifier whose work signals each cost a
// durable commit of their own (MySQL's signal table, read by polling): the
// runtime sends at most one work signal per NotifyInterval instead of one
// per 2 ms. A listener that reads only every poll interval loses nothing
// when the signals are paced to that interval, and a process telling one
// actor at a time no longer spends a commit in three on notifications.
type NotifyPacer interface {
	NotifyInterval() time.Duration
}
