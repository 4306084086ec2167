package host

import (
	"context"
	"errors"
	"fmt"

	"github.com/ductus/ductus/actor"
	"github.com/ductus/ductus/runtime/store"
)

// The operator API. Every call passes the administration policy with the
// action's name (and, for one actor, its Ref) before it reads or changes
// anything. A call that names a row by ID passes it first with what it
// knows (the action), then, once the row is read, again with the row's
// actor: a refusal there answers like a missing row, so what the policy
// hides is not revealed by the difference between "forbidden" and "not
// found".

func isNotFound(err error) bool { return errors.Is(err, actor.ErrNotFound) }

func (h *Host) admin(ctx context.Context, action string, ref actor.Ref) error {
	return h.cfg.Policies.Authorize(ctx, actor.Request{Operation: actor.OpAdministration, Action: action, Ref: ref})
}

// adminRow authorizes action on the row of what (e.g. "dead letter 7") whose
// actor is ref, once the row has been read.
func (h *Host) adminRow(ctx context.Context, action string, ref actor.Ref, what string) error {
	if h.admin(ctx, action, ref) != nil {
		return fmt.Errorf("%w: %s", actor.ErrNotFound, what)
	}
	return nil
}

// DeadLetters pages dead-lettered messages, oldest first.
func (h *Host) DeadLetters(ctx context.Context, q DeadLetterQuery) ([]DeadLetter, error) {
	if err := checkLimit("DeadLetterQuery", q.Limit); err != nil {
		return nil, err
	}
	if err := h.admin(ctx, "dead_letter.list", actor.Ref{Type: q.Type}); err != nil {
		return nil, err
	}
	rows, err := h.be.DeadLetterList(ctx, &store.DeadLetterListParams{Type: q.Type, AfterID: int64(q.After), Limit: q.Limit})
	return convert(rows, asDeadLetter), err
}

// DeadLetter reads one dead letter.
func (h *Host) DeadLetter(ctx context.Context, id actor.MessageID) (*DeadLetter, error) {
	const action = "dead_letter.read"
	if err := h.admin(ctx, action, actor.Ref{}); err != nil {
		return nil, err
	}
	d, err := h.be.DeadLetterGet(ctx, int64(id))
	if err != nil {
		return nil, err
	}
	if err := h.adminRow(ctx, action, d.Ref, fmt.Sprintf("dead letter %d", id)); err != nil {
		return nil, err
	}
	out := asDeadLetter(d)
	return &out, nil
}

// RetryDeadLetter enqueues a copy of a dead message at the tail of its
// actor's mailbox (history is not rewritten) and returns the new message.
func (h *Host) RetryDeadLetter(ctx context.Context, id actor.MessageID) (actor.MessageID, error) {
	const action = "dead_letter.retry"
	if err := h.admin(ctx, action, actor.Ref{}); err != nil {
		return 0, err
	}
	d, err := h.be.DeadLetterGet(ctx, int64(id))
	if err != nil {
		return 0, err
	}
	if err := h.adminRow(ctx, action, d.Ref, fmt.Sprintf("dead letter %d", id)); err != nil {
		return 0, err
	}
	if err := h.authorizeRetry(ctx, d.Ref, d.Name); err != nil {
		return 0, err
	}
	res, err := h.be.DeadLetterRetry(ctx, int64(id), h.cfg.Limits.MailboxMessages)
	if err != nil {
		return 0, err
	}
	h.workArrived(res.ActorPK)
	return actor.MessageID(res.MessageID), nil
}

// DiscardDeadLetter removes a dead letter (the message row stays as
// history); false when there was none (or the policy hides it).
func (h *Host) DiscardDeadLetter(ctx context.Context, id actor.MessageID) (bool, error) {
	const action = "dead_letter.discard"
	if err := h.admin(ctx, action, actor.Ref{}); err != nil {
		return false, err
	}
	d, err := h.be.DeadLetterGet(ctx, int64(id))
	if isNotFound(err) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	if h.adminRow(ctx, action, d.Ref, "") != nil {
		return false, nil
	}
	return h.be.DeadLetterDiscard(ctx, int64(id))
}

// Pause holds an actor's mailbox: enqueues still commit, nothing runs until
// Resume. A turn already running finishes.
func (h *Host) Pause(ctx context.Context, ref actor.Ref) (bool, error) {
	if err := h.admin(ctx, "actor.pause", ref); err != nil {
		return false, err
	}
	return h.be.ActorPause(ctx, ref, true)
}

// Resume releases a paused actor.
func (h *Host) Resume(ctx context.Context, ref actor.Ref) (bool, error) {
	if err := h.admin(ctx, "actor.resume", ref); err != nil {
		return false, err
	}
	ok, err := h.be.ActorPause(ctx, ref, false)
	if ok {
		// An activation cached here stays parked through a pause (its
		// takes found nothing) and the claim scan passes over it (its
		// lease is this process's): it has work again, as after an
		// enqueue, now rather than at the next poll of the activations
		// held here. Any other is found by the claim scan.
		if pk, cached := h.cache.pkOf(ref); cached {
			h.workArrived(pk)
		} else {
			h.poke(h.wake)
		}
	}
	return ok, err
}

