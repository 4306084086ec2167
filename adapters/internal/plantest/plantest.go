// Package plantest is the shared ground of the adapters' plan tests of the
// message browser (ixstore.Store.MessageList): a history of 1,100,000
// interface messages that each backend's test generates in its own SQL
// (FillSQL) and that this package generates the same in Go (ID, Key, ...),
// the browser's filters over it (Cases), and each filter's expected page,
// computed here from the generator rather than read back from a database.
package plantest

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/ductus/ductus/integration/ixstore"
)

// The history: message g, for g = 1..Messages, belongs to Small when g is
// a multiple of 11, else to Tiny when g ends in 500, else to Big: Big
// holds 999,000 messages, Small 100,000 and Tiny 1,000, interleaved in
// time as live interfaces are.
const (
	Messages = 1_100_000
	Big      = "adt_in"
	Small    = "lab_in"
	Tiny     = "rad_in"
	// Keys is the number of distinct ordering keys (each on ~10 of Big's
	// messages, spread over the whole history), Types the number of
	// common message types; RareType is on one message in 1,000 and every
	// tenth message has no type (as a non-HL7 one).
	Keys     = 100_000
	Types    = 20
	RareType = "ORU^R01"
	// BaseMillis is message 0's time (2026-01-01): message g was received
	// 10 ms after message g-1.
	BaseMillis = 1_767_225_600_000
	// Limit is the page size every case asks for.
	Limit = 50
)

// Interface is message g's interface.
func Interface(g int) string {
	switch {
	case g%11 == 0:
		return Small
	case g%1000 == 500:
		return Tiny
	}
	return Big
}

// Millis is message g's receipt time in Unix milliseconds.
func Millis(g int) int64 { return BaseMillis + 10*int64(g) }

// ID is message g's ID: UUIDv7-shaped (the time's milliseconds in the
// first 48 bits), growing with g.
func ID(g int) string {
	ms := Millis(g)
	return fmt.Sprintf("%08x-%04x-7abc-8000-%012x", ms>>16, ms&0xffff, g)
}

func keyNum(g int) int { return g * 7919 % Keys }

// Key is message g's ordering key.
func Key(g int) string { return fmt.Sprintf("K%05d", keyNum(g)) }

// Dedupe is message g's dedupe key, its own.
func Dedupe(g int) string { return fmt.Sprintf("D%d", g) }

// Status is message g's intake status: about 1% duplicate, 1% rejected,
// the rest pending.
func Status(g int) string {
	switch {
	case g%97 == 0:
		return "duplicate"
	case g%89 == 0:
		return "rejected"
	}
	return "pending"
}

// typeNum is message g's type: 0 for none, -1 for RareType, else the
// common type n, ADT^A<n>.
func typeNum(g int) int {
	switch {
	case g%10 == 5:
		return 0
	case g%1000 == 333:
		return -1
	}
	return g/3%Types + 1
}

// Type is message g's type ("" for every tenth, which has no search row).
func Type(g int) string {
	switch n := typeNum(g); n {
	case 0:
		return ""
	case -1:
		return RareType
	default:
		return fmt.Sprintf("ADT^A%02d", n)
	}
}

// Payload is every message's payload.
const Payload = "MSH"

