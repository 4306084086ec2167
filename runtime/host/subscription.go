package host

import (
	"context"

	"github.com/ductus/ductus/actor"
)

// AuthorizeSubscription checks that ref names a registered type and a valid
// ID and runs the subscription policy for it (with the caller ctx carries),
// without reading any state: the realtime package calls it for a client that
// resumes from its retained updates, where no Observe runs.
func (h *Host) AuthorizeSubscription(ctx context.Context, ref actor.Ref) error {
	if _, err := h.reg.Lookup(ref.Type); err != nil {
		return err
	}
	if err := actor.ValidateID(ref.ID, h.cfg.Limits.IDBytes); err != nil {
		return err
	}
	return h.cfg.Policies.Authorize(ctx, actor.Request{Operation: actor.OpSubscription, Ref: ref})
}
