package store

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"time"
)

// Error is an adapter's error with the purpose of the statement that failed
// and whether retrying can help. Adapters classify driver errors once (one
// mapping function each) and wrap them in Error.
type Error struct {
	Backend   string
	Op        string // the statement's purpose, e.g. "enqueue: allocate sequences"
	Transient bool   // serialization failure, deadlock, lock timeout, lost connection...
	// RolledBack marks a transient error after which nothing of the
	// transaction persisted: the server refused a statement (a
	// serialization failure, a deadlock, a lock or statement timeout, a
	// read-only server) or nothing was sent at all (a refused connection).
	// It is false when the outcome is unknown: a connection lost once the
	// statements, COMMIT among them, had been sent may have committed.
	// Only a RolledBack failure may be retried by a write that is not
	// idempotent (an enqueue without idempotency keys).
	RolledBack bool
	Err        error
}

func (e *Error) Error() string {
	kind := "permanent"
	if e.Transient {
		kind = "transient"
	}
	return fmt.Sprintf("%s: %s (%s): %v", e.Backend, e.Op, kind, e.Err)
}

// Unwrap returns the driver's error.
func (e *Error) Unwrap() error { return e.Err }

// ErrTransient matches every transient store error with errors.Is.
var ErrTransient = errors.New("store: transient error")

// Is makes a transient Error match ErrTransient.
func (e *Error) Is(target error) bool { return target == ErrTransient && e.Transient }

// IsTransient reports whether err is worth retrying.
func IsTransient(err error) bool { return errors.Is(err, ErrTransient) }

// IsRolledBack reports a transient error after which the transaction
// certainly did not commit (see Error.RolledBack).
func IsRolledBack(err error) bool {
	var se *Error
	return errors.As(err, &se) && se.Transient && se.RolledBack
}

// Retry runs fn until it succeeds, fails permanently, or ctx ends, backing
// off (with jitter) between transient failures. Only idempotent or fenced
// operations may be retried this way: a transient failure of a commit can
// mean it committed, so a retried fenced commit may see ErrLostActivation
// or, for enqueue, must carry an idempotency key (else use RetryWhen with
// IsRolledBack).
func Retry(ctx context.Context, attempts int, fn func() error) error {
	return RetryWhen(ctx, attempts, IsTransient, fn)
}

// RetryWhen is Retry for the failures retry accepts (it should accept only
// transient ones); any other error is returned as it is.
func RetryWhen(ctx context.Context, attempts int, retry func(error) bool, fn func() error) error {
	delay := 5 * time.Millisecond
	var err error
	for i := 0; attempts <= 0 || i < attempts; i++ {
		if err = fn(); err == nil || !retry(err) {
			return err
		}
		t := time.NewTimer(delay/2 + rand.N(delay))
		select {
		case <-ctx.Done():
			t.Stop()
			return errors.Join(err, ctx.Err())
		case <-t.C:
		}
		delay = min(delay*2, time.Second)
	}
	return err
}
