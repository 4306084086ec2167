package engine

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/ductus/ductus/actor"
	"github.com/ductus/ductus/integration/api"
	"github.com/ductus/ductus/integration/config"
	"github.com/ductus/ductus/integration/hl7"
	"github.com/ductus/ductus/integration/ixstore"
	"github.com/ductus/ductus/integration/msgstore"
	"github.com/ductus/ductus/runtime/host"
)

// The engine as the operator API reads it (api.Engine). The counts come
// from the runtime's unfinished and dead rows, grouped by lane actor in
// one query, so they cost what the backlog costs, never what history
// costs; messages are read by ID or through the browser's indexes, each
// ending in the ID (migration 0005; the adapters' search_plan_test.go
// holds the plans to it over a million messages).

var _ api.Engine = (*Engine)(nil)

// Info implements api.Engine.
func (e *Engine) Info(ctx context.Context) (api.EngineInfo, error) {
	procs, err := e.rt.Processes(ctx, host.ProcessQuery{})
	if err != nil {
		return api.EngineInfo{}, fmt.Errorf("engine: list processes: %w", err)
	}
	out := api.EngineInfo{
		Version: e.opts.Version, StartedAt: e.startedAt, UptimeSeconds: float32(time.Since(e.startedAt).Seconds()),
		Backend: e.be.Name(), ProcessId: e.rt.ID(), Processes: make([]api.Process, 0, len(procs)),
	}
	for _, p := range procs {
		out.Processes = append(out.Processes, api.Process{Id: p.ID, Kind: p.Kind, Host: p.Host, Pid: p.PID, Version: p.Version,
			StartedAt: p.StartedAt, HeartbeatAt: p.HeartbeatAt, Running: p.StoppedAt.IsZero()})
	}
	return out, nil
}

// destCounts are one destination's counts.
type destCounts struct {
	pending, quarantined int64
	oldest               time.Time // of the pending work (zero: none)
}

// Interfaces implements api.Engine.
func (e *Engine) Interfaces(ctx context.Context) ([]api.Interface, error) {
	counts, err := e.laneCounts(ctx)
	if err != nil {
		return nil, err
	}
	out := make([]api.Interface, 0, len(e.proj.Interfaces))
	now := time.Now()
	for _, in := range e.proj.Interfaces {
		it := api.Interface{Name: in.Name, State: "running", Format: string(in.Format),
			Sources: []string{describeSource(in.Source)}, Destinations: make([]api.Destination, 0, len(in.Destinations))}
		if ir := e.ifaces[in.Name]; ir != nil {
			it.Throughput = ir.tp.view(now)
		}
		if st, ok := e.InterfaceStatus(in.Name); ok && st.Stopped {
			it.State = "stopped"
			it.LastRunaway = &st.LastRunaway
		}
		for _, d := range in.Destinations {
			c := counts[destKey(in.Name, d.Name)]
			if c == nil {
				c = &destCounts{}
			}
			ad := api.Destination{Name: d.Name, Type: string(d.Type), Pending: c.pending, Quarantined: c.quarantined}
			if !c.oldest.IsZero() {
				at := c.oldest.UTC()
				ad.OldestPendingAt = &at
			}
			if st := e.statsOf(in.Name, d.Name); st != nil {
				ad.SinceStart = sinceStart(st)
			}
			if p, ok := e.paused.get(destKey(in.Name, d.Name)); ok {
				v := pauseView(p)
				ad.Paused = &v
			}
			it.Destinations = append(it.Destinations, ad)
		}
		out = append(out, it)
	}
	return out, nil
}

// sinceStart is a destination's in-process stats as the API shows them.
func sinceStart(st *destStats) *api.SinceStart {
	out := &api.SinceStart{Sent: st.sent.Load(), Quarantined: st.quarantined.Load(), Filtered: st.filtered.Load()}
	if p50, p95, ok := st.percentiles(); ok {
		ms := func(d time.Duration) *float32 {
			v := float32(d.Microseconds()) / 1000
			return &v
		}
		out.LatencyP50Ms, out.LatencyP95Ms = ms(p50), ms(p95)
	}
	return out
}

