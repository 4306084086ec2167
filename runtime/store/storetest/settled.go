package storetest

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/ductus/ductus/actor"
	"github.com/ductus/ductus/runtime/store"
)

// SettledReminders reads ref's reminders, then its actor, then its
// reminders again, and returns the first two once no reminder fired among
// the reads (both reminder reads show the same occurrences). Suites that
// check "one mailbox row per occurrence" compare what it returns.
//
// The reads are separate statements, and a scheduler that is gone may
// still have a fire in flight: MariaDB runs a multi-statement batch to its
// end, COMMIT included, after its client was SIGKILLed or its context was
// cancelled by a Shutdown while the batch waited on a lock. A fire is one
// more occurrence and one more mailbox row together, but one that lands
// between the reminder read and the actor read pairs an occurrence count
// with the next occurrence's row. Only the reads are repeated, never the
// caller's comparison, so a real mismatch still fails. Transient errors
// (a worker's connection cut by a crash test) are retried.
func SettledReminders(ctx context.Context, be store.Backend, ref actor.Ref) ([]store.ReminderInfo, *store.ActorInfo, error) {
	sameFires := func(a, b store.ReminderInfo) bool { return a.ID == b.ID && a.Occurrence == b.Occurrence }
	for tries := 0; ; tries++ {
		var before, after []store.ReminderInfo
		var info *store.ActorInfo
		err := store.Retry(ctx, 20, func() error {
			var err error
			if before, err = be.ReminderList(ctx, ref); err != nil {
				return err
			}
			if info, err = be.ActorGet(ctx, ref); err != nil {
				return err
			}
			after, err = be.ReminderList(ctx, ref)
			return err
		})
		if err != nil {
			return nil, nil, err
		}
		if slices.EqualFunc(before, after, sameFires) {
			return before, info, nil
		}
		if tries == 50 {
			return nil, nil, fmt.Errorf("storetest: %s's reminders still fire after every scheduler stopped: %+v, then %+v", ref, before, after)
		}
		select {
		case <-ctx.Done():
			return nil, nil, ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
}
