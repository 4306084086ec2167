package actor

import (
	"context"
	"encoding/json"
	"time"
)

// Client sends to actors. The runtime (runtime/host) implements it.
type Client interface {
	// Tell durably enqueues message for ref and returns its ID once the
	// enqueue has committed.
	Tell(ctx context.Context, ref Ref, message string, args any, opts ...TellOption) (MessageID, error)
	// TellBatch enqueues many messages (to many actors) in one transaction:
	// all are committed or none is. IDs come back in the batch's order.
	TellBatch(ctx context.Context, batch []Envelope) ([]MessageID, error)
	// Ask enqueues message and waits for its durable result. On timeout
	// it returns ErrAskTimeout and the message stays queued; for a
	// dead-lettered message it returns a *DeadLetterError.
	Ask(ctx context.Context, ref Ref, message string, args any, opts ...TellOption) (json.RawMessage, error)
	// Destroy deletes the actor with its state, mailbox, reminders and
	// outboxes, reporting whether it existed. It is idempotent and not
	// allowed from actor context.
	Destroy(ctx context.Context, ref Ref) (bool, error)
}

// Envelope is one message of a TellBatch.
type Envelope struct {
	Ref     Ref
	Message string
	Args    any
	Options []TellOption
}

// TellOptions is the resolved form of the TellOption list.
type TellOptions struct {
	IdempotencyKey string
	AvailableAt    time.Time
	Timeout        time.Duration // Ask only; 0 = the runtime's default
}

// TellOption configures one Tell, TellBatch envelope or Ask.
type TellOption func(*TellOptions)

// WithIdempotencyKey makes the enqueue idempotent per actor: a repeat with
// the same key returns the first message's ID and writes nothing.
func WithIdempotencyKey(key string) TellOption {
	return func(o *TellOptions) { o.IdempotencyKey = key }
}

// AvailableAt delays delivery until t. Messages run in sequence order, so
// a delayed message also holds back later messages to the same actor.
func AvailableAt(t time.Time) TellOption {
	return func(o *TellOptions) { o.AvailableAt = t }
}

// AskTimeout bounds how long Ask waits (the context's deadline also
// applies).
func AskTimeout(d time.Duration) TellOption {
	return func(o *TellOptions) { o.Timeout = d }
}

// ResolveTellOptions applies opts in order.
func ResolveTellOptions(opts []TellOption) TellOptions {
	var o TellOptions
	for _, f := range opts {
		f(&o)
	}
	return o
}

// AskAs is Ask with the result decoded into R.
func AskAs[R any](ctx context.Context, c Client, ref Ref, message string, args any, opts ...TellOption) (R, error) {
	raw, err := c.Ask(ctx, ref, message, args, opts...)
	if err != nil {
		var zero R
		return zero, err
	}
	return Decode[R]("result", raw)
}
