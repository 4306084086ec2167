package actor

import (
	"context"
	"fmt"
	"log/slog"
	"time"
)

// TurnInfo describes the message a turn is running.
type TurnInfo struct {
	Ref        Ref
	MessageID  MessageID
	Message    string // the message or query name
	Sequence   int64  // the message's per-actor sequence number
	Attempt    int    // 1 for the first delivery, then 2, 3, ...
	Generation int64  // the activation lease generation (the fencing token)
	Query      bool
	// Due is when the message became due: when it was enqueued, its
	// requested delivery time, or for a reminder occurrence the time the
	// occurrence was scheduled for (earlier than now after downtime).
	Due time.Time
}

// Checker validates what a turn stages against the registered types; the
// runtime supplies it so bad staging fails inside the handler, before
// anything is written.
type Checker interface {
	// CheckSend validates a message staged for to (its type, message and
	// arguments; nil args are the runtime's own) and authorizes it as the
	// system delivery sys describes.
	CheckSend(ctx context.Context, sys System, to Ref, message string, args []byte) error
	CheckEffect(name string) error
	CheckSchedule(s Schedule) error
	Limits() Limits
}

// Context is what actor code receives for one turn. It embeds the turn's
// context.Context (cancelled when the runtime shuts down past its grace
// period) and collects what the turn stages; staged work is committed
// atomically with the turn's state, or discarded if the turn fails.
type Context struct {
	context.Context
	info    TurnInfo
	logger  *slog.Logger
	checker Checker
	staged  Staged
}

type turnKey struct{}

// NewContext is called by the runtime to build the context of one turn.
// Actor code never needs it.
func NewContext(parent context.Context, info TurnInfo, logger *slog.Logger, checker Checker) *Context {
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	return &Context{
		Context: context.WithValue(parent, turnKey{}, info.Ref),
		info:    info,
		logger:  logger.With("actor", info.Ref.String(), "message", info.Message),
		checker: checker,
	}
}

// InTurn reports whether ctx belongs to a running turn. The client refuses
// Ask and Destroy from actor context: a synchronous wait on another actor
// could deadlock two actors waiting on each other.
func InTurn(ctx context.Context) (Ref, bool) {
	r, ok := ctx.Value(turnKey{}).(Ref)
	return r, ok
}

// Info describes the running message.
func (c *Context) Info() TurnInfo { return c.info }

// Ref is the running actor's address.
func (c *Context) Ref() Ref { return c.info.Ref }

// Logger returns a logger tagged with the actor and message.
func (c *Context) Logger() *slog.Logger { return c.logger }

// Staged returns what the turn has staged so far. The runtime reads it after
// the handler returns.
func (c *Context) Staged() *Staged { return &c.staged }

// Staged is the durable work one turn stages, committed with its state.
type Staged struct {
	Effects   []StagedEffect
	Sends     []StagedSend
	Reminders []StagedReminder
}

// Empty reports whether nothing was staged.
func (s *Staged) Empty() bool {
	return len(s.Effects) == 0 && len(s.Sends) == 0 && len(s.Reminders) == 0
}

// StagedEffect is an effect staged by Emit.
type StagedEffect struct {
	Name      string
	Args      []byte // canonical JSON
	OnSuccess string // message delivered back on success ("" = none)
	OnFailure string // message delivered back when the effect dies ("" = none)
	Delay     time.Duration
}

// StagedSend is an actor-to-actor message staged by SendTo.
type StagedSend struct {
	To      Ref
	Message string
	Args    []byte
	Delay   time.Duration
}

// StagedReminder sets (or, with Cancel, removes) a named reminder.
type StagedReminder struct {
	Name     string
	Cancel   bool
	Schedule Schedule
	Message  string
	Args     []byte
}

// EffectOption configures one staged effect.
type EffectOption func(*StagedEffect)

// OnSuccess names a message of this actor that receives the effect's
// outcome ({"effect_id", "result"}) when the handler succeeds.
func OnSuccess(message string) EffectOption {
	return func(e *StagedEffect) { e.OnSuccess = message }
}

// OnFailure names a message of this actor that receives the effect's
// outcome ({"effect_id", "error"}) when the effect is dead-lettered.
func OnFailure(message string) EffectOption {
	return func(e *StagedEffect) { e.OnFailure = message }
}

// EffectDelay postpones the effect's first attempt.
func EffectDelay(d time.Duration) EffectOption {
	return func(e *StagedEffect) { e.Delay = d }
}

