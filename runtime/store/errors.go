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
	Err       error
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

// Retry runs fn until it succeeds, fails permanently, or ctx ends, backing
// off (with jitter) between transient failures. Only idempotent or fenced
// operations may be retried this way: a transient failure of a commit can
// mean it committed, so a retried fenced commit may see ErrLostActivation
// or, for enqueue, must carry an idempotency key.
func Retry(ctx context.Context, attempts int, fn func() error) error {
	delay := 5 * time.Millisecond
	var err error
	for i := 0; attempts <= 0 || i < attempts; i++ {
		if err = fn(); err == nil || !IsTransient(err) {
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
