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
		next, skipped, err := advance(s, r.NextAt, r.Now, h.cfg.CatchUpMax)
		if err != nil {
			h.log.Error("a reminder's schedule is invalid; firing it a last time", "actor", r.Ref.String(), "reminder", r.Name, "err", err)
			next = time.Time{}
		}
		if skipped > 0 {
			h.log.Warn("a reminder missed more occurrences than catch-up replays; skipping to the latest",
				"actor", r.Ref.String(), "reminder", r.Name, "missed_at_least", skipped, "catch_up_max", h.cfg.CatchUpMax, "next", next)
		}
		f := store.ReminderFire{
			ID: r.ID, Occurrence: r.Occurrence + 1, Next: next,
			// The occurrence is due when it was scheduled: its turn sees that
			// time as TurnInfo.Due, even when it fires late after downtime.
			Message: store.NewMessage{Ref: r.Ref, Name: r.Message, Args: r.Args, System: true, AvailableAt: r.NextAt},
		}
		if !next.IsZero() {
			// Jitter moves only this occurrence's delivery; next_at keeps
			// the nominal time the following advance starts from.
			f.Due = next.Add(jitter(s.Jitter))
		}
		fires = append(fires, f)
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

// advance computes a reminder's next nominal occurrence after the one due
// at due, with the database's time now. CatchUpLatest (the default) skips
// to the first occurrence after now (an interval keeps its phase).
// CatchUpAll steps one occurrence, so missed occurrences fire one per
// scheduler pass; when more than maxMissed would still follow this one, it
// behaves like CatchUpLatest for this catch-up and reports how many it
// skipped.
func advance(s actor.Schedule, due, now time.Time, maxMissed int) (next time.Time, skipped int, err error) {
	if !s.At.IsZero() || (s.Every == 0 && s.Cron == "") {
		return time.Time{}, 0, nil
	}
	if s.CatchUp == actor.CatchUpAll {
		missed, err := missedAfter(s, due, now, maxMissed)
		if err != nil || missed <= maxMissed {
			next, err := nextOccurrence(s, due)
			return next, 0, err
		}
		skipped = missed
	}
	if !now.After(due) {
		next, err := nextOccurrence(s, due)
		return next, skipped, err
	}
	if s.Every > 0 {
		// Keep the interval's phase: the first due+k*Every after now.
		k := now.Sub(due)/s.Every + 1
		return due.Add(k * s.Every), skipped, nil
	}
	next, err = nextOccurrence(s, now)
	return next, skipped, err
}

// missedAfter counts the occurrences after due that are already due at
// now, stopping once it passes limit.
func missedAfter(s actor.Schedule, due, now time.Time, limit int) (int, error) {
	if !now.After(due) {
		return 0, nil
	}
	if s.Every > 0 {
		return int(min(now.Sub(due)/s.Every, time.Duration(limit)+1)), nil
	}
	n := 0
	for t := due; n <= limit; n++ {
		next, err := nextOccurrence(s, t)
		if err != nil {
			return 0, err
		}
		if next.IsZero() || next.After(now) {
			return n, nil
		}
		t = next
	}
	return n, nil
}
