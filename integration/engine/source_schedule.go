package engine

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/ductus/ductus/actor"
	"github.com/ductus/ductus/integration/config"
	"github.com/ductus/ductus/integration/msgstore"
	"github.com/ductus/ductus/runtime/host"
)

// scheduleState is a schedule actor's memory: the schedule it armed, the
// last run's due time, and the run still in flight (an occurrence marker
// until its message is stored, then the message's ID).
type scheduleState struct {
	Spec     string    `json:"spec"`
	Previous time.Time `json:"previous,omitzero"`
	Pending  string    `json:"pending,omitempty"`
}

type armArgs struct {
	Spec     string          `json:"spec"`
	Schedule actor.Schedule  `json:"schedule"`
	Outcome  json.RawMessage `json:"-"`
}

// runPayload is what a schedule run stores: {"due", "previous"}.
type runPayload struct {
	Due      time.Time  `json:"due"`
	Previous *time.Time `json:"previous"`
}

type runArgs struct {
	Interface string     `json:"interface"`
	Due       time.Time  `json:"due"`
	Previous  *time.Time `json:"previous"`
}

const pendingOccurrence = "occurrence:"

// scheduleDefinition is the schedule actor (ID: the interface): a reminder
// fires "run"; each run is stored as an ordinary message of the interface
// by an ordered effect (idempotent by its due time), unless the previous
// run is still pending, in which case this one is skipped.
func (e *Engine) scheduleDefinition() *actor.Type[scheduleState] {
	return &actor.Type[scheduleState]{
		Name: scheduleType,
		Messages: map[string]actor.Handler[scheduleState]{
			"arm": actor.Message(func(c *actor.Context, s *scheduleState, a armArgs) (bool, error) {
				if s.Spec == a.Spec {
					return false, nil // armed already: the reminder (and its catch-up) stands
				}
				s.Spec = a.Spec
				return true, c.Schedule("run", a.Schedule, "run", nil)
			}),
			"run": actor.Message(func(c *actor.Context, s *scheduleState, _ struct{}) (string, error) {
				due := c.Info().Due
				if busy, why := e.runInFlight(c, s); busy {
					c.Logger().Warn("schedule: the previous run is still pending; skipping this one", "due", due, "pending", why)
					return "skipped", nil
				}
				var prev *time.Time
				if !s.Previous.IsZero() {
					p := s.Previous
					prev = &p
				}
				if err := c.Emit("ductus.schedule.run", runArgs{Interface: c.Ref().ID, Due: due, Previous: prev}, actor.OnSuccess("ran")); err != nil {
					return "", err
				}
				s.Previous = due
				s.Pending = pendingOccurrence + due.Format(time.RFC3339Nano)
				return "run", nil
			}),
			"ran": actor.Message(func(c *actor.Context, s *scheduleState, o struct {
				Result struct {
					ID string `json:"id"`
				} `json:"result"`
			}) (any, error) {
				if strings.HasPrefix(s.Pending, pendingOccurrence) {
					s.Pending = o.Result.ID
				}
				return nil, nil
			}),
		},
	}
}

// runInFlight reports whether the previous run has not settled yet.
func (e *Engine) runInFlight(ctx context.Context, s *scheduleState) (bool, string) {
	switch {
	case s.Pending == "":
		return false, ""
	case strings.HasPrefix(s.Pending, pendingOccurrence):
		return true, "its message is not stored yet"
	}
	ds, err := e.ms.Deliveries(ctx, s.Pending)
	if err != nil {
		return true, err.Error()
	}
	if len(ds) > 0 && msgstore.Settled(ds) == msgstore.DeliveryPending {
		return true, "message " + s.Pending
	}
	s.Pending = ""
	return false, ""
}

// scheduleRun stores one run's message ({"due","previous"}); its origin is
// the due time, so a retried effect stores it once.
func (e *Engine) scheduleRun(ctx context.Context, _ host.EffectContext, raw json.RawMessage) (any, error) {
	var a runArgs
	if err := json.Unmarshal(raw, &a); err != nil {
		return nil, actor.Permanent(err)
	}
	if e.drain.gateClosed() {
		// A schedule is a source: its run waits for the gates to open,
		// untried, its attempts kept.
		return nil, &host.NotAttemptedError{RetryAfter: drainPoll, Err: ErrDraining}
	}
	payload, err := json.Marshal(runPayload{Due: a.Due.UTC(), Previous: a.Previous})
	if err != nil {
		return nil, actor.Permanent(err)
	}
	stored, err := e.Intake(ctx, a.Interface, []Record{{Payload: payload, Origin: "schedule:" + a.Due.UTC().Format(time.RFC3339Nano),
		Meta: map[string]any{"source": "schedule"}}}, nil)
	if err != nil {
		return nil, err
	}
	return map[string]string{"id": stored[0].ID}, nil
}

// armSchedule tells an interface's schedule actor its schedule (idempotent:
// an unchanged schedule keeps its reminder, so runs missed while the engine
// was down collapse into one at start).
func (e *Engine) armSchedule(ctx context.Context, in *config.Interface) error {
	src := in.Source.Schedule
	var s actor.Schedule
	var spec string
	if src.Cron != "" {
		tz := ""
		if src.Location != nil && src.Location != time.Local {
			tz = src.Location.String()
		}
		s = actor.Cron(src.Cron, tz)
		spec = "cron:" + src.Cron + "@" + tz
	} else {
		s = actor.Schedule{Every: src.Every, Start: time.Now()} // every: a run at start, then each interval
		spec = "every:" + src.Every.String()
	}
	s.CatchUp = actor.CatchUpLatest
	_, err := e.rt.Tell(ctx, actor.Ref{Type: scheduleType, ID: in.Name}, "arm", armArgs{Spec: spec, Schedule: s})
	if err != nil {
		return fmt.Errorf("interface %s: arm the schedule: %w", in.Name, err)
	}
	return nil
}
