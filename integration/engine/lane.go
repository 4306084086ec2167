package engine

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/ductus/ductus/actor"
	"github.com/ductus/ductus/integration/charset"
	"github.com/ductus/ductus/integration/config"
	"github.com/ductus/ductus/integration/format"
	"github.com/ductus/ductus/integration/msgstore"
	"github.com/ductus/ductus/integration/script"
)

// The engine's actor types. A lane of one destination is an actor whose
// mailbox is that destination's ordered queue for the lane; an interface
// with a schedule source has one schedule actor.
const (
	laneType     = "ductus.lane"
	scheduleType = "ductus.schedule"
)

// deliverArgs is a lane message: the interface message to deliver.
type deliverArgs struct {
	M string `json:"m"`
}

// laneState counts what a lane decided (kept small: the payloads live in
// the message table). A quarantine dead-letters its lane message, whose
// turn commits no state, so quarantines are counted by the lanes' dead
// rows (Host.BacklogByActor), not here; Held stays for the state stored
// by older versions.
type laneState struct {
	Queued   int64 `json:"queued"`
	Filtered int64 `json:"filtered"`
	Held     int64 `json:"quarantined"`
}

// sendArgs is the ordered send effect a lane's turn stages.
type sendArgs struct {
	M          string    `json:"m"`
	Output     []byte    `json:"output"`
	Key        string    `json:"key,omitempty"`
	ReceivedAt time.Time `json:"received_at"`
	// Charset is the set Output is encoded in ("" for UTF-8); for a route,
	// whose Output stays UTF-8 text, the set the message arrived in, which
	// the target interface records as its own arrival set.
	Charset string `json:"charset,omitempty"`
}

// errTransient marks a transform's transient(reason): the lane message is
// retried later, keeping its place (strict order).
var errTransient = errors.New("transient")

// parseLaneID splits "<interface>/<destination>/<lane>".
func parseLaneID(id string) (iface, dest string, lane int, err error) {
	parts := strings.Split(id, "/")
	if len(parts) != 3 {
		return "", "", 0, fmt.Errorf("lane actor ID %q is not interface/destination/lane", id)
	}
	lane, err = strconv.Atoi(parts[2])
	return parts[0], parts[1], lane, err
}

func laneOf(key string, partitions int) int { return format.Lane(key, partitions) }

// laneDefinition runs a destination's transform on each message and stages
// the result's delivery as an ordered effect of the lane (so deliveries of
// a lane go out in message order, and a failing one holds the rest).
func (e *Engine) laneDefinition() *actor.Type[laneState] {
	return &actor.Type[laneState]{
		Name: laneType,
		Messages: map[string]actor.Handler[laneState]{
			"deliver": actor.Message(func(c *actor.Context, s *laneState, a deliverArgs) (msgstore.LaneResult, error) {
				return e.deliver(c, s, a)
			}),
			// hold does nothing: a pause asks it of a lane that has had
			// no message yet, so that the lane's actor exists to be paused
			// (pause.go).
			"hold": actor.Message(func(*actor.Context, *laneState, struct{}) (struct{}, error) {
				return struct{}{}, nil
			}),
		},
	}
}

