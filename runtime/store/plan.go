package store

import (
	"cmp"
	"fmt"
	"slices"
	"time"

	"github.com/ductus/ductus/actor"
)

// EnqueueGroup is the part of an enqueue batch addressed to one actor.
type EnqueueGroup struct {
	Ref actor.Ref
	// Indexes are the messages' positions in the batch, in batch order
	// (which becomes their sequence order).
	Indexes []int
	// Create is false when every message of the group is MustExist: the
	// actor is then only looked up, never created.
	Create bool
	// System counts the group's System messages (they may use the
	// reserved allowance over the cap).
	System int
}

// PlanEnqueue groups a batch by actor and orders the groups by (type, id):
// every adapter locks actors in this one order, so two concurrent batches
// over overlapping actors cannot deadlock.
func PlanEnqueue(msgs []NewMessage) []EnqueueGroup {
	byRef := map[actor.Ref]int{}
	var groups []EnqueueGroup
	for i, m := range msgs {
		g, ok := byRef[m.Ref]
		if !ok {
			g = len(groups)
			byRef[m.Ref] = g
			groups = append(groups, EnqueueGroup{Ref: m.Ref})
		}
		groups[g].Indexes = append(groups[g].Indexes, i)
		if !m.MustExist {
			groups[g].Create = true
		}
		if m.System {
			groups[g].System++
		}
	}
	slices.SortFunc(groups, func(a, b EnqueueGroup) int {
		return cmp.Or(cmp.Compare(a.Ref.Type, b.Ref.Type), cmp.Compare(a.Ref.ID, b.Ref.ID))
	})
	return groups
}

// SplitDuplicates decides which messages of a group are new: a message whose
// idempotency key already exists (existing maps key to message ID) or
// repeats an earlier key of the same batch is a duplicate. It fills the
// duplicates' results and returns the indexes of the new messages in order.
func SplitDuplicates(msgs []NewMessage, g EnqueueGroup, existing map[string]int64, results []EnqueueResult) (fresh []int, firstOfKey map[string]int) {
	firstOfKey = map[string]int{}
	for _, i := range g.Indexes {
		key := msgs[i].IdempotencyKey
		if key == "" {
			fresh = append(fresh, i)
			continue
		}
		if id, ok := existing[key]; ok {
			results[i] = EnqueueResult{MessageID: id, Duplicate: true}
			continue
		}
		if _, ok := firstOfKey[key]; ok {
			results[i].Duplicate = true // filled from the first after insert
			continue
		}
		firstOfKey[key] = i
		fresh = append(fresh, i)
	}
	return fresh, firstOfKey
}

// FillBatchDuplicates copies the first message's ID to later messages of
// the same batch that repeated its idempotency key.
func FillBatchDuplicates(msgs []NewMessage, g EnqueueGroup, firstOfKey map[string]int, results []EnqueueResult) {
	for _, i := range g.Indexes {
		key := msgs[i].IdempotencyKey
		if key == "" || !results[i].Duplicate || results[i].MessageID != 0 {
			continue
		}
		first := results[firstOfKey[key]]
		results[i] = EnqueueResult{MessageID: first.MessageID, ActorPK: first.ActorPK, Seq: first.Seq, Duplicate: true}
	}
}

// CheckCap returns a *actor.MailboxFullError when adding fresh messages
// (system of them System) to unfinished would pass the cap.
func CheckCap(ref actor.Ref, unfinished int64, fresh, system int, p *MailboxEnqueueParams) error {
	if p.MailboxCap <= 0 || fresh == 0 {
		return nil
	}
	limit := int64(p.MailboxCap)
	if fresh == system {
		limit += int64(p.SystemAllowance)
	}
	if unfinished+int64(fresh) > limit {
		return &actor.MailboxFullError{Ref: ref, Limit: p.MailboxCap}
	}
	return nil
}

// Due is the due time of a message: its AvailableAt when set, else the
// database's now plus its Delay (now is in the backend's unit, micros).
func Due(m NewMessage, nowMicros int64) int64 {
	if !m.AvailableAt.IsZero() {
		return m.AvailableAt.UnixMicro()
	}
	return nowMicros + m.Delay.Microseconds()
}

// Micros converts a duration to whole microseconds, the unit every
// backend's interval arithmetic uses.
func Micros(d time.Duration) int64 { return d.Microseconds() }

// ValidateEnqueue rejects params the adapters must not see.
func ValidateEnqueue(p *MailboxEnqueueParams) error {
	for i, m := range p.Messages {
		if m.Ref.Type == "" || m.Ref.ID == "" || m.Name == "" {
			return fmt.Errorf("store: enqueue message %d: type, ID and name are required", i)
		}
		if m.Args == nil {
			p.Messages[i].Args = []byte("null")
		}
	}
	return nil
}
