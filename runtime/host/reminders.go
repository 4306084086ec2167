package host

import (
	"context"
	"encoding/json"
	"time"

	"github.com/ductus/ductus/actor"
	"github.com/ductus/ductus/runtime/store"
)

const reminderBatch = 256

// reminderLoop fires due reminders: each occurrence becomes an ordinary
// mailbox message, enqueued with the reminder's advance in one transaction.
func (h *Host) reminderLoop(ctx context.Context) {
	t := time.NewTicker(h.cfg.PollInterval)
	defer t.Stop()
	for {
		for ctx.Err() == nil {
			n, err := h.fireReminders(ctx)
			if err != nil {
				if ctx.Err() == nil {
					h.met.storeErrors.WithLabelValues("reminders").Inc()
					h.log.Warn("firing reminders failed", "err", err)
				}
				break
			}
			if n < reminderBatch {
				break
			}
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

func (h *Host) fireReminders(ctx context.Context) (int, error) {
	rs, err := h.be.ReminderClaim(ctx, &store.ReminderClaimParams{Owner: h.id, TTL: h.cfg.ClaimTTL, Limit: reminderBatch, Types: h.types})
	if err != nil || len(rs) == 0 {
		return 0, err
	}
	fires := make([]store.ReminderFire, 0, len(rs))
	for _, r := range rs {
		var s actor.Schedule
		if err := json.Unmarshal(r.Schedule, &s); err != nil {
			h.log.Error("a reminder's schedule does not decode; firing it once", "actor", r.Ref.String(), "reminder", r.Name, "err", err)
		}
		next, err := advance(s, r.NextAt, r.Now)
		if err != nil {
			h.log.Error("a reminder's schedule is invalid; firing it a last time", "actor", r.Ref.String(), "reminder", r.Name, "err", err)
			next = time.Time{}
		}
		fires = append(fires, store.ReminderFire{
			ID: r.ID, Occurrence: r.Occurrence + 1, Next: next,
			// The occurrence is due when it was scheduled: its turn sees that
			// time as TurnInfo.Due, even when it fires late after downtime.
			Message: store.NewMessage{Ref: r.Ref, Name: r.Message, Args: r.Args, System: true, AvailableAt: r.NextAt},
		})
	}
	if err := h.be.ReminderFire(ctx, &store.ReminderFireParams{Owner: h.id, Fires: fires, MailboxCap: h.cfg.Limits.MailboxMessages}); err != nil {
		return 0, err
	}
	h.met.reminders.Add(float64(len(fires)))
	for _, r := range rs {
		h.workArrived(r.ActorPK)
	}
	return len(rs), nil
}

// advance computes a reminder's next occurrence after the one due at due,
// with the database's time now. CatchUpAll steps one interval, so missed
// occurrences fire one per pass; CatchUpLatest (the default) skips to the
// first occurrence after now.
func advance(s actor.Schedule, due, now time.Time) (time.Time, error) {
	if !s.At.IsZero() || (s.Every == 0 && s.Cron == "") {
		return time.Time{}, nil
	}
	from := due
	if s.CatchUp != actor.CatchUpAll && now.After(from) {
		from = now
	}
	if s.Every > 0 && s.CatchUp != actor.CatchUpAll && now.After(due) {
		// Keep the interval's phase: the first due+k*Every after now.
		k := now.Sub(due)/s.Every + 1
		return addJitter(due.Add(k*s.Every), s.Jitter), nil
	}
	return nextOccurrence(s, from)
}