func (e *Engine) deliver(c *actor.Context, s *laneState, a deliverArgs) (msgstore.LaneResult, error) {
	ifaceName, destName, _, err := parseLaneID(c.Ref().ID)
	if err != nil {
		return msgstore.LaneResult{}, actor.Permanent(err)
	}
	ir := e.ifaces[ifaceName]
	if ir == nil {
		// The interface was removed from the project: nothing will deliver
		// it; record that rather than retry forever.
		s.Filtered++
		return msgstore.LaneResult{Status: msgstore.DeliveryFiltered, Reason: "the interface is no longer in the project"}, nil
	}
	dest := ir.cfg.Destination(destName)
	if dest == nil {
		s.Filtered++
		return msgstore.LaneResult{Status: msgstore.DeliveryFiltered, Reason: "the destination was removed from the interface"}, nil
	}
	m, err := e.ms.Queued(c, a.M)
	if err != nil {
		return msgstore.LaneResult{}, err // a read failure: retry
	}
	origin, _ := m.Meta["origin_id"].(string)
	res, err := e.scripts.Call(c, ifaceName, dest.Transform, script.Input{
		Format:       script.Format(ir.cfg.Format),
		Payload:      m.Payload,
		Meta:         script.Meta{ID: m.ID, ReceivedAt: m.ReceivedAt, Destination: destName, Origin: origin},
		OutputFormat: script.Format(dest.Format),
	})
	if err != nil {
		if errors.Is(err, script.ErrInterfaceStopped) {
			// Stopped after repeated runaways: the messages wait, pending,
			// until the interface is restarted (SIGHUP or a new process).
			e.noteStopped(ir)
			return msgstore.LaneResult{}, fmt.Errorf("interface %s is stopped after repeated runaway scripts (restart it with SIGHUP): %w", ifaceName, err)
		}
		return msgstore.LaneResult{}, err
	}
	switch res.Kind {
	case script.KindOutput:
		out, cs, err := e.outputBytes(dest, m, res.Output)
		if err != nil {
			// Sending cannot succeed however often it is retried: the
			// delivery is quarantined, where an operator can edit and resend.
			return msgstore.LaneResult{}, e.quarantine(ifaceName, destName, m.ID, err.Error(), err.Error())
		}
		if err := e.stageDelivery(c, dest, m, out, cs); err != nil {
			return msgstore.LaneResult{}, err
		}
		s.Queued++
		r := msgstore.LaneResult{Status: "queued"}
		if dest.SaveOutput {
			r.Output = res.Output
		}
		return r, nil
	case script.KindFiltered:
		s.Filtered++
		e.met.filtered.WithLabelValues(ifaceName, destName).Inc()
		if st := e.statsOf(ifaceName, destName); st != nil {
			st.filtered.Add(1)
		}
		return msgstore.LaneResult{Status: msgstore.DeliveryFiltered, Reason: res.Reason}, nil
	case script.KindTransient:
		return msgstore.LaneResult{}, fmt.Errorf("%w: %s", errTransient, res.Reason)
	case script.KindRunaway:
		e.noteStopped(ir) // the third in a row stops the interface
		reason := "runaway script (" + res.Cause.String() + "): " + res.Reason
		return msgstore.LaneResult{}, e.quarantine(ifaceName, destName, m.ID, reason, reason)
	default: // quarantined
		reason := res.Reason
		if res.Stack != "" {
			reason += "\n" + res.Stack
		}
		return msgstore.LaneResult{}, e.quarantine(ifaceName, destName, m.ID, res.Reason, reason)
	}
}

// quarantine ends a lane message the lane quarantines (the transform's
// quarantine(), a runaway, an output that cannot be encoded): it is
// dead-lettered at once with the reason, like a send refused for good, so
// every kind of quarantine is a dead row of the lane (counted by the
// lanes' backlog, listed and discarded the same way) and the lane goes on
// with its next message. logged is the reason for the log line (without a
// script's stack).
func (e *Engine) quarantine(iface, dest, msgID, logged, reason string) error {
	e.quarantined(iface, dest, msgID, logged)
	return actor.Permanent(errors.New(reason))
}

// stageDelivery stages the destination's send (or, for a route, the hop
// into the target interface) as an ordered effect of this lane.
func (e *Engine) stageDelivery(c *actor.Context, dest *config.Destination, m *msgstore.Message, out []byte, cs charset.Charset) error {
	a := sendArgs{M: m.ID, Output: out, Key: m.Key, ReceivedAt: m.ReceivedAt}
	if !cs.IsUTF8() {
		a.Charset = cs.Name()
	}
	return c.Emit(effectName(dest), a)
}

// outputBytes is what a destination sends for a transform's output: the
// bytes in the destination's character set (see charsets.go). A route
// hands the UTF-8 text on, with the set the message arrived in.
func (e *Engine) outputBytes(dest *config.Destination, m *msgstore.Message, out []byte) ([]byte, charset.Charset, error) {
	arrived := arrivedIn(m)
	if dest.Type == config.DestInterface {
		return out, arrived, nil
	}
	return encodeOutput(dest, arrived, out)
}

// effectName is the ordered effect of a destination: each destination
// registers its own, with its own retry policy.
func effectName(d *config.Destination) string {
	if d.Type == config.DestInterface {
		return "ductus.route:" + d.Interface + "/" + d.Name
	}
	return "ductus.send:" + d.Interface + "/" + d.Name
}

// quarantined counts a quarantined delivery and writes its one log line,
// so an operator watching the log (or alerting on it) sees every message
// that now waits for a person.
func (e *Engine) quarantined(iface, dest, msgID, reason string) {
	e.met.quarantined.WithLabelValues(iface, dest).Inc()
	if st := e.statsOf(iface, dest); st != nil {
		st.quarantined.Add(1)
	}
	e.log.Warn("message quarantined", "interface", iface, "destination", dest, "message", msgID, "reason", reason)
}
