package actor

import (
	"errors"
	"fmt"
)

// Sentinel errors. Every error the runtime returns for one of these
// conditions satisfies errors.Is with the matching sentinel; the typed errors
// below add detail and can be read with errors.As.
var (
	// ErrUnknownType: the actor type is not registered.
	ErrUnknownType = errors.New("actor: unknown actor type")
	// ErrUnknownMessage: the type has no message or query of that name.
	ErrUnknownMessage = errors.New("actor: unknown message")
	// ErrInvalidArguments: arguments (or a result, state or staged value)
	// are not acceptable JSON, or do not decode into the handler's type.
	ErrInvalidArguments = errors.New("actor: invalid arguments")
	// ErrInvalidID: the actor ID is empty, not UTF-8 or contains NUL.
	ErrInvalidID = errors.New("actor: invalid actor ID")
	// ErrTooLarge: a value exceeds its configured byte limit.
	ErrTooLarge = errors.New("actor: value too large")
	// ErrMailboxFull: the actor's unfinished messages reached the cap.
	ErrMailboxFull = errors.New("actor: mailbox full")
	// ErrLostActivation: the worker's lease is no longer valid (expired,
	// taken over by a newer generation, or the actor was destroyed), so its
	// commit changed nothing.
	ErrLostActivation = errors.New("actor: lost activation")
	// ErrAskTimeout: Ask stopped waiting. The message stays queued and runs.
	ErrAskTimeout = errors.New("actor: ask timed out")
	// ErrForbidden: an authorization policy refused the operation.
	ErrForbidden = errors.New("actor: forbidden")
	// ErrNewerStateVersion: stored state has a newer version than the code;
	// the activation is refused before any hook or message runs.
	ErrNewerStateVersion = errors.New("actor: stored state version is newer than the code")
	// ErrMigration: a state migration step is missing, failed or produced
	// something that is not JSON.
	ErrMigration = errors.New("actor: state migration failed")
	// ErrQueryMutated: a query changed the actor's serialized state.
	ErrQueryMutated = errors.New("actor: query changed state")
	// ErrActorContext: the operation is not allowed from inside a turn
	// (Ask and Destroy from actor code).
	ErrActorContext = errors.New("actor: not allowed from actor context")
	// ErrDeadLetter: the message exhausted its retries and was dead-lettered.
	ErrDeadLetter = errors.New("actor: message dead-lettered")
	// ErrNotFound: the message, actor or dead letter does not exist.
	ErrNotFound = errors.New("actor: not found")
	// ErrInvalidDefinition: an actor type definition is refused at
	// registration.
	ErrInvalidDefinition = errors.New("actor: invalid actor type definition")
	// ErrClosed: the runtime is shutting down or closed.
	ErrClosed = errors.New("actor: runtime closed")
)

// LimitError reports a value over its configured byte limit.
type LimitError struct {
	What  string // "actor ID", "arguments", "result", "state", ...
	Size  int    // the value's size in bytes
	Limit int    // the configured limit in bytes
}

func (e *LimitError) Error() string {
	return fmt.Sprintf("actor: %s is %d bytes, over the limit of %d", e.What, e.Size, e.Limit)
}

// Is makes a LimitError match ErrTooLarge.
func (e *LimitError) Is(target error) bool { return target == ErrTooLarge }

// JSONError reports a value refused by the strict JSON rules.
type JSONError struct {
	What   string // "arguments", "result", "state", ...
	Reason string // what is wrong, e.g. `duplicate key "a"`
}

func (e *JSONError) Error() string { return "actor: invalid " + e.What + ": " + e.Reason }

// Is makes a JSONError match ErrInvalidArguments.
func (e *JSONError) Is(target error) bool { return target == ErrInvalidArguments }

// MailboxFullError names the actor whose mailbox is full.
type MailboxFullError struct {
	Ref   Ref
	Limit int
}

func (e *MailboxFullError) Error() string {
	return fmt.Sprintf("actor: mailbox of %s is full (%d unfinished messages)", e.Ref, e.Limit)
}

// Is makes a MailboxFullError match ErrMailboxFull.
func (e *MailboxFullError) Is(target error) bool { return target == ErrMailboxFull }

// DeadLetterError is what Ask returns for a dead-lettered message: the
// message ID and the text of the last error the handler returned (all a
// dead letter stores).
type DeadLetterError struct {
	MessageID MessageID
	Reason    string
}

func (e *DeadLetterError) Error() string {
	return fmt.Sprintf("actor: message %d dead-lettered: %s", e.MessageID, e.Reason)
}

// Is makes a DeadLetterError match ErrDeadLetter.
func (e *DeadLetterError) Is(target error) bool { return target == ErrDeadLetter }

// Unwrap returns the causes recovered from Reason, so errors.Is and
// errors.As see why the message died in every process, not only the one
// that ran it: each sentinel whose text Reason contains (ErrQueryMutated,
// ErrUnknownMessage, ...), and a *LimitError, *JSONError,
// *MailboxFullError or *ForbiddenError rebuilt from its text. A plain
// handler error ("poison pill") unwraps to nothing.
func (e *DeadLetterError) Unwrap() []error { return causesFromText(e.Reason) }

// ForbiddenError carries the policy's reason for refusing an operation.
type ForbiddenError struct {
	Operation Operation
	Ref       Ref
	Err       error // the policy's error
}

func (e *ForbiddenError) Error() string {
	return fmt.Sprintf("actor: %s on %s forbidden: %v", e.Operation, e.Ref, e.Err)
}

// Is makes a ForbiddenError match ErrForbidden.
func (e *ForbiddenError) Is(target error) bool { return target == ErrForbidden }

// Unwrap returns the policy's error.
func (e *ForbiddenError) Unwrap() error { return e.Err }

// HandlerError is a failure returned (or panicked) by actor code. The
// runtime retries the message with back-off and dead-letters it after the
// retry limit.
type HandlerError struct {
	Ref     Ref
	Message string
	Err     error
	Panic   bool // the handler panicked; Err holds the recovered value
}

func (e *HandlerError) Error() string {
	verb := "failed"
	if e.Panic {
		verb = "panicked"
	}
	return fmt.Sprintf("actor: %s message %q %s: %v", e.Ref, e.Message, verb, e.Err)
}

// Unwrap returns the handler's error.
func (e *HandlerError) Unwrap() error { return e.Err }

// Permanent marks a handler error as not worth retrying: the runtime
// dead-letters the message at once instead of backing off.
func Permanent(err error) error { return &permanentError{err} }

type permanentError struct{ err error }

func (e *permanentError) Error() string { return e.err.Error() }
func (e *permanentError) Unwrap() error { return e.err }

// IsPermanent reports whether err (or an error it wraps) was marked with
// Permanent, or is a bad-input error that retrying cannot fix.
func IsPermanent(err error) bool {
	var p *permanentError
	if errors.As(err, &p) {
		return true
	}
	return errors.Is(err, ErrInvalidArguments) || errors.Is(err, ErrUnknownMessage) ||
		errors.Is(err, ErrQueryMutated) || errors.Is(err, ErrTooLarge)
}
