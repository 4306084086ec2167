package actor

import "context"

// Operation names what an authorization policy is asked about.
type Operation string

// The five operations, one policy each.
const (
	OpMessage        Operation = "message"
	OpQuery          Operation = "query"
	OpDestroy        Operation = "destroy"
	OpSubscription   Operation = "subscription"
	OpAdministration Operation = "administration"
)

// Request is what a policy sees.
type Request struct {
	Operation Operation
	Ref       Ref
	Message   string  // the message or query (OpMessage, OpQuery)
	Action    string  // the administrative action, e.g. "dead_letter.retry"
	Caller    any     // the request context set with WithCaller; nil if none
	System    *System // set for the runtime's own deliveries
}

// System identifies a delivery the runtime makes on its own behalf, or a
// request actor code makes from inside a turn, so a policy can recognise
// (and usually allow) it. Via says which.
type System struct {
	Via    string // one of the Via constants
	Source Ref    // the actor whose staged work or code this is
}

// The kinds of System request. Staged deliveries are authorized when the
// turn stages them (the handler's call fails if refused), not again when
// they are delivered.
const (
	// ViaSend: a message staged with Context.SendTo.
	ViaSend = "send"
	// ViaReminder: a reminder set with Context.Schedule (its occurrences
	// are the message it names).
	ViaReminder = "reminder"
	// ViaEffectOutcome: the OnSuccess / OnFailure message of an effect
	// staged with Context.Emit, delivered back to Source.
	ViaEffectOutcome = "effect_outcome"
	// ViaDeadLetterRetry: an operator's retry of a dead letter re-enqueues
	// it to Source; Caller is the operator (the administration policy has
	// already allowed the action).
	ViaDeadLetterRetry = "dead_letter_retry"
	// ViaTurn: a Client call (Tell, TellBatch) made by actor code from
	// inside a turn of Source. The turn's context carries no caller (a
	// message does not remember who sent it), so such a call is the
	// actor's own request rather than an anonymous one.
	ViaTurn = "turn"
)

// Policy decides one operation; a nil Policy allows everything. Return an
// error to refuse: the caller gets a *ForbiddenError wrapping it.
type Policy func(ctx context.Context, req Request) error

// Policies holds the five authorization hooks. Actor IDs, message IDs and
// stream names are never treated as authorization by themselves.
type Policies struct {
	Message        Policy
	Query          Policy
	Destroy        Policy
	Subscription   Policy
	Administration Policy
}

// Authorize runs the policy for req.Operation, filling Caller and System
// from ctx. A ctx of a running turn without a System of its own gets
// System{Via: ViaTurn, Source: the running actor}.
func (p Policies) Authorize(ctx context.Context, req Request) error {
	var pol Policy
	switch req.Operation {
	case OpMessage:
		pol = p.Message
	case OpQuery:
		pol = p.Query
	case OpDestroy:
		pol = p.Destroy
	case OpSubscription:
		pol = p.Subscription
	case OpAdministration:
		pol = p.Administration
	}
	if pol == nil {
		return nil
	}
	if req.Caller == nil {
		req.Caller, _ = CallerFrom(ctx)
	}
	if req.System == nil {
		if s, ok := SystemFrom(ctx); ok {
			req.System = &s
		} else if from, ok := InTurn(ctx); ok {
			req.System = &System{Via: ViaTurn, Source: from}
		}
	}
	if err := pol(ctx, req); err != nil {
		return &ForbiddenError{Operation: req.Operation, Ref: req.Ref, Err: err}
	}
	return nil
}

type callerKey struct{}
type systemKey struct{}

// WithCaller carries a request context (who is calling: a user, a token,
// a tenant) to the policies.
func WithCaller(ctx context.Context, caller any) context.Context {
	return context.WithValue(ctx, callerKey{}, caller)
}

// CallerFrom returns the request context set by WithCaller.
func CallerFrom(ctx context.Context) (any, bool) {
	c := ctx.Value(callerKey{})
	return c, c != nil
}

// WithSystem marks ctx as the runtime's own delivery.
func WithSystem(ctx context.Context, s System) context.Context {
	return context.WithValue(ctx, systemKey{}, s)
}

// SystemFrom returns the system context set by WithSystem.
func SystemFrom(ctx context.Context) (System, bool) {
	s, ok := ctx.Value(systemKey{}).(System)
	return s, ok
}