// laneCounts is each destination's pending and quarantined work, by
// "<interface>/<destination>", from one query over the lanes' backlog.
func (e *Engine) laneCounts(ctx context.Context) (map[string]*destCounts, error) {
	rows, err := e.rt.BacklogByActor(ctx, laneType)
	if err != nil {
		return nil, fmt.Errorf("engine: count the lanes' backlog: %w", err)
	}
	counts := map[string]*destCounts{}
	for _, r := range rows {
		i := strings.LastIndexByte(r.ID, '/')
		if i < 0 {
			continue
		}
		c := counts[r.ID[:i]]
		if c == nil {
			c = &destCounts{}
			counts[r.ID[:i]] = c
		}
		c.pending += r.Messages + r.Effects
		c.quarantined += r.DeadLetters + r.DeadEffects
		if !r.Oldest.IsZero() && (c.oldest.IsZero() || r.Oldest.Before(c.oldest)) {
			c.oldest = r.Oldest
		}
	}
	return counts, nil
}

// describeSource is a source as an operator would name it.
func describeSource(s config.Source) string {
	switch {
	case s.MLLP != nil:
		return "mllp " + s.MLLP.Listen
	case s.HTTP != nil:
		return "http " + s.HTTP.Listen + s.HTTP.Path
	case s.File != nil:
		return "file " + s.File.Path
	default:
		return string(s.Type)
	}
}

// Messages implements api.Engine. A time range is an ID range: IDs are
// UUIDv7s, whose first 48 bits are the millisecond they were made at
// (the intake's), so the filters and the page are one index range.
func (e *Engine) Messages(ctx context.Context, q api.MessageQuery) ([]api.MessageSummary, error) {
	if _, ok := e.ifaces[q.Interface]; !ok {
		return nil, fmt.Errorf("%w: no interface %q in this project", actor.ErrNotFound, q.Interface)
	}
	p := ixstore.MessageListParams{Interface: q.Interface, Before: q.Before, Key: q.Key, DedupeKey: q.DedupeKey,
		Type: q.Type, Status: q.Status, Limit: q.Limit}
	if !q.Until.IsZero() {
		if u := api.IDFloor(q.Until); p.Before == "" || u < p.Before {
			p.Before = u
		}
	}
	if !q.Since.IsZero() {
		p.From = api.IDFloor(q.Since)
	}
	if !q.Since.IsZero() && !q.Until.IsZero() && !q.Since.Before(q.Until) {
		return nil, fmt.Errorf("%w: since (%s) must be before until (%s)", actor.ErrInvalidArguments,
			q.Since.Format(time.RFC3339Nano), q.Until.Format(time.RFC3339Nano))
	}
	msgs, err := e.ms.Search(ctx, p)
	if err != nil {
		return nil, err
	}
	out := make([]api.MessageSummary, len(msgs))
	for i := range msgs {
		out[i] = summary(&msgs[i])
	}
	return out, nil
}

// summary is a stored message without its payload.
func summary(m *msgstore.Message) api.MessageSummary {
	opt := func(s string) *string {
		if s == "" {
			return nil
		}
		return &s
	}
	lane := m.Lane
	routed, _ := m.Meta["origin_id"].(string)
	edited, _ := m.Meta["edited_from"].(string)
	return api.MessageSummary{Id: m.ID, Interface: m.Interface, ReceivedAt: m.ReceivedAt.UTC(), Status: m.Status,
		OrderingKey: opt(m.Key), Lane: &lane, DedupeKey: opt(m.DedupeKey), DuplicateOf: opt(m.DuplicateOf),
		Origin: opt(m.Origin), Type: opt(m.Type), RoutedFrom: opt(routed), EditedFrom: opt(edited), Size: len(m.Payload)}
}

