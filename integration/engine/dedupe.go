package engine

import (
	"context"
	"time"
)

// dedupePruneBatch bounds one prune transaction, so pruning a large
// backlog never holds locks (or a SQLite writer) for long.
const dedupePruneBatch = 1000

// defaultDedupePruneEvery is how often expired dedupe keys are deleted.
const defaultDedupePruneEvery = time.Minute

// pruneDedupeLoop deletes expired dedupe keys on a timer until ctx ends.
// Without it the dedupe table would grow by one row per message forever;
// an expired key no longer dedupes anything (a claim takes it over).
func (e *Engine) pruneDedupeLoop(ctx context.Context, every time.Duration) {
	if every <= 0 {
		every = defaultDedupePruneEvery
	}
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		e.pruneDedupe(ctx)
	}
}

// pruneDedupe deletes every interface's expired dedupe keys, a bounded
// batch per transaction, and returns how many it deleted.
func (e *Engine) pruneDedupe(ctx context.Context) int64 {
	var total int64
	for name, ir := range e.ifaces {
		if ir.dedupe == nil {
			continue
		}
		// A key is kept a little past its window so a claim racing the
		// prune at the boundary still finds it (the claim replaces it
		// anyway once it has expired).
		before := time.Now().Add(-ir.cfg.Dedupe.Window - time.Second)
		for ctx.Err() == nil {
			n, err := e.ms.PruneDedupe(ctx, name, before, dedupePruneBatch)
			if err != nil {
				if ctx.Err() == nil {
					e.log.Warn("pruning expired dedupe keys failed; trying again later", "interface", name, "err", err)
				}
				break
			}
			total += n
			if n < dedupePruneBatch {
				break
			}
		}
	}
	if total > 0 {
		e.log.Debug("pruned expired dedupe keys", "deleted", total)
	}
	return total
}
