package store

import (
	"time"

	"github.com/ductus/ductus/actor"
)

// EffectClaimParams leases due effects for handlers this process has.
type EffectClaimParams struct {
	Owner string
	TTL   time.Duration
	Limit int
	Names []string // effect names with a registered handler
	// OrderedRun is how many consecutive ordered effects of one actor a
	// claim may take together (the worker runs them one by one and stops at
	// the first failure). 1 keeps strictly one at a time in flight.
	OrderedRun int
}

// Effect is a claimed effect.
type Effect struct {
	ID         int64 // the row, and the claim order
	UUID       string
	ActorPK    int64
	Ref        actor.Ref
	Name       string
	Args       []byte
	Ordered    bool
	Generation int64 // the lease generation that staged it
	// ActorGeneration is the actor's generation when the effect was
	// claimed; larger than Generation when the actor has been activated
	// again since the effect was staged.
	ActorGeneration int64
	Attempt         int // this attempt (1 = first)
	MaxAttempts     int
	OnSuccess       string
	OnFailure       string
	MessageID       int64
	CreatedAt       time.Time
}

// EffectOutcome is the result of one effect attempt.
type EffectOutcome struct {
	ID         int64
	Attempt    int // fences the outcome to the claim that produced it
	Success    bool
	Result     []byte
	Error      string
	Dead       bool          // failure: give up (kept for inspection)
	RetryAfter time.Duration // failure: next attempt at database now + RetryAfter
	// Release returns a claimed effect that was not attempted (an ordered
	// run stopped early, a handler that could not start) without counting
	// an attempt; it is due again at database now + RetryAfter.
	Release bool
	// Outcome is the message delivered to the actor (on-success/on-failure),
	// enqueued in the same transaction; nil for none. It never recreates a
	// destroyed actor.
	Outcome *NewMessage
}

// EffectFinishParams records a batch of outcomes in one transaction.
//
// Outcome messages are enqueued whatever the actor's mailbox holds: each
// stands for work already done outside (the effect is marked done or dead
// in the same transaction), so refusing it would lose it. They are bounded
// by the effects the actor staged, so the mailbox cannot grow without bound
// from them. MailboxCap and SystemAllowance are therefore not applied to
// them; they stay for callers built against the earlier contract.
type EffectFinishParams struct {
	Owner      string
	Outcomes   []EffectOutcome
	MailboxCap int
	// SystemAllowance: kept for compatibility, see above.
	SystemAllowance int
}

// EffectState is an effect row's lifecycle.
type EffectState string

// Effect states.
const (
	EffectPending EffectState = "pending"
	EffectDone    EffectState = "done"
	EffectDead    EffectState = "dead"
)

// EffectInfo is an effect row for inspection.
type EffectInfo struct {
	ID          int64
	UUID        string
	Ref         actor.Ref
	Name        string
	Args        []byte
	Ordered     bool
	State       EffectState
	Attempts    int
	Result      []byte
	Error       string
	Generation  int64
	CreatedAt   time.Time
	FinishedAt  time.Time
	MessageID   int64
	MaxAttempts int
}

// EffectListParams pages effects of one state, newest first.
type EffectListParams struct {
	State    EffectState
	Type     string // "" = all types
	BeforeID int64  // 0 = from the newest
	Limit    int
	// ID keeps one actor's effects (with Type; "" = every actor).
	ID string
	// MessageID keeps the effects one message's turn staged (0 = any).
	MessageID int64
	// Blocking keeps the ordered effects whose last attempt failed (State
	// pending): each is the head its actor's later ordered effects wait
	// behind.
	Blocking bool
}

// ReminderClaimParams leases due reminders.
type ReminderClaimParams struct {
	Owner string
	TTL   time.Duration
	Limit int
	Types []string
}

// Reminder is a claimed, due reminder.
type Reminder struct {
	ID         int64
	ActorPK    int64
	Ref        actor.Ref
	Name       string
	Message    string
	Args       []byte
	Schedule   []byte // actor.Schedule JSON
	NextAt     time.Time
	Occurrence int64     // occurrences fired so far
	Now        time.Time // database now at the claim
}

// ReminderFire delivers one occurrence of a claimed reminder and advances it.
type ReminderFire struct {
	ID         int64
	Occurrence int64 // the occurrence being fired (Reminder.Occurrence + 1)
	Message    NewMessage
	// Next is the following occurrence's nominal time (the schedule's own
	// time, kept as the reminder's next_at so jitter never accumulates);
	// zero means the reminder is done and is deleted.
	Next time.Time
	// Due is when the following occurrence is delivered: Next plus its
	// jitter. Zero means Next.
	Due time.Time
}

// DueAt is when the following occurrence is delivered (Due, or Next when
// Due is zero or earlier than Next).
func (f ReminderFire) DueAt() time.Time {
	if f.Due.Before(f.Next) {
		return f.Next
	}
	return f.Due
}

// ReminderFireParams fires occurrences, each in the same transaction as its
// reminder's advance, after locking the source actor (a destroyed actor is
// never recreated by its reminder).
type ReminderFireParams struct {
	Owner      string
	Fires      []ReminderFire
	MailboxCap int
}

// ReminderInfo is a reminder row for inspection.
type ReminderInfo struct {
	ID       int64
	Ref      actor.Ref
	Name     string
	Message  string
	Args     []byte
	Schedule []byte
	NextAt   time.Time // the next occurrence's nominal time
	// DueAt is when the scheduler next takes the reminder: NextAt plus the
	// occurrence's jitter, or a claim's expiry while a scheduler holds it.
	DueAt      time.Time
	Occurrence int64
}

// OutboxClaimParams leases pending actor-to-actor sends. All pending rows
// of one source are leased together, so sends from one actor reach their
// targets in staging order.
type OutboxClaimParams struct {
	Owner string
	TTL   time.Duration
	Limit int
}

// OutboxRow is a claimed send.
type OutboxRow struct {
	ID      int64
	Source  actor.Ref
	To      actor.Ref
	Message string
	Args    []byte
	Delay   time.Duration
	Attempt int
}

// OutboxDeliverParams enqueues claimed sends into their targets (each row's
// ID is the target's idempotency key, so a row is delivered exactly once)
// and retires the rows, in one transaction. Rows whose target's mailbox is
// full are retried after RetryAfter.
type OutboxDeliverParams struct {
	Owner      string
	Rows       []OutboxRow
	MailboxCap int
	RetryAfter time.Duration
}

// OutboxResult reports one row.
type OutboxResult struct {
	ID        int64
	MessageID int64 // the target's message (0 when not delivered)
	TargetPK  int64 // the target actor (to wake a worker holding it)
	Retry     bool  // the target's mailbox was full
	Gone      bool  // the row was deleted meanwhile (its source destroyed)
}

// Broadcast is a committed observable change.
type Broadcast struct {
	ID           int64
	Ref          actor.Ref
	Name         string
	Value        []byte
	StateVersion int
	CreatedAt    time.Time
}

// BroadcastReadParams tails the broadcast rows after a cursor.
type BroadcastReadParams struct {
	AfterID int64
	Limit   int
}
