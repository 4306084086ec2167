package sqlrow

import (
	"fmt"
	"sort"
	"strings"

	"github.com/ductus/ductus/runtime/store"
)

// backlogCounts is one count of BacklogCount: a table, the column naming
// the actor it belongs to, and what makes a row unfinished.
var backlogCounts = []struct{ from, actorCol, where string }{
	{"ductus_ready x", "x.actor_pk", "1 = 1"},
	{"ductus_claimed x", "x.actor_pk", "1 = 1"},
	{"ductus_effects x", "x.actor_pk", "x.state = 'pending'"},
	{"ductus_outbox x", "x.source_pk", "x.due_at IS NOT NULL"},
	{"ductus_outbox x", "", "x.due_at IS NOT NULL"}, // incoming: scoped by to_type / to_id
	{"ductus_broadcasts x", "x.actor_pk", "x.delivered_at IS NULL"},
	{"ductus_dead_letters x", "x.actor_pk", "1 = 1"},
	{"ductus_effects x", "x.actor_pk", "x.state = 'dead'"},
}

// Backlog is BacklogCount's statement (? placeholders): one SELECT of
// scalar subqueries, so every count is read from the same snapshot. Read
// its one row with ScanBacklog.
func Backlog(p *store.BacklogCountParams) Statement {
	var parts []string
	var args []any
	for _, c := range backlogCounts {
		q := "SELECT COUNT(*) FROM " + c.from
		switch {
		case p.Type == "":
			q += " WHERE " + c.where
		case c.actorCol == "": // sends addressed to the scope
			q += " WHERE " + c.where + " AND x.to_type = ?"
			args = append(args, p.Type)
			if p.ID != "" {
				q += " AND x.to_id = ?"
				args = append(args, p.ID)
			}
		default:
			q += " JOIN ductus_actors a ON a.pk = " + c.actorCol + " WHERE " + c.where + " AND a.type = ?"
			args = append(args, p.Type)
			if p.ID != "" {
				q += " AND a.id = ?"
				args = append(args, p.ID)
			}
		}
		parts = append(parts, "("+q+")")
	}
	return Statement{SQL: "SELECT " + strings.Join(parts, ", "), Args: args}
}

// ScanBacklog reads the row of Backlog's statement.
func ScanBacklog(row Scanner) (store.Backlog, error) {
	var ready, claimed int64
	var out store.Backlog
	if err := row.Scan(&ready, &claimed, &out.Effects, &out.Sends, &out.Incoming, &out.Broadcasts, &out.DeadLetters, &out.DeadEffects); err != nil {
		return store.Backlog{}, err
	}
	out.Messages = ready + claimed
	return out, nil
}

// Booleans are a dialect's literals for a boolean column, spelled as its
// partial indexes spell them: SQLite uses a partial index only when the
// query repeats the index's WHERE terms (ordered = 1), and Postgres
// rejects an integer for a boolean but folds "= TRUE" into the plain
// column its indexes name.
type Booleans struct{ True, False string }

var (
	// IntBooleans are SQLite's and MySQL's (0 and 1 columns).
	IntBooleans = Booleans{True: "1", False: "0"}
	// SQLBooleans are Postgres's.
	SQLBooleans = Booleans{True: "TRUE", False: "FALSE"}
)

// The kinds of BacklogByActor's rows, the second column of each.
const (
	byActorMessages = iota
	byActorEffects
	byActorDeadLetters
	byActorDeadEffects
)

// byActorPart is one part of BacklogByActor: a kind, the table, and what
// makes a row count. Each part is readable through a table or index that
// holds only unfinished (or dead) rows, so it reads the backlog and never
// finished history:
//
//   - ductus_ready and ductus_claimed hold only unfinished messages (on
//     Postgres their primary keys lead with actor_pk; elsewhere
//     ductus_ready_actor_seq and ductus_claimed_actor do); each actor's
//     first pending message is looked up by primary key for its
//     enqueue time;
//   - pending effects are two parts, one per partial index of Postgres and
//     SQLite: ductus_effects_ordered (actor_pk, id) WHERE state = 'pending'
//     AND ordered, and ductus_effects_unordered_due (due_at) WHERE state =
//     'pending' AND NOT ordered (state = 'pending' alone implies neither
//     predicate, so neither index could serve it: the planner would read
//     the actors' effects, finished ones included);
//   - ductus_dead_letters holds only dead letters, and its type column
//     (the actor's, copied when the letter is written) has an index,
//     ductus_dead_letters_type, so the part filters on it;
//   - dead effects: ductus_effects_dead (id) WHERE state = 'dead'.
//
// MySQL has no partial indexes; there state (and ordered) lead indexes
// instead, so a pending part reads the range (state, ordered) of
// ductus_effects_unordered_due and the dead part the range state = 'dead'
// of ductus_effects_state (MariaDB 10.11's EXPLAIN, with 300,000 done
// effects): done rows lie outside both ranges.
type byActorPart struct {
	kind        int
	from, where string
	queued      queuedBy
}

// queuedBy is where a part finds when its oldest row was queued, for the
// actor's oldest pending work.
type queuedBy int

