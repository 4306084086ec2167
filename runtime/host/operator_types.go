package host

import (
	"encoding/json"
	"fmt"
	"time"

	"github.com/ductus/ductus/actor"
	"github.com/ductus/ductus/runtime/store"
)

// The operator calls share one shape: a list takes (ctx, a Query struct)
// and returns a slice; a single read takes (ctx, the row's key) and
// returns a pointer; an action takes (ctx, the key, ...) and reports what
// it did. Their types are declared here so a service reads admin data with
// actor/ and runtime/host alone, never the storage seam.

// ActorQuery selects actors of one type for Host.Actors, paged by ID.
type ActorQuery struct {
	Type  string // required: a type of the host's registry
	After string // page after this actor ID ("" = from the first)
	Limit int    // page size (0 = 100)
	// Where keeps actors whose state has Value at Path.
	Where *StateMatch
	// Quiet, when > 0, keeps only actors without pending work (no ready or
	// running messages, no reminders) whose last change is older than Quiet.
	Quiet time.Duration
	// OrphanedAgainst keeps only actors whose ID has no row in an
	// application table of the same database.
	OrphanedAgainst *OwnerTable
}

// StateMatch matches a state value at a dotted JSON path, e.g. Path
// "order.status", Value "submitted" (a string, number, bool or nil).
type StateMatch struct {
	Path  string
	Value any
}

// OwnerTable names an application table whose Column holds live owner IDs
// (plain SQL identifiers).
type OwnerTable struct {
	Table  string
	Column string
}

// ActorInfo is a stored actor as operators see it.
type ActorInfo struct {
	Ref          actor.Ref
	State        json.RawMessage // nil before the first commit
	StateVersion int
	Generation   int64 // lease generation: bumped by every activation
	LeaseOwner   string
	LeaseExpires time.Time
	Paused       bool
	Unfinished   int       // ready and running messages
	HeadDue      time.Time // when the earliest unfinished message is due
	CreatedAt    time.Time
	UpdatedAt    time.Time
}

// EffectState is where an effect is in its life.
type EffectState string

// Effect states.
const (
	EffectPending EffectState = "pending" // waiting or running
	EffectDone    EffectState = "done"
	EffectDead    EffectState = "dead" // gave up: retry or discard it
)

// EffectQuery selects effects in one state for Host.Effects, newest first.
type EffectQuery struct {
	State EffectState // required
	Type  string      // "" = every type
	ID    string      // with Type: one actor's effects
	// Message keeps the effects one message's turn staged (0 = any).
	Message actor.MessageID
	Before  int64 // page before this effect ID (0 = from the newest)
	Limit   int   // page size (0 = 100)
	// Blocking keeps the ordered effects whose last attempt failed (State
	// pending): each holds its actor's later ordered effects until it
	// succeeds or dies. What an operator asks for "what is stuck?".
	Blocking bool
}

// EffectInfo is an effect as operators see it.
type EffectInfo struct {
	ID          int64  // the row (Host.RetryEffect, Host.DiscardEffect)
	StableID    string // the handler's EffectContext.ID
	Ref         actor.Ref
	Name        string
	Args        json.RawMessage
	Ordered     bool
	State       EffectState
	Attempts    int
	MaxAttempts int // 0 = until it succeeds
	Result      json.RawMessage
	Error       string
	Generation  int64           // the fencing token it was staged under
	Message     actor.MessageID // the message whose turn staged it
	CreatedAt   time.Time
	FinishedAt  time.Time
}

// DeadLetterQuery selects dead-lettered messages for Host.DeadLetters,
// oldest first.
type DeadLetterQuery struct {
	Type  string          // "" = every type
	After actor.MessageID // page after this message (0 = from the first)
	Limit int             // page size (0 = 100)
}

// DeadLetter is a message that failed for good (or was skipped).
type DeadLetter struct {
	Message  actor.MessageID
	Ref      actor.Ref
	Seq      int64 // its place in the actor's mailbox
	Name     string
	Args     json.RawMessage
	Error    string
	Attempts int
	DeadAt   time.Time
}

// ReminderQuery selects one actor's reminders for Host.Reminders.
type ReminderQuery struct {
	Ref actor.Ref // required
}

// ReminderInfo is a reminder as operators see it.
type ReminderInfo struct {
	Ref      actor.Ref
	Name     string
	Message  string
	Args     json.RawMessage
	Schedule actor.Schedule
	NextAt   time.Time // the next occurrence's nominal time
	// DueAt is when a scheduler next takes it: NextAt plus its jitter, or
	// a claim's expiry while a scheduler holds it.
	DueAt      time.Time
	Occurrence int64 // occurrences fired so far
}

// ProcessQuery selects runtime processes for Host.Processes.
type ProcessQuery struct {
	Kind    string // "" = every kind (Config.Kind)
	Running bool   // only processes not marked stopped
}

