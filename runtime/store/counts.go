package store

import (
	"context"
	"fmt"
	"time"

	"github.com/ductus/ductus/actor"
)

// Counts is the backlog side of the read model: how much work is still to
// be done, for one actor, one type or everything. Each count reads only the
// tables (or partial indexes) that hold unfinished work, so it costs what
// the backlog costs, not what history costs; Broadcasts is the exception
// (see Backlog).
type Counts interface {
	// BacklogCount counts unfinished work in the scope p names.
	BacklogCount(ctx context.Context, p *BacklogCountParams) (Backlog, error)
	// BacklogByActor answers, in one query, the messages, effects and
	// dead work BacklogCount would count for each actor of a type, so an
	// operator page of many actors (an interface's lanes) costs one round
	// trip instead of one per actor.
	// It returns only actors with something to show, sorted by ID.
	BacklogByActor(ctx context.Context, p *BacklogByActorParams) ([]ActorBacklog, error)
}

// BacklogCountParams names a scope: every actor (Type ""), every actor of
// Type (ID ""), or one actor (Type and ID).
type BacklogCountParams struct {
	Type string
	ID   string
}

// Check rejects an ID without a Type.
func (p *BacklogCountParams) Check() error {
	if p.Type == "" && p.ID != "" {
		return fmt.Errorf("%w: a backlog count for actor ID %q needs its type", actor.ErrInvalidArguments, p.ID)
	}
	return nil
}

// BacklogByActorParams names the type whose actors BacklogByActor lists.
type BacklogByActorParams struct {
	// Type is required: a per-actor list across every type would mix
	// unrelated actors and grow with all of them.
	Type string
}

// Check rejects an empty Type.
func (p *BacklogByActorParams) Check() error {
	if p.Type == "" {
		return fmt.Errorf("%w: a backlog by actor needs an actor type", actor.ErrInvalidArguments)
	}
	return nil
}

// ActorBacklog is one actor's row of BacklogByActor: the work an operator
// watches per lane (what is queued, what waits to be sent, what needs a
// hand). Sends, incoming sends and broadcasts are not in it; BacklogCount
// has them for one actor.
type ActorBacklog struct {
	// ID is the actor's ID within the type asked for.
	ID string
	// Messages are ready or running messages, delayed ones included, as in
	// Backlog.Messages.
	Messages int64
	// Effects are pending effects the actor staged.
	Effects int64
	// DeadLetters and DeadEffects wait for an operator (retry or discard).
	DeadLetters int64
	DeadEffects int64
	// Oldest is when the oldest of Messages and Effects was queued: a
	// message's enqueue or an effect's staging (zero when both are 0). It
	// is read from the same rows as the counts, so it costs what they do.
	Oldest time.Time
}

// Backlog is the unfinished work of a scope.
type Backlog struct {
	// Messages are ready or running messages of the scope's actors,
	// delayed ones included (not dead-lettered ones).
	Messages int64
	// Effects are pending effects the scope's actors staged (not done,
	// not dead).
	Effects int64
	// Sends are actor-to-actor sends the scope's actors staged that have
	// not reached their target's mailbox yet.
	Sends int64
	// Incoming are undelivered sends addressed to the scope's actors: work
	// that is on its way but not in Messages yet.
	Incoming int64
	// Broadcasts are observable changes of the scope's actors that no
	// subscriber has received yet. With no subscriber they stay until
	// retention prunes them, so they do not count against Idle, and
	// counting them reads the scope's broadcast history.
	Broadcasts int64
	// DeadLetters and DeadEffects wait for an operator (retry or discard);
	// they do not count against Idle.
	DeadLetters int64
	DeadEffects int64
}

// Idle reports whether nothing is left to run: no message, effect or send
// pending from or to the scope.
func (b Backlog) Idle() bool {
	return b.Messages == 0 && b.Effects == 0 && b.Sends == 0 && b.Incoming == 0
}
