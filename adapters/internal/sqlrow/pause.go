package sqlrow

import (
	"github.com/ductus/ductus/integration/ixstore"
)

// Paused destinations (ductus_ix_pauses): one row per pause. The insert
// adds a row only where none is (each backend writes its own "do nothing on
// conflict"), so a second pause reports no change instead of replacing the
// first one's who and why.

// IXPauseColumns are ductus_ix_pauses' columns in the order IXPauseArgs
// writes them (readside reads them).
const IXPauseColumns = `interface, destination, reason, paused_by, paused_at`

// The paused destinations' fixed statements.
const (
	IXPauseInsertValues = ` (` + IXPauseColumns + `) VALUES (?, ?, ?, ?, ?)`
	IXPauseDelete       = `DELETE FROM ductus_ix_pauses WHERE interface = ? AND destination = ?`
)

// IXPauseArgs are a pause's values in IXPauseColumns order.
func IXPauseArgs(p *ixstore.Pause) []any {
	return []any{p.Interface, p.Destination, p.Reason, p.By, p.At.UnixMicro()}
}