// SkipHead dead-letters the actor's earliest unfinished message (a poison
// message blocking the rest) and returns its ID. Pause the actor first if
// its head is running.
func (h *Host) SkipHead(ctx context.Context, ref actor.Ref, reason string) (actor.MessageID, error) {
	if err := h.admin(ctx, "actor.skip_head", ref); err != nil {
		return 0, err
	}
	id, err := h.be.ActorSkipHead(ctx, ref, reason)
	if err == nil {
		h.poke(h.wake)
		h.waiters.signal(id, &actor.DeadLetterError{MessageID: actor.MessageID(id), Reason: "skipped by an operator: " + reason})
	}
	return actor.MessageID(id), err
}

// Actors is the queryable actor directory: actors of a type, optionally
// filtered by a state value, quiet ones, or ones orphaned against an owner
// table, paged by ID. It reads; it never writes actor state (repairs go
// through messages).
func (h *Host) Actors(ctx context.Context, q ActorQuery) ([]ActorInfo, error) {
	if err := checkLimit("ActorQuery", q.Limit); err != nil {
		return nil, err
	}
	if err := h.admin(ctx, "actor.list", actor.Ref{Type: q.Type}); err != nil {
		return nil, err
	}
	if _, err := h.reg.Lookup(q.Type); err != nil {
		return nil, err
	}
	p := store.ActorListParams{Type: q.Type, AfterID: q.After, Limit: q.Limit, Quiet: q.Quiet}
	if q.Where != nil {
		p.Filter = &store.StateFilter{Path: q.Where.Path, Value: q.Where.Value}
	}
	if q.OrphanedAgainst != nil {
		p.OrphanedAgainst = &store.OwnerRelation{Table: q.OrphanedAgainst.Table, Column: q.OrphanedAgainst.Column}
	}
	rows, err := h.be.ActorList(ctx, &p)
	return convert(rows, asActorInfo), err
}

// Actor reads one actor's stored row.
func (h *Host) Actor(ctx context.Context, ref actor.Ref) (*ActorInfo, error) {
	if err := h.admin(ctx, "actor.read", ref); err != nil {
		return nil, err
	}
	a, err := h.be.ActorGet(ctx, ref)
	if err != nil {
		return nil, err
	}
	out := asActorInfo(a)
	return &out, nil
}

// Effects pages effects in a state, newest first, optionally of one type,
// one actor or one message's turn.
func (h *Host) Effects(ctx context.Context, q EffectQuery) ([]EffectInfo, error) {
	switch q.State {
	case EffectPending, EffectDone, EffectDead:
	default:
		return nil, fmt.Errorf("%w: EffectQuery.State %q (want %q, %q or %q)", actor.ErrInvalidArguments, q.State, EffectPending, EffectDone, EffectDead)
	}
	if q.ID != "" && q.Type == "" {
		return nil, fmt.Errorf("%w: EffectQuery.ID %q needs its Type", actor.ErrInvalidArguments, q.ID)
	}
	if q.Blocking && q.State != EffectPending {
		return nil, fmt.Errorf("%w: EffectQuery.Blocking needs State %q (a %s effect holds nothing)", actor.ErrInvalidArguments, EffectPending, q.State)
	}
	if err := checkLimit("EffectQuery", q.Limit); err != nil {
		return nil, err
	}
	if err := h.admin(ctx, "effect.list", actor.Ref{Type: q.Type, ID: q.ID}); err != nil {
		return nil, err
	}
	rows, err := h.be.EffectList(ctx, &store.EffectListParams{State: store.EffectState(q.State), Type: q.Type, ID: q.ID,
		MessageID: int64(q.Message), BeforeID: q.Before, Limit: q.Limit, Blocking: q.Blocking})
	return convert(rows, asEffectInfo), err
}

// Backlog counts the unfinished work of everything, of one type or of one
// actor; Backlog.Idle answers "is anything left to run?".
func (h *Host) Backlog(ctx context.Context, q BacklogQuery) (Backlog, error) {
	if q.ID != "" && q.Type == "" {
		return Backlog{}, fmt.Errorf("%w: BacklogQuery.ID %q needs its Type", actor.ErrInvalidArguments, q.ID)
	}
	if err := h.admin(ctx, "backlog.count", actor.Ref{Type: q.Type, ID: q.ID}); err != nil {
		return Backlog{}, err
	}
	n, err := h.be.BacklogCount(ctx, &store.BacklogCountParams{Type: q.Type, ID: q.ID})
	return Backlog(n), err
}

// BacklogByActor lists, for every actor of typ with work queued, pending
// or dead, its counts, sorted by ID: one query for a page of many actors
// (an interface's lanes) instead of one Backlog per actor.
func (h *Host) BacklogByActor(ctx context.Context, typ string) ([]ActorBacklog, error) {
	if typ == "" {
		return nil, fmt.Errorf("%w: BacklogByActor needs an actor type", actor.ErrInvalidArguments)
	}
	if err := h.admin(ctx, "backlog.count", actor.Ref{Type: typ}); err != nil {
		return nil, err
	}
	rows, err := h.be.BacklogByActor(ctx, &store.BacklogByActorParams{Type: typ})
	return convert(rows, func(a *store.ActorBacklog) ActorBacklog { return ActorBacklog(*a) }), err
}