// Emit stages the effect name with args. Nothing runs unless the turn
// commits; then the runtime runs the handler registered for name (in the
// host's Config.Effects) outside any transaction, at least once, with the
// effect's stable ID as its idempotency key and the turn's lease generation
// as a fencing token.
//
// How it runs is set where the name is registered, not here: whether it is
// ordered (an actor's ordered effects run one at a time in the order its
// turns staged them, a failing one holding back the later ones until it
// succeeds or is dead-lettered; unordered ones run concurrently), its retry
// policy and its timeout. Every process that runs this actor type must
// register the name: Emit fails with ErrInvalidArguments for a name this
// process has no handler for, so the turn fails rather than stage an effect
// no one may be able to run.
func (c *Context) Emit(name string, args any, opts ...EffectOption) error {
	if c.info.Query {
		return fmt.Errorf("%w: a query cannot emit effects", ErrQueryMutated)
	}
	lim := c.limits()
	raw, err := Encode("effect arguments", args, lim.EffectBytes, lim.Depth)
	if err != nil {
		return err
	}
	if c.checker != nil {
		if err := c.checker.CheckEffect(name); err != nil {
			return err
		}
	}
	e := StagedEffect{Name: name, Args: raw}
	for _, o := range opts {
		o(&e)
	}
	for _, m := range []string{e.OnSuccess, e.OnFailure} {
		if m != "" && c.checker != nil {
			if err := c.checker.CheckSend(c, System{Via: ViaEffectOutcome, Source: c.info.Ref}, c.info.Ref, m, nil); err != nil {
				return fmt.Errorf("effect %q outcome message: %w", name, err)
			}
		}
	}
	c.staged.Effects = append(c.staged.Effects, e)
	return nil
}

// SendOption configures one staged actor-to-actor send.
type SendOption func(*StagedSend)

// SendDelay postpones the target's delivery by d after the send is
// delivered into its mailbox.
func SendDelay(d time.Duration) SendOption {
	return func(s *StagedSend) { s.Delay = d }
}

// SendTo stages message for another actor (or this one). After this turn
// commits, the outbox worker enqueues it into the target exactly once; this
// actor never waits for the target.
func (c *Context) SendTo(to Ref, message string, args any, opts ...SendOption) error {
	if c.info.Query {
		return fmt.Errorf("%w: a query cannot send messages", ErrQueryMutated)
	}
	lim := c.limits()
	if err := ValidateID(to.ID, lim.IDBytes); err != nil {
		return err
	}
	raw, err := Encode("arguments", args, lim.ArgumentsBytes, lim.Depth)
	if err != nil {
		return err
	}
	if c.checker != nil {
		if err := c.checker.CheckSend(c, System{Via: ViaSend, Source: c.info.Ref}, to, message, raw); err != nil {
			return err
		}
	}
	s := StagedSend{To: to, Message: message, Args: raw}
	for _, o := range opts {
		o(&s)
	}
	c.staged.Sends = append(c.staged.Sends, s)
	return nil
}

// Schedule sets the named reminder of this actor: each occurrence delivers
// message with args as an ordinary mailbox message. A reminder of the same
// name is replaced.
func (c *Context) Schedule(name string, s Schedule, message string, args any) error {
	if c.info.Query {
		return fmt.Errorf("%w: a query cannot schedule reminders", ErrQueryMutated)
	}
	if name == "" {
		return fmt.Errorf("%w: reminder name is empty", ErrInvalidArguments)
	}
	lim := c.limits()
	raw, err := Encode("reminder arguments", args, lim.ReminderBytes, lim.Depth)
	if err != nil {
		return err
	}
	if err := s.Validate(); err != nil {
		return err
	}
	if c.checker != nil {
		if err := c.checker.CheckSchedule(s); err != nil {
			return err
		}
		if err := c.checker.CheckSend(c, System{Via: ViaReminder, Source: c.info.Ref}, c.info.Ref, message, raw); err != nil {
			return fmt.Errorf("reminder %q: %w", name, err)
		}
	}
	c.staged.Reminders = append(c.staged.Reminders, StagedReminder{Name: name, Schedule: s, Message: message, Args: raw})
	return nil
}

// CancelReminder removes the named reminder when the turn commits. Cancelling
// a reminder that does not exist is not an error.
func (c *Context) CancelReminder(name string) error {
	if c.info.Query {
		return fmt.Errorf("%w: a query cannot cancel reminders", ErrQueryMutated)
	}
	c.staged.Reminders = append(c.staged.Reminders, StagedReminder{Name: name, Cancel: true})
	return nil
}

func (c *Context) limits() Limits {
	if c.checker != nil {
		return c.checker.Limits()
	}
	return DefaultLimits()
}