// message reads a message; an unknown ID is actor.ErrNotFound naming it.
func (e *Engine) message(ctx context.Context, id string) (*msgstore.Message, []msgstore.DeliveryStatus, error) {
	m, err := e.ms.Get(ctx, id)
	if errors.Is(err, actor.ErrNotFound) {
		return nil, nil, fmt.Errorf("%w: no message %q", actor.ErrNotFound, id)
	}
	if err != nil {
		return nil, nil, err
	}
	ds, err := e.ms.Deliveries(ctx, id)
	if err != nil {
		return nil, nil, err
	}
	return m, ds, nil
}

// Message implements api.Engine.
func (e *Engine) Message(ctx context.Context, id string) (api.Message, error) {
	m, ds, err := e.message(ctx, id)
	if err != nil {
		return api.Message{}, err
	}
	out := api.Message{Message: summary(m), Settled: api.MessageSettled(msgstore.Settled(ds)), Deliveries: make([]api.Delivery, len(ds))}
	if m.Status == msgstore.StatusDuplicate || len(ds) == 0 {
		// A duplicate or a rejected record was never queued: nothing
		// is pending for it.
		out.Settled = api.MessageSettled(msgstore.DeliveryFiltered)
	}
	for i, d := range ds {
		out.Deliveries[i] = api.Delivery{Destination: d.Destination, Status: api.DeliveryStatus(d.Status), Attempts: d.Attempts}
		if d.Reason != "" {
			out.Deliveries[i].Reason = &d.Reason
		}
		if !d.DismissedAt.IsZero() {
			at := d.DismissedAt.UTC()
			out.Deliveries[i].DismissedAt, out.Deliveries[i].DismissedBy = &at, &d.DismissedBy
		}
	}
	return out, nil
}

// MessagePayload implements api.Engine.
func (e *Engine) MessagePayload(ctx context.Context, id string) (api.MessagePayload, error) {
	m, ds, err := e.message(ctx, id)
	if err != nil {
		return api.MessagePayload{}, err
	}
	out := api.MessagePayload{Id: m.ID, Outputs: []api.Output{}}
	out.Encoding, out.Payload = textOrBase64(m.Payload)
	if ir, ok := e.ifaces[m.Interface]; ok && ir.cfg.Format == config.FormatHL7v2 {
		if segs := parsedView(m.Payload); segs != nil {
			out.Segments = &segs
		}
	}
	for _, d := range ds {
		if d.Output != nil {
			_, text := textOrBase64(d.Output)
			out.Outputs = append(out.Outputs, api.Output{Destination: d.Destination, Output: text})
		}
	}
	return out, nil
}

// textOrBase64 is stored bytes as JSON can carry them.
func textOrBase64(b []byte) (api.MessagePayloadEncoding, string) {
	if utf8.Valid(b) {
		return "utf-8", string(b)
	}
	return "base64", base64.StdEncoding.EncodeToString(b)
}

// parsedView is an HL7 message's segments and non-empty fields, or nil
// when the payload does not parse (the raw payload still shows).
func parsedView(payload []byte) []api.Segment {
	msg, err := hl7.Parse(payload)
	if err != nil {
		return nil
	}
	var out []api.Segment
	for _, s := range msg.Segments("") {
		seg := api.Segment{Name: s.Name(), Fields: []api.Field{}}
		for n := 1; n <= s.Fields(); n++ {
			if v := s.Field(n); v != "" {
				seg.Fields = append(seg.Fields, api.Field{Position: fmt.Sprintf("%s-%d", s.Name(), n), Value: v})
			}
		}
		out = append(out, seg)
	}
	return out
}

// Gatherer implements api.Engine: Metrics and the destinations' queue
// gauges, read from the database once per scrape.
func (e *Engine) Gatherer() prometheus.Gatherer { return prometheus.Gatherers{e.reg, e.queues} }
