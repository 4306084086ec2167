package host

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/google/uuid"
	"github.com/robfig/cron/v3"

	"github.com/ductus/ductus/actor"
	"github.com/ductus/ductus/runtime/store"
)

// checker validates what turns stage (actor.Checker), so bad staging fails
// the handler's call, before anything is written.
type checker struct{ h *Host }

func (c *checker) Limits() actor.Limits { return c.h.cfg.Limits }

func (c *checker) CheckSend(ctx context.Context, sys actor.System, to actor.Ref, message string, args []byte) error {
	def, err := c.h.reg.Lookup(to.Type)
	if err != nil {
		return err
	}
	if _, ok := def.Spec().Messages[message]; !ok {
		return fmt.Errorf("%w: type %q has no message %q", actor.ErrUnknownMessage, to.Type, message)
	}
	if args != nil {
		if err := def.CheckArguments(message, args); err != nil {
			return err
		}
	}
	return c.h.authorizeDelivery(ctx, sys, def, to, message)
}

// authorizeDelivery asks the message (or query) policy about a delivery
// the runtime makes on its own behalf, marked with sys so the policy can
// tell it from a client's request; the caller of ctx, if any, stays.
func (h *Host) authorizeDelivery(ctx context.Context, sys actor.System, def actor.Definition, to actor.Ref, message string) error {
	op := actor.OpMessage
	if def.Spec().Messages[message] {
		op = actor.OpQuery
	}
	return h.cfg.Policies.Authorize(actor.WithSystem(ctx, sys), actor.Request{Operation: op, Ref: to, Message: message})
}

func (c *checker) CheckEffect(name string) error {
	if _, ok := c.h.cfg.Effects[name]; !ok {
		return fmt.Errorf("%w: no handler is registered for effect %q", actor.ErrInvalidArguments, name)
	}
	return nil
}

func (c *checker) CheckSchedule(s actor.Schedule) error {
	if s.Cron == "" {
		return nil
	}
	_, err := parseCron(s)
	return err
}

var cronParser = cron.NewParser(cron.Minute | cron.Hour | cron.Dom | cron.Month | cron.Dow | cron.Descriptor)

func parseCron(s actor.Schedule) (cron.Schedule, error) {
	sched, err := cronParser.Parse(s.Cron)
	if err != nil {
		return nil, fmt.Errorf("%w: cron %q: %v", actor.ErrInvalidArguments, s.Cron, err)
	}
	return sched, nil
}

// nextOccurrence computes the nominal occurrence after from (database
// time): the schedule's own time, without jitter, so a chain of occurrences
// keeps its phase however late each one was delivered. Zero means the
// schedule has no further occurrence.
func nextOccurrence(s actor.Schedule, from time.Time) (time.Time, error) {
	switch {
	case !s.At.IsZero():
		return time.Time{}, nil // one-shot: fired once
	case s.Every > 0:
		return from.Add(s.Every), nil
	case s.Cron != "":
		sched, err := parseCron(s)
		if err != nil {
			return time.Time{}, err
		}
		loc := time.Local
		if s.TimeZone != "" {
			if loc, err = time.LoadLocation(s.TimeZone); err != nil {
				return time.Time{}, err
			}
		}
		return sched.Next(from.In(loc)), nil // zero when the expression has no further time
	}
	return time.Time{}, nil
}

// jitter is one occurrence's delivery delay past its nominal time.
func jitter(j time.Duration) time.Duration {
	if j <= 0 {
		return 0
	}
	return rand.N(j)
}

// stage turns what a message's turn staged into the commit's rows.
func (h *Host) stage(p *store.TurnCommitParams, a *activation, m store.Message, st *actor.Staged) {
	for _, e := range st.Effects {
		opt := h.cfg.Effects[e.Name]
		p.Effects = append(p.Effects, store.NewEffect{
			UUID: uuid.Must(uuid.NewV7()).String(), Name: e.Name, Args: e.Args, Ordered: opt.Ordered,
			MaxAttempts: opt.maxAttempts(), OnSuccess: e.OnSuccess, OnFailure: e.OnFailure, Delay: e.Delay, MessageID: m.ID,
		})
	}
	for _, s := range st.Sends {
		p.Sends = append(p.Sends, store.NewSend{To: s.To, Message: s.Message, Args: s.Args, Delay: s.Delay})
	}
	for _, r := range st.Reminders {
		if r.Cancel {
			p.Reminders = append(p.Reminders, store.ReminderChange{Name: r.Name, Cancel: true})
			continue
		}
		sched, _ := json.Marshal(r.Schedule)
		rc := store.ReminderChange{Name: r.Name, Message: r.Message, Args: r.Args, Schedule: sched, Jitter: jitter(r.Schedule.Jitter)}
		switch s := r.Schedule; {
		case !s.At.IsZero():
			rc.NextAt = s.At
		case s.Every > 0 && !s.Start.IsZero():
			rc.NextAt = s.Start
		case s.Every > 0:
			rc.NextIn = s.Every
		default:
			next, err := nextOccurrence(s, h.clock.now())
			if err != nil || next.IsZero() {
				continue // validated at staging; an expression with no future time never fires
			}
			rc.NextAt = next
		}
		p.Reminders = append(p.Reminders, rc)
	}
}

// authorizeRetry asks the message policy about an operator's retry of a
// dead letter, a delivery to its actor on the operator's behalf. A type
// this process does not run has no policy decision to make here.
func (h *Host) authorizeRetry(ctx context.Context, ref actor.Ref, message string) error {
	def, err := h.reg.Lookup(ref.Type)
	if err != nil {
		return nil
	}
	return h.authorizeDelivery(ctx, actor.System{Via: actor.ViaDeadLetterRetry, Source: ref}, def, ref, message)
}
