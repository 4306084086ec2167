package engine

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/ductus/ductus/actor"
	"github.com/ductus/ductus/integration/api"
	"github.com/ductus/ductus/integration/msgstore"
	"github.com/ductus/ductus/runtime/host"
)

// The quarantine across interfaces (GET /api/v1/quarantine). Every
// quarantine is a dead row of a lane: a dead lane message (the transform
// quarantined it, or the lane gave up on it) or a dead send (refused, AR,
// 4xx, max_attempts). The runtime lists the two oldest-first and
// newest-first by their own IDs, so the list reads both, up to
// quarantineCap rows, and merges them newest first by when each stopped.
// Its cost is the quarantine's size, never history's; a quarantine over
// the cap is listed in part and says so.

// quarantineCap bounds the dead rows one listing reads.
const quarantineCap = 10_000

// quarantineBatch is the page size of each runtime read.
const quarantineBatch = 500

// quarantined is one dead row as the list shows it.
type quarantined struct {
	item api.QuarantinedDelivery
	// cursor orders items newest first: the stop time, then the kind and
	// the row's ID, so two rows of one microsecond still have an order.
	cursor string
}

// Quarantine implements api.Engine.
func (e *Engine) Quarantine(ctx context.Context, iface, before string, limit int) (api.QuarantinePage, error) {
	if before != "" {
		if err := checkCursor(before); err != nil {
			return api.QuarantinePage{}, err
		}
	}
	if iface != "" {
		if _, ok := e.ifaces[iface]; !ok {
			return api.QuarantinePage{}, fmt.Errorf("%w: no interface %q in this project", actor.ErrNotFound, iface)
		}
	}
	items, truncated, err := e.deadRows(ctx, iface)
	if err != nil {
		return api.QuarantinePage{}, err
	}
	slices.SortFunc(items, func(a, b quarantined) int { return cmp.Compare(b.cursor, a.cursor) })
	page := api.QuarantinePage{Items: []api.QuarantinedDelivery{}, Truncated: truncated}
	var last string
	for _, it := range items {
		if before != "" && it.cursor >= before {
			continue
		}
		if len(page.Items) == limit {
			page.Next = &last
			break
		}
		page.Items = append(page.Items, it.item)
		last = it.cursor
	}
	if err := e.addMessageKeys(ctx, page.Items); err != nil {
		return api.QuarantinePage{}, err
	}
	return page, nil
}

// deadRows reads the lanes' dead letters and dead sends (of one
// interface, or of all when iface is "").
func (e *Engine) deadRows(ctx context.Context, iface string) ([]quarantined, bool, error) {
	var out []quarantined
	keep := func(ref actor.Ref, m, stopped, reason string, attempts int, at time.Time, row int64) {
		in, dest, _, err := parseLaneID(ref.ID)
		if err != nil || (iface != "" && in != iface) {
			return
		}
		it := api.QuarantinedDelivery{MessageId: m, Interface: in, Destination: dest,
			StoppedAt: api.QuarantinedDeliveryStoppedAt(stopped), Reason: reason, Attempts: attempts, QuarantinedAt: at.UTC()}
		out = append(out, quarantined{item: it, cursor: cursorOf(it) + fmt.Sprintf("-%s%020d", stopped[:1], row)})
	}
	var after actor.MessageID
	for len(out) < quarantineCap {
		dls, err := e.rt.DeadLetters(ctx, host.DeadLetterQuery{Type: laneType, After: after, Limit: quarantineBatch})
		if err != nil {
			return nil, false, fmt.Errorf("engine: list the lanes' dead letters: %w", err)
		}
		for _, d := range dls {
			var a deliverArgs
			if json.Unmarshal(d.Args, &a) == nil && a.M != "" {
				keep(d.Ref, a.M, msgstore.StoppedAtLane, d.Error, d.Attempts, d.DeadAt, int64(d.Message))
			}
		}
		if len(dls) < quarantineBatch {
			break
		}
		after = dls[len(dls)-1].Message
	}
	var beforeFx int64
	for len(out) < quarantineCap {
		fx, err := e.rt.Effects(ctx, host.EffectQuery{State: host.EffectDead, Type: laneType, Before: beforeFx, Limit: quarantineBatch})
		if err != nil {
			return nil, false, fmt.Errorf("engine: list the lanes' dead sends: %w", err)
		}
		for _, f := range fx {
			var a sendArgs
			if json.Unmarshal(f.Args, &a) == nil && a.M != "" {
				keep(f.Ref, a.M, msgstore.StoppedAtSend, f.Error, f.Attempts, f.FinishedAt, f.ID)
			}
		}
		if len(fx) < quarantineBatch {
			break
		}
		beforeFx = fx[len(fx)-1].ID
	}
	return out, len(out) >= quarantineCap, nil
}

// cursorOf is the part of an item's cursor that orders it: its stop time
// in microseconds, zero-padded so cursors compare as strings.
func cursorOf(it api.QuarantinedDelivery) string {
	return fmt.Sprintf("%020d", it.QuarantinedAt.UnixMicro())
}

// addMessageKeys fills each item's received time and ordering key from
// its message (one read for the page).
func (e *Engine) addMessageKeys(ctx context.Context, items []api.QuarantinedDelivery) error {
	ids := make([]string, 0, len(items))
	for _, it := range items {
		ids = append(ids, it.MessageId)
	}
	msgs, err := e.ms.GetMany(ctx, ids)
	if err != nil {
		return err
	}
	byID := make(map[string]*msgstore.Message, len(msgs))
	for i := range msgs {
		byID[msgs[i].ID] = &msgs[i]
	}
	for i := range items {
		if m := byID[items[i].MessageId]; m != nil {
			at := m.ReceivedAt.UTC()
			items[i].ReceivedAt = &at
			if m.Key != "" {
				k := m.Key
				items[i].OrderingKey = &k
			}
		}
	}
	return nil
}

// checkCursor refuses a quarantine cursor this list did not make.
func checkCursor(c string) error {
	num, _, _ := strings.Cut(c, "-")
	if _, err := strconv.ParseUint(num, 10, 64); err != nil || len(num) != 20 {
		return fmt.Errorf("%w: before %q is not a cursor of this list (use its next)", actor.ErrInvalidArguments, c)
	}
	return nil
}