// FillSQL is the history in dialect ("postgres", "mysql", "sqlite"): the
// statements that insert every message and search row, given a table or
// subquery seq of one integer column g holding 1..Messages in order (how
// each backend makes one differs; see its test). The expressions are
// ID, Key, Dedupe, Status and Type above, spelled in each dialect.
func FillSQL(dialect, seq string) []string {
	var id, key, dedupe, typ, payload string
	switch dialect {
	case "postgres":
		ms := fmt.Sprintf("(%d + 10 * g::bigint)", int64(BaseMillis))
		id = fmt.Sprintf("lpad(to_hex(%[1]s >> 16), 8, '0') || '-' || lpad(to_hex(%[1]s & 65535), 4, '0') || '-7abc-8000-' || lpad(to_hex(g), 12, '0')", ms)
		key = fmt.Sprintf("'K' || lpad((g::bigint * 7919 %% %d)::text, 5, '0')", Keys)
		dedupe = "'D' || g"
		typ = "'ADT^A' || lpad((g / 3 %% %d + 1)::text, 2, '0')"
		payload = "'" + Payload + "'::bytea"
	case "mysql":
		ms := fmt.Sprintf("(%d + 10 * g)", int64(BaseMillis))
		id = fmt.Sprintf("CONCAT(LPAD(LOWER(HEX(%[1]s >> 16)), 8, '0'), '-', LPAD(LOWER(HEX(%[1]s & 65535)), 4, '0'), '-7abc-8000-', LPAD(LOWER(HEX(g)), 12, '0'))", ms)
		key = fmt.Sprintf("CONCAT('K', LPAD(g * 7919 %% %d, 5, '0'))", Keys)
		dedupe = "CONCAT('D', g)"
		typ = "CONCAT('ADT^A', LPAD(g DIV 3 %% %d + 1, 2, '0'))"
		payload = "'" + Payload + "'"
	case "sqlite":
		id = fmt.Sprintf("printf('%%08x-%%04x-7abc-8000-%%012x', (%[1]d + 10 * g) >> 16, (%[1]d + 10 * g) & 65535, g)", int64(BaseMillis))
		key = fmt.Sprintf("printf('K%%05d', g * 7919 %% %d)", Keys)
		dedupe = "'D' || g"
		typ = "printf('ADT^A%%02d', g / 3 %% %d + 1)"
		payload = "CAST('" + Payload + "' AS BLOB)"
	default:
		panic("plantest: no dialect " + dialect)
	}
	typ = fmt.Sprintf("CASE WHEN g %% 1000 = 333 THEN '%s' ELSE %s END", RareType, fmt.Sprintf(typ, Types))
	iface := fmt.Sprintf("CASE WHEN g %% 11 = 0 THEN '%s' WHEN g %% 1000 = 500 THEN '%s' ELSE '%s' END", Small, Tiny, Big)
	status := "CASE WHEN g % 97 = 0 THEN 'duplicate' WHEN g % 89 = 0 THEN 'rejected' ELSE 'pending' END"
	received := fmt.Sprintf("(%d + 10 * g) * 1000", int64(BaseMillis))
	if dialect == "postgres" {
		received = fmt.Sprintf("(%d + 10 * g::bigint) * 1000", int64(BaseMillis))
	}
	return []string{
		`INSERT INTO ductus_ix_messages (id, interface, received_at, status, order_key, lane, dedupe_key, payload)
			SELECT ` + strings.Join([]string{id, iface, received, status, key, "0", dedupe, payload}, ", ") + ` FROM ` + seq + ` ORDER BY g`,
		`INSERT INTO ductus_ix_search (interface, field, value, message_id)
			SELECT ` + strings.Join([]string{iface, "'type'", typ, id}, ", ") + ` FROM ` + seq + ` WHERE g % 10 <> 5 ORDER BY g`,
	}
}

// Index names the index a case's page should be read through, by role:
// each backend's test maps it to the index's name there.
type Index string

// The roles of the indexes of migration 0005, and of the two keys by ID:
// a page of an interface that holds most messages may be read through
// the message table's key, its ID range, skipping the few rows of other
// interfaces; a type within a short range through the search table's
// message index, reading the range's search rows. Either reads what the
// page (or the range) holds; the tests bound the rows or pages read too.
const (
	ByList     Index = "list"      // ductus_ix_messages (interface, id)
	ByKey      Index = "key"       // ductus_ix_messages (interface, order_key, id)
	ByDedupe   Index = "dedupe"    // ductus_ix_messages (interface, dedupe_key, id)
	ByStatus   Index = "status"    // ductus_ix_messages (interface, status, id)
	BySearch   Index = "search"    // ductus_ix_search's key (interface, field, value, message_id)
	ByID       Index = "id"        // ductus_ix_messages' key (id)
	BySearchID Index = "search id" // ductus_ix_search (message_id, field)
)

// Case is one page of the browser: its parameters, the index it should be
// read through (any of Drive), and its expected IDs, newest first.
type Case struct {
	Name   string
	Params ixstore.MessageListParams
	Drive  []Index
	Want   []string
}

