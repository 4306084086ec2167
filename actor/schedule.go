package actor

import (
	"fmt"
	"time"
)

// CatchUp says what a recurring reminder does about occurrences missed while
// no scheduler ran.
type CatchUp string

const (
	// CatchUpLatest delivers one occurrence, then advances past now.
	CatchUpLatest CatchUp = "latest"
	// CatchUpAll delivers every missed occurrence, one per scheduler pass.
	CatchUpAll CatchUp = "all"
)

// Schedule is when a reminder fires: once At a time, Every interval, or by a
// Cron expression in a time zone. Exactly one of At, Every and Cron is set.
type Schedule struct {
	At       time.Time     `json:"at,omitzero"`
	Every    time.Duration `json:"every,omitempty"`
	Start    time.Time     `json:"start,omitzero"` // first occurrence of Every (default: now + Every)
	Cron     string        `json:"cron,omitempty"`
	TimeZone string        `json:"tz,omitempty"` // IANA zone for Cron; "" = the server's local zone
	Jitter   time.Duration `json:"jitter,omitempty"`
	CatchUp  CatchUp       `json:"catch_up,omitempty"`
}

// At returns a one-shot schedule.
func At(t time.Time) Schedule { return Schedule{At: t} }

// Every returns a recurring schedule with the given interval.
func Every(d time.Duration) Schedule { return Schedule{Every: d} }

// Cron returns a schedule from a standard five-field cron expression (or a
// descriptor such as @daily), evaluated in the named time zone ("" = local).
func Cron(expr, timeZone string) Schedule { return Schedule{Cron: expr, TimeZone: timeZone} }

// Validate checks the schedule's shape (the cron syntax is checked by the
// runtime, which owns the cron parser).
func (s Schedule) Validate() error {
	n := 0
	if !s.At.IsZero() {
		n++
	}
	if s.Every != 0 {
		n++
	}
	if s.Cron != "" {
		n++
	}
	switch {
	case n != 1:
		return fmt.Errorf("%w: a schedule needs exactly one of At, Every or Cron", ErrInvalidArguments)
	case s.Every < 0:
		return fmt.Errorf("%w: schedule interval %s is negative", ErrInvalidArguments, s.Every)
	case s.Every > 0 && s.Every < time.Millisecond:
		return fmt.Errorf("%w: schedule interval %s is under 1ms", ErrInvalidArguments, s.Every)
	case s.Jitter < 0:
		return fmt.Errorf("%w: schedule jitter %s is negative", ErrInvalidArguments, s.Jitter)
	case s.CatchUp != "" && s.CatchUp != CatchUpLatest && s.CatchUp != CatchUpAll:
		return fmt.Errorf("%w: catch-up policy %q is not latest or all", ErrInvalidArguments, s.CatchUp)
	case s.TimeZone != "" && s.Cron == "":
		return fmt.Errorf("%w: a time zone applies only to a cron schedule", ErrInvalidArguments)
	}
	if s.TimeZone != "" {
		if _, err := time.LoadLocation(s.TimeZone); err != nil {
			return fmt.Errorf("%w: time zone %q: %v", ErrInvalidArguments, s.TimeZone, err)
		}
	}
	return nil
}

// Recurring reports whether the schedule fires more than once.
func (s Schedule) Recurring() bool { return s.At.IsZero() }
