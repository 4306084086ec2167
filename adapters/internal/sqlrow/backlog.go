package sqlrow

import (
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
