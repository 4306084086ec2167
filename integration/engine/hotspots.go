package engine

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"slices"

	"github.com/ductus/ductus/actor"
	"github.com/ductus/ductus/integration/api"
	"github.com/ductus/ductus/runtime/host"
)

// Hotspots: where an interface's backlog is stuck. A lane sends one
// message at a time, in order (its sends are ordered effects), so a lane
// whose first send has failed holds every later message of the lane: the
// runtime lists exactly those heads (EffectQuery.Blocking: pending ordered
// effects with an error). With the lanes' backlog (BacklogByActor) that
// tells, per destination, which lanes are blocked and by which message,
// whether every lane with work is blocked (the receiver, not a message, is
// the trouble), and whether one lane holds most of the backlog (a busy
// key). Both reads cost what is pending, never the history, and run only
// when someone asks.
//
// A lane held by its transform's transient() (the lane message retried in
// place) is not listed: the runtime keeps that message's error on the
// message, not on an effect.

// hotLaneMin is the backlog a lane needs before it can be called hot.
const hotLaneMin = 100

// maxBlockingHeads bounds the blocking sends read for one report (a lane
// has at most one, so this is lanes, across every interface).
const maxBlockingHeads = 10_000

// maxHotspotLanes bounds the lanes a destination's report lists.
const maxHotspotLanes = 200

// Hotspots implements api.Engine.
func (e *Engine) Hotspots(ctx context.Context, iface string) (api.HotspotReport, error) {
	ir, ok := e.ifaces[iface]
	if !ok {
		return api.HotspotReport{}, fmt.Errorf("%w: no interface %q in this project", actor.ErrNotFound, iface)
	}
	backlog, err := e.rt.BacklogByActor(ctx, laneType)
	if err != nil {
		return api.HotspotReport{}, fmt.Errorf("engine: hotspots: count the lanes' backlog: %w", err)
	}
	heads, err := e.rt.Effects(ctx, host.EffectQuery{State: host.EffectPending, Type: laneType, Blocking: true, Limit: maxBlockingHeads})
	if err != nil {
		return api.HotspotReport{}, fmt.Errorf("engine: hotspots: read the blocked lanes: %w", err)
	}
	blocked := map[string]*host.EffectInfo{}
	for i := range heads {
		blocked[heads[i].Ref.ID] = &heads[i]
	}
	// Each destination's lanes with work go into its Lanes, which
	// pickHotspots then narrows.
	byDest := map[string]*api.DestinationHotspots{}
	for _, r := range backlog {
		in, dest, lane, err := parseLaneID(r.ID)
		waiting := r.Messages + r.Effects
		if err != nil || in != iface || waiting == 0 {
			continue
		}
		d := byDest[dest]
		if d == nil {
			d = &api.DestinationHotspots{Destination: dest}
			byDest[dest] = d
		}
		d.Waiting += waiting
		d.LanesWaiting++
		h := api.Hotspot{Lane: lane, Waiting: waiting}
		if fx := blocked[r.ID]; fx != nil {
			d.LanesBlocked++
			blockedBy(&h, fx)
		}
		d.Lanes = append(d.Lanes, h)
	}
	out := api.HotspotReport{Interface: iface, Destinations: []api.DestinationHotspots{}}
	for _, dc := range ir.cfg.Destinations { // the project's order
		d := byDest[dc.Name]
		if d == nil {
			continue
		}
		d.ReceiverDown = d.LanesBlocked > 0 && d.LanesBlocked == d.LanesWaiting
		d.Lanes = pickHotspots(d.Lanes, d.Waiting)
		out.Destinations = append(out.Destinations, *d)
	}
	return out, nil
}

// blockedBy fills a blocked lane's row from its failing send: the message
// and its key are the send's arguments.
func blockedBy(h *api.Hotspot, fx *host.EffectInfo) {
	h.Blocked = true
	attempts, since, lastErr := fx.Attempts, fx.CreatedAt.UTC(), fx.Error
	h.Attempts, h.Since, h.LastError = &attempts, &since, &lastErr
	var a sendArgs
	if json.Unmarshal(fx.Args, &a) == nil {
		if a.M != "" {
			h.MessageId = &a.M
		}
		if a.Key != "" {
			h.Key = &a.Key
		}
	}
}

// pickHotspots keeps the blocked lanes and a hot one (at least hotLaneMin
// waiting and more than half of the destination's backlog), most waiting
// first, at most maxHotspotLanes.
func pickHotspots(all []api.Hotspot, total int64) []api.Hotspot {
	out := []api.Hotspot{}
	for _, h := range all {
		h.Hot = h.Waiting >= hotLaneMin && 2*h.Waiting > total
		if h.Blocked || h.Hot {
			out = append(out, h)
		}
	}
	slices.SortFunc(out, func(a, b api.Hotspot) int {
		return cmp.Or(cmp.Compare(b.Waiting, a.Waiting), cmp.Compare(a.Lane, b.Lane))
	})
	if len(out) > maxHotspotLanes {
		out = out[:maxHotspotLanes]
	}
	return out
}