// ProcessInfo is a registered runtime process.
type ProcessInfo struct {
	ID          string // its lease owner
	Kind        string
	Host        string
	PID         int
	Version     string
	Metadata    json.RawMessage
	StartedAt   time.Time
	HeartbeatAt time.Time
	StoppedAt   time.Time // zero while running
}

// BacklogQuery names the scope of Host.Backlog: everything (Type ""),
// every actor of Type (ID ""), or one actor.
type BacklogQuery struct {
	Type string
	ID   string
}

// Backlog is the unfinished work of a scope.
type Backlog struct {
	// Messages are ready or running messages, delayed ones included.
	Messages int64
	// Effects are pending effects the scope's actors staged.
	Effects int64
	// Sends are SendTo messages the scope's actors staged that have not
	// reached their target's mailbox yet.
	Sends int64
	// Incoming are undelivered SendTo messages addressed to the scope's
	// actors (not in Messages until delivered).
	Incoming int64
	// Broadcasts are observable changes no subscriber has received yet.
	// Without subscribers they stay until retention prunes them, so they
	// do not count against Idle.
	Broadcasts int64
	// DeadLetters and DeadEffects wait for an operator; they do not count
	// against Idle.
	DeadLetters int64
	DeadEffects int64
}

// Idle reports whether nothing is left to run in the scope: no message,
// effect or send pending from it or to it.
func (b Backlog) Idle() bool {
	return b.Messages == 0 && b.Effects == 0 && b.Sends == 0 && b.Incoming == 0
}

// ActorBacklog is one actor's row of Host.BacklogByActor: what an
// operator watches per lane. Sends and broadcasts are not in it; Backlog
// has them for one actor.
type ActorBacklog struct {
	// ID is the actor's ID within the type asked for.
	ID string
	// Messages are ready or running messages, delayed ones included.
	Messages int64
	// Effects are pending effects the actor staged.
	Effects int64
	// DeadLetters and DeadEffects wait for an operator.
	DeadLetters int64
	DeadEffects int64
	// Oldest is when the oldest of Messages and Effects was queued (zero
	// when there are none): its age is how long the actor's work waits.
	Oldest time.Time
}

func asActorInfo(a *store.ActorInfo) ActorInfo {
	return ActorInfo{Ref: a.Ref, State: a.State, StateVersion: a.StateVersion, Generation: a.Generation,
		LeaseOwner: a.LeaseOwner, LeaseExpires: a.LeaseExpires, Paused: a.Paused, Unfinished: a.Unfinished,
		HeadDue: a.HeadDue, CreatedAt: a.CreatedAt, UpdatedAt: a.UpdatedAt}
}

func asEffectInfo(e *store.EffectInfo) EffectInfo {
	return EffectInfo{ID: e.ID, StableID: e.UUID, Ref: e.Ref, Name: e.Name, Args: e.Args, Ordered: e.Ordered,
		State: EffectState(e.State), Attempts: e.Attempts, MaxAttempts: e.MaxAttempts, Result: e.Result,
		Error: e.Error, Generation: e.Generation, Message: actor.MessageID(e.MessageID),
		CreatedAt: e.CreatedAt, FinishedAt: e.FinishedAt}
}

func asDeadLetter(d *store.DeadLetter) DeadLetter {
	return DeadLetter{Message: actor.MessageID(d.MessageID), Ref: d.Ref, Seq: d.Seq, Name: d.Name, Args: d.Args,
		Error: d.Error, Attempts: d.Attempts, DeadAt: d.DeadAt}
}

func asReminderInfo(r *store.ReminderInfo) (ReminderInfo, error) {
	out := ReminderInfo{Ref: r.Ref, Name: r.Name, Message: r.Message, Args: r.Args, NextAt: r.NextAt,
		DueAt: r.DueAt, Occurrence: r.Occurrence}
	if err := json.Unmarshal(r.Schedule, &out.Schedule); err != nil {
		return out, fmt.Errorf("reminder %q of %s: stored schedule: %w", r.Name, r.Ref, err)
	}
	return out, nil
}

func asProcessInfo(p *store.ProcessInfo) ProcessInfo {
	return ProcessInfo{ID: p.ID, Kind: p.Kind, Host: p.Host, PID: p.PID, Version: p.Version, Metadata: p.Metadata,
		StartedAt: p.StartedAt, HeartbeatAt: p.HeartbeatAt, StoppedAt: p.StoppedAt}
}

// convert maps a page of store rows to the operator's rows.
func convert[S, T any](rows []S, fn func(*S) T) []T {
	out := make([]T, len(rows))
	for i := range rows {
		out[i] = fn(&rows[i])
	}
	return out
}

func checkLimit(what string, n int) error {
	if n < 0 {
		return fmt.Errorf("%w: %s.Limit %d is negative (0 takes the default, 100)", actor.ErrInvalidArguments, what, n)
	}
	return nil
}
