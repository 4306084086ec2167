package store

import (
	"time"

	"github.com/ductus/ductus/actor"
)

// NewMessage is one message to enqueue.
type NewMessage struct {
	Ref            actor.Ref
	Name           string
	Args           []byte // canonical JSON (already checked)
	IdempotencyKey string // "" = none; unique per actor incarnation
	AvailableAt    time.Time
	Delay          time.Duration // with a zero AvailableAt: due at database now + Delay
	Ask            bool          // someone waits for the result (cross-process wake-ups)
	// MustExist refuses to create the actor: the runtime's own deliveries
	// (effect outcomes) never recreate a destroyed actor. Such a message is
	// dropped (EnqueueResult.Dropped) instead.
	MustExist bool
	// System messages may use the reserved allowance above the mailbox cap,
	// so a full mailbox cannot block an effect's outcome from arriving.
	System bool
}

// MailboxEnqueueParams is one enqueue transaction.
type MailboxEnqueueParams struct {
	Messages        []NewMessage
	MailboxCap      int // unfinished messages per actor; <= 0 = no cap
	SystemAllowance int // extra room for System messages
	// SkipFull reports a full mailbox per message (EnqueueResult.Full)
	// instead of failing the batch: the runtime's own deliveries retry
	// those later and deliver the rest.
	SkipFull bool
	// Signal asks backends with cross-process wake-ups to tell other
	// processes there is new work.
	Signal bool
}

// EnqueueResult is the outcome for one NewMessage, in input order.
type EnqueueResult struct {
	MessageID int64
	ActorPK   int64
	Seq       int64
	Duplicate bool // the idempotency key was already used; MessageID is the first message's
	Dropped   bool // MustExist and the actor does not exist
	Full      bool // SkipFull and the mailbox was full: nothing written
}

// LeaseRef names one activation lease: the actor incarnation and the
// generation its holder was granted.
type LeaseRef struct {
	ActorPK    int64
	Generation int64
}

// LeaseClaimParams claims activations of actors with due work.
type LeaseClaimParams struct {
	Owner string        // the claiming process
	TTL   time.Duration // lease length from database now
	Limit int           // at most this many actors
	Types []string      // only these actor types (the ones this process runs)
	// PKs, when set, restricts the claim to these actors (a local enqueue
	// names the actor it woke).
	PKs []int64
	// MinWait, when set, claims only actors whose work has been claimable
	// for at least this long (a busy process's claim of actors nobody else
	// has taken, see host's claimStarved).
	MinWait time.Duration
}

// Lease is a claimed activation with the actor's stored state.
type Lease struct {
	LeaseRef
	Ref          actor.Ref
	State        []byte // nil for an actor that never committed
	StateVersion int
	ExpiresAt    time.Time
}

// LeaseRenewParams extends leases the owner still holds.
type LeaseRenewParams struct {
	Owner  string
	TTL    time.Duration
	Leases []LeaseRef
}

// LeaseReleaseParams gives leases back.
type LeaseReleaseParams struct {
	Owner  string
	Leases []LeaseRef
	// Yield moves the actors' waiting work behind work that has waited
	// longer (the fairness yield after a pass budget ran out).
	Yield bool
}

// MessageTakeParams moves up to Limit ready messages of a leased actor to
// claimed, in sequence order, stopping at the first message not yet due.
// Messages left claimed by an earlier generation come first.
type MessageTakeParams struct {
	Owner string
	Lease LeaseRef
	Limit int
}

// Message is a taken message.
type Message struct {
	ID         int64
	Seq        int64
	Name       string
	Args       []byte
	Attempt    int // this delivery's attempt number (1 = first)
	Ask        bool
	EnqueuedAt time.Time
	// AvailableAt is when the message became due: its requested delivery
	// time, or for a reminder occurrence the time the occurrence was due.
	AvailableAt time.Time
}

// Completion records one message that ran successfully.
type Completion struct {
	MessageID int64
	Attempt   int
	Result    []byte
}

// Failure records the message whose handler failed.
type Failure struct {
	MessageID  int64
	Attempt    int
	Error      string
	Dead       bool          // dead-letter it instead of retrying
	RetryAfter time.Duration // back-off from database now (when not Dead)
}

// NewEffect is an effect staged by a turn.
type NewEffect struct {
	UUID        string // the stable effect ID (the idempotency key handlers see)
	Name        string
	Args        []byte
	Ordered     bool
	MaxAttempts int // 0 = retry forever
	OnSuccess   string
	OnFailure   string
	Delay       time.Duration
	MessageID   int64 // the message whose turn staged it
}

// NewSend is an actor-to-actor message staged by a turn.
type NewSend struct {
	To      actor.Ref
	Message string
	Args    []byte
	Delay   time.Duration
}

// ReminderChange sets or cancels a named reminder of the committing actor.
type ReminderChange struct {
	Name     string
	Cancel   bool
	Message  string
	Args     []byte
	Schedule []byte        // the actor.Schedule, JSON
	NextAt   time.Time     // first occurrence, absolute (cron and At)
	NextIn   time.Duration // or: first occurrence at database now + NextIn (Every)
	// Jitter delays the first occurrence's delivery (due_at) past its
	// nominal time (next_at), which stays the schedule's own.
	Jitter time.Duration
}

// NewBroadcast is an observable whose value the turn changed.
type NewBroadcast struct {
	Name         string
	Value        []byte
	StateVersion int
}

// TurnCommitParams commits one turn of up to K messages in one fenced
// transaction. It covers two rows of the transaction map: "commit turns"
// (Completed, with state and staged rows) and "fail a message" (Failed); a
// turn that failed at message i carries 0..i-1 in Completed and i in Failed,
// so both commit atomically.
type TurnCommitParams struct {
	Owner string
	Lease LeaseRef
	// State is the new state; nil leaves the stored state unchanged.
	State        []byte
	StateVersion int
	Completed    []Completion
	Failed       *Failure
	// Returned are taken messages that did not run (after a failure, or
	// when the pass stopped); they go back to ready unchanged.
	Returned   []int64
	Effects    []NewEffect
	Sends      []NewSend
	Reminders  []ReminderChange
	Broadcasts []NewBroadcast
	// SignalDone lists completed or dead messages other processes may be
	// waiting for (Ask); adapters with cross-process wake-ups publish them.
	SignalDone []int64
	// TakeNext, when > 0, also takes up to that many next messages in the
	// same transaction (MessageTake folded into the commit, saving a
	// transaction per batch for a busy actor).
	TakeNext int
}

// TurnCommitResult reports what the commit decided.
type TurnCommitResult struct {
	// Next holds the actor's next messages when TakeNext asked for them.
	Next []Message
}

// MessageState is the lifecycle of a durable message.
type MessageState string

// Message states as Ask sees them.
const (
	MessagePending   MessageState = "pending"
	MessageCompleted MessageState = "completed"
	MessageDead      MessageState = "dead"
	MessageMissing   MessageState = "missing" // never existed, pruned, or its actor destroyed
)

// MessageStatus is a message's durable outcome.
type MessageStatus struct {
	ID     int64
	State  MessageState
	Result []byte
	Error  string
}

// MessageInfo is a full durable message row for inspection.
type MessageInfo struct {
	ID             int64
	Ref            actor.Ref
	Seq            int64
	Name           string
	Args           []byte
	IdempotencyKey string
	State          MessageState
	Attempts       int
	Result         []byte
	Error          string
	EnqueuedAt     time.Time
	AvailableAt    time.Time
	CompletedAt    time.Time
}