// Cases are the browser's filters, each alone and the combinations an
// operator reaches for, over Big, and the unfiltered and type pages of
// Small and Tiny too, where a plan that read the other interfaces' rows
// would show most; the pages deep in the history ("next page" at 20%)
// show a plan that reads from the newest message down to the page.
func Cases() []Case {
	const (
		key    = 42     // K00042: ~10 of Big's messages
		dedupe = 777778 // D777778: one of Big's
		typ    = 7      // ADT^A07: ~45,000 of Big's
	)
	keyName, typName := fmt.Sprintf("K%05d", key), fmt.Sprintf("ADT^A%02d", typ)
	keyG := func(g int) bool { return keyNum(g) == key }
	typG := func(g int) bool { return typeNum(g) == typ }
	rareG := func(g int) bool { return typeNum(g) == -1 }
	rangeG := func(g int) bool { return g >= 500_000 && g < 500_300 }
	wideG := func(g int) bool { return g >= 300_000 && g < 800_000 }
	all := func(int) bool { return true }
	deep := 220_000
	deepG := func(g int) bool { return g < deep }
	cases := []struct {
		name  string
		iface string
		p     ixstore.MessageListParams
		drive []Index
		keep  func(g int) bool
	}{
		{"none", Big, ixstore.MessageListParams{}, []Index{ByList, ByID}, all},
		{"key", Big, ixstore.MessageListParams{Key: keyName}, []Index{ByKey}, keyG},
		{"dedupe key", Big, ixstore.MessageListParams{DedupeKey: Dedupe(dedupe)}, []Index{ByDedupe}, func(g int) bool { return g == dedupe }},
		{"type", Big, ixstore.MessageListParams{Type: typName}, []Index{BySearch}, typG},
		{"rare type", Big, ixstore.MessageListParams{Type: RareType}, []Index{BySearch}, rareG},
		{"status", Big, ixstore.MessageListParams{Status: "rejected"}, []Index{ByStatus}, func(g int) bool { return Status(g) == "rejected" }},
		{"time range", Big, ixstore.MessageListParams{From: ID(500_000), Before: ID(500_300)}, []Index{ByList, ByID}, rangeG},
		{"key and range", Big, ixstore.MessageListParams{Key: keyName, From: ID(300_000), Before: ID(800_000)}, []Index{ByKey},
			func(g int) bool { return keyG(g) && wideG(g) }},
		{"type and key", Big, ixstore.MessageListParams{Type: typName, Key: keyName}, []Index{ByKey},
			func(g int) bool { return typG(g) && keyG(g) }},
		{"type and range", Big, ixstore.MessageListParams{Type: typName, From: ID(500_000), Before: ID(500_300)}, []Index{BySearch, BySearchID},
			func(g int) bool { return typG(g) && rangeG(g) }},
		{"status and range", Big, ixstore.MessageListParams{Status: "duplicate", From: ID(300_000), Before: ID(800_000)}, []Index{ByStatus},
			func(g int) bool { return Status(g) == "duplicate" && wideG(g) }},
		{"next page", Big, ixstore.MessageListParams{Before: ID(deep)}, []Index{ByList, ByID}, deepG},
		{"status, next page", Big, ixstore.MessageListParams{Status: "pending", Before: ID(deep)}, []Index{ByStatus, ByList, ByID},
			func(g int) bool { return Status(g) == "pending" && deepG(g) }},
		{"type, next page", Big, ixstore.MessageListParams{Type: typName, Before: ID(deep)}, []Index{BySearch},
			func(g int) bool { return typG(g) && deepG(g) }},
		{"rare type, next page", Big, ixstore.MessageListParams{Type: RareType, Before: ID(deep)}, []Index{BySearch},
			func(g int) bool { return rareG(g) && deepG(g) }},
		{"small interface", Small, ixstore.MessageListParams{}, []Index{ByList}, all},
		{"small interface, type", Small, ixstore.MessageListParams{Type: typName}, []Index{BySearch}, typG},
		{"tiny interface", Tiny, ixstore.MessageListParams{}, []Index{ByList}, all},
		{"tiny interface, next page", Tiny, ixstore.MessageListParams{Before: ID(deep)}, []Index{ByList}, deepG},
		{"tiny interface, type", Tiny, ixstore.MessageListParams{Type: typName}, []Index{BySearch}, typG},
	}
	out := make([]Case, 0, len(cases))
	for _, c := range cases {
		p := c.p
		p.Interface, p.Limit = c.iface, Limit
		var want []string
		for g := Messages; g >= 1 && len(want) < Limit; g-- {
			if Interface(g) == c.iface && c.keep(g) {
				want = append(want, ID(g))
			}
		}
		out = append(out, Case{Name: c.name, Params: p, Drive: c.drive, Want: want})
	}
	return out
}

// Check compares a page read with MessageList to the case's: the IDs, in
// order, and every field the generator gave each message.
func (c *Case) Check(got []ixstore.Message) error {
	ids := make([]string, len(got))
	for i, m := range got {
		ids[i] = m.ID
	}
	if !slices.Equal(ids, c.Want) {
		return fmt.Errorf("%s: got %d messages %v, want %d %v", c.Name, len(ids), ids, len(c.Want), c.Want)
	}
	for _, m := range got {
		var g int
		if _, err := fmt.Sscanf(m.ID[len(m.ID)-12:], "%x", &g); err != nil {
			return fmt.Errorf("%s: message %s: %v", c.Name, m.ID, err)
		}
		want := ixstore.Message{ID: ID(g), Interface: Interface(g), ReceivedAt: time.UnixMilli(Millis(g)), Status: Status(g), Key: Key(g),
			DedupeKey: Dedupe(g), Type: Type(g), Payload: []byte(Payload)}
		if m.ID != want.ID || m.Interface != want.Interface || !m.ReceivedAt.Equal(want.ReceivedAt) || m.Status != want.Status ||
			m.Key != want.Key || m.DedupeKey != want.DedupeKey || m.Type != want.Type || string(m.Payload) != Payload || m.Lane != 0 {
			return fmt.Errorf("%s: read %+v, want %+v", c.Name, m, want)
		}
	}
	return nil
}