// RetryEffect makes a dead effect pending again; false when the effect
// is not dead.
func (h *Host) RetryEffect(ctx context.Context, id int64) (bool, error) {
	const action = "effect.retry"
	if err := h.admin(ctx, action, actor.Ref{}); err != nil {
		return false, err
	}
	e, err := h.be.EffectGet(ctx, id)
	if err != nil {
		return false, err
	}
	if err := h.adminRow(ctx, action, e.Ref, fmt.Sprintf("effect %d", id)); err != nil {
		return false, err
	}
	ok, err := h.be.EffectRetry(ctx, id)
	if ok {
		h.poke(h.fxWake)
	}
	return ok, err
}

// DiscardEffect deletes a dead effect (an operator gave up on it); false
// when there was no dead effect of that ID (or the policy hides it).
func (h *Host) DiscardEffect(ctx context.Context, id int64) (bool, error) {
	const action = "effect.discard"
	if err := h.admin(ctx, action, actor.Ref{}); err != nil {
		return false, err
	}
	e, err := h.be.EffectGet(ctx, id)
	if isNotFound(err) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	if h.adminRow(ctx, action, e.Ref, "") != nil {
		return false, nil
	}
	return h.be.EffectDiscard(ctx, id)
}

// Reminders lists an actor's reminders.
func (h *Host) Reminders(ctx context.Context, q ReminderQuery) ([]ReminderInfo, error) {
	if q.Ref.Type == "" || q.Ref.ID == "" {
		return nil, fmt.Errorf("%w: ReminderQuery.Ref needs a type and an ID (got %q)", actor.ErrInvalidArguments, q.Ref)
	}
	if err := h.admin(ctx, "reminder.list", q.Ref); err != nil {
		return nil, err
	}
	rows, err := h.be.ReminderList(ctx, q.Ref)
	if err != nil {
		return nil, err
	}
	out := make([]ReminderInfo, len(rows))
	for i := range rows {
		if out[i], err = asReminderInfo(&rows[i]); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// Processes lists the runtime processes registered on the database.
func (h *Host) Processes(ctx context.Context, q ProcessQuery) ([]ProcessInfo, error) {
	if err := h.admin(ctx, "process.list", actor.Ref{}); err != nil {
		return nil, err
	}
	rows, err := h.be.ProcessList(ctx)
	if err != nil {
		return nil, err
	}
	var out []ProcessInfo
	for i := range rows {
		p := &rows[i]
		if (q.Kind == "" || p.Kind == q.Kind) && (!q.Running || p.StoppedAt.IsZero()) {
			out = append(out, asProcessInfo(p))
		}
	}
	return out, nil
}

// MigrationFailure is one stored actor whose state does not migrate.
type MigrationFailure struct {
	Ref     actor.Ref
	Version int
	Err     error
}

// MigrationReport is the outcome of a dry run.
type MigrationReport struct {
	Type     string
	Checked  int
	Current  int // already at the code's version
	Migrated int // would migrate cleanly
	Failures []MigrationFailure
}

// DryRunMigration applies the type's migration steps to every stored
// actor's state in memory, writing nothing, and reports the ones that fail
// (a missing step, an error, output that is not JSON or does not decode, a
// version newer than the code). progress, if set, is called every page.
func (h *Host) DryRunMigration(ctx context.Context, typ string, progress func(checked int)) (*MigrationReport, error) {
	if err := h.admin(ctx, "migration.dry_run", actor.Ref{Type: typ}); err != nil {
		return nil, err
	}
	def, err := h.reg.Lookup(typ)
	if err != nil {
		return nil, err
	}
	version := def.Spec().StateVersion
	rep := &MigrationReport{Type: typ}
	after := ""
	for {
		page, err := h.be.ActorList(ctx, &store.ActorListParams{Type: typ, AfterID: after, Limit: 500})
		if err != nil {
			return rep, err
		}
		for _, a := range page {
			rep.Checked++
			switch {
			case a.State == nil:
				rep.Current++
			case a.StateVersion == version:
				if _, err := def.Load(a.State, a.StateVersion); err != nil {
					rep.Failures = append(rep.Failures, MigrationFailure{Ref: a.Ref, Version: a.StateVersion, Err: err})
				} else {
					rep.Current++
				}
			default:
				if _, err := def.Load(a.State, a.StateVersion); err != nil {
					rep.Failures = append(rep.Failures, MigrationFailure{Ref: a.Ref, Version: a.StateVersion, Err: err})
				} else {
					rep.Migrated++
				}
			}
		}
		if progress != nil {
			progress(rep.Checked)
		}
		if len(page) < 500 {
			return rep, nil
		}
		after = page[len(page)-1].Ref.ID
	}
}

// String summarises a report.
func (r *MigrationReport) String() string {
	return fmt.Sprintf("%s: %d checked, %d current, %d would migrate, %d fail", r.Type, r.Checked, r.Current, r.Migrated, len(r.Failures))
}
