package actor

import (
	"errors"
	"fmt"
	"testing"
)

// TestDeadLetterCause stores each cause the way the runtime does (the
// handler error's text, wrapped in a HandlerError) and reads it back the
// way another process does: only the text survives.
func TestDeadLetterCause(t *testing.T) {
	ref := Ref{Type: "shop.cart", ID: `c"1/2`}
	jsonErr := func() error {
		_, err := Encode("result", []byte(`[[[[1]]]]`), 0, 2)
		return err
	}()
	cases := []struct {
		name  string
		cause error
		is    []error
		as    func(error) error // checks errors.As and the recovered fields
	}{
		{"query mutated", Permanent(fmt.Errorf("%w: query %q of %s", ErrQueryMutated, "peek", ref)), []error{ErrQueryMutated}, nil},
		{"unknown message", fmt.Errorf("%w: type %q has no message %q", ErrUnknownMessage, ref.Type, "x"), []error{ErrUnknownMessage}, nil},
		{"newer state version", fmt.Errorf("OnActivate: %w: stored 3", ErrNewerStateVersion), []error{ErrNewerStateVersion}, nil},
		{"migration", fmt.Errorf("%w: step 1->2 failed", ErrMigration), []error{ErrMigration}, nil},
		{"result too large", &LimitError{What: "result", Size: 300, Limit: 100}, []error{ErrTooLarge}, func(err error) error {
			var le *LimitError
			if !errors.As(err, &le) || le.What != "result" || le.Size != 300 || le.Limit != 100 {
				return fmt.Errorf("LimitError = %+v", le)
			}
			return nil
		}},
		{"state too large", &LimitError{What: "state", Size: 2 << 20, Limit: 1 << 20}, []error{ErrTooLarge}, nil},
		{"result nested too deep", jsonErr, []error{ErrInvalidArguments}, func(err error) error {
			var je *JSONError
			if !errors.As(err, &je) || je.What != "result" || je.Reason != "nested deeper than 2 levels" {
				return fmt.Errorf("JSONError = %+v", je)
			}
			return nil
		}},
		{"mailbox full", &MailboxFullError{Ref: ref, Limit: 7}, []error{ErrMailboxFull}, func(err error) error {
			var mf *MailboxFullError
			if !errors.As(err, &mf) || mf.Ref != ref || mf.Limit != 7 {
				return fmt.Errorf("MailboxFullError = %+v", mf)
			}
			return nil
		}},
		{"forbidden", &ForbiddenError{Operation: OpMessage, Ref: ref, Err: errors.New("not yours")}, []error{ErrForbidden}, func(err error) error {
			var fe *ForbiddenError
			if !errors.As(err, &fe) || fe.Ref != ref || fe.Operation != OpMessage || fe.Err.Error() != "not yours" {
				return fmt.Errorf("ForbiddenError = %+v", fe)
			}
			return nil
		}},
		{"invalid ID is not a JSON error", fmt.Errorf("%w: actor ID is empty", ErrInvalidID), []error{ErrInvalidID}, func(err error) error {
			var je *JSONError
			if errors.As(err, &je) {
				return fmt.Errorf("recovered a JSONError %+v from an invalid ID", je)
			}
			return nil
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			stored := (&HandlerError{Ref: ref, Message: "m", Err: c.cause}).Error()
			err := error(&DeadLetterError{MessageID: 9, Reason: stored})
			if !errors.Is(err, ErrDeadLetter) {
				t.Errorf("not ErrDeadLetter: %v", err)
			}
			for _, want := range c.is {
				if !errors.Is(err, want) {
					t.Errorf("errors.Is(%q, %v) = false", stored, want)
				}
			}
			if errors.Is(err, ErrAskTimeout) {
				t.Errorf("%q matched an unrelated sentinel", stored)
			}
			if c.as != nil {
				if e := c.as(err); e != nil {
					t.Errorf("from %q: %v", stored, e)
				}
			}
		})
	}
}

func TestDeadLetterPlainCause(t *testing.T) {
	err := &DeadLetterError{MessageID: 1, Reason: `actor: t/"x" message "m" failed: poison pill`}
	if causes := err.Unwrap(); len(causes) != 0 {
		t.Fatalf("a plain handler error unwrapped to %v", causes)
	}
	for _, s := range sentinels {
		if errors.Is(err, s) {
			t.Errorf("matches %v", s)
		}
	}
}