const (
	notPending     queuedBy = iota // dead parts: no time
	byFirstMessage                 // the enqueue of the actor's first message (see byActorParts)
	byCreatedAt                    // MIN(x.created_at), on the rows counted
)

// byActorParts are BacklogByActor's parts in the dialect of b.
func byActorParts(b Booleans) []byActorPart {
	return []byActorPart{
		// A pending message's enqueue time is on its message row. Message
		// IDs grow with enqueue order, so the actor's first is its lowest
		// ID, looked up by primary key once per actor in a scalar
		// subquery over the grouped part (SQLite refuses an outer
		// aggregate inside one): a join let Postgres merge-join the
		// messages' primary key, reading the history up to the newest
		// pending message.
		{byActorMessages, "ductus_ready x", "a.type = ?", byFirstMessage},
		{byActorMessages, "ductus_claimed x", "a.type = ?", byFirstMessage},
		{byActorEffects, "ductus_effects x", "x.state = 'pending' AND x.ordered = " + b.True + " AND a.type = ?", byCreatedAt},
		{byActorEffects, "ductus_effects x", "x.state = 'pending' AND x.ordered = " + b.False + " AND a.type = ?", byCreatedAt},
		{byActorDeadLetters, "ductus_dead_letters x", "x.type = ?", notPending},
		{byActorDeadEffects, "ductus_effects x", "x.state = 'dead' AND a.type = ?", notPending},
	}
}

// BacklogByActor is BacklogByActor's statement (? placeholders): a UNION
// ALL of per-kind counts grouped by actor, read with ScanBacklogByActor
// (or ActorBacklogs row by row).
// One statement reads every part from the same snapshot; summing the
// parts of an actor is left to Go, which keeps each part a plain grouped
// join that the planner can drive from its own index.
func BacklogByActor(p *store.BacklogByActorParams, b Booleans) Statement {
	var parts []string
	var args []any
	for _, c := range byActorParts(b) {
		grouped := "FROM " + c.from + " JOIN ductus_actors a ON a.pk = x.actor_pk WHERE " + c.where + " GROUP BY a.id"
		switch c.queued {
		case byFirstMessage:
			parts = append(parts, fmt.Sprintf("SELECT g.id, %d, g.n, (SELECT m.enqueued_at FROM ductus_messages m WHERE m.id = g.first) "+
				"FROM (SELECT a.id AS id, COUNT(*) AS n, MIN(x.message_id) AS first %s) g", c.kind, grouped))
		case byCreatedAt:
			parts = append(parts, fmt.Sprintf("SELECT a.id, %d, COUNT(*), MIN(x.created_at) %s", c.kind, grouped))
		default:
			parts = append(parts, fmt.Sprintf("SELECT a.id, %d, COUNT(*), NULL %s", c.kind, grouped))
		}
		args = append(args, p.Type)
	}
	return Statement{SQL: strings.Join(parts, " UNION ALL "), Args: args}
}

// ActorBacklogs sums the rows of BacklogByActor's statement per actor,
// one row at a time (Add), so an adapter can feed it from a batch's row
// callback as well as from a Rows (ScanBacklogByActor).
type ActorBacklogs struct {
	byID map[string]*store.ActorBacklog
}

// Add reads one row (actor ID, kind, count, oldest queued) and adds its
// count.
func (s *ActorBacklogs) Add(row Scanner) error {
	var id string
	var kind int
	var n int64
	var oldest AnyTime
	if err := row.Scan(&id, &kind, &n, &oldest); err != nil {
		return err
	}
	if s.byID == nil {
		s.byID = map[string]*store.ActorBacklog{}
	}
	a := s.byID[id]
	if a == nil {
		a = &store.ActorBacklog{ID: id}
		s.byID[id] = a
	}
	if t := oldest.Time; !t.IsZero() && (a.Oldest.IsZero() || t.Before(a.Oldest)) {
		a.Oldest = t
	}
	switch kind {
	case byActorMessages:
		a.Messages += n
	case byActorEffects:
		a.Effects += n
	case byActorDeadLetters:
		a.DeadLetters += n
	case byActorDeadEffects:
		a.DeadEffects += n
	default:
		return fmt.Errorf("a backlog row of unknown kind %d", kind)
	}
	return nil
}

// Rows returns the sums, sorted by ID here, byte-wise, rather than in SQL,
// so that every backend orders them the same whatever its collation.
func (s *ActorBacklogs) Rows() []store.ActorBacklog {
	out := make([]store.ActorBacklog, 0, len(s.byID))
	for _, a := range s.byID {
		out = append(out, *a)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out
}

// ScanBacklogByActor reads every row of BacklogByActor's statement and
// returns the per-actor sums. The caller closes rows.
func ScanBacklogByActor(rows Rows) ([]store.ActorBacklog, error) {
	var s ActorBacklogs
	for rows.Next() {
		if err := s.Add(rows); err != nil {
			return nil, err
		}
	}
	if err := rows.Err(); err != nil {
		return nil, err
	}
	return s.Rows(), nil
}
