package engine

import (
	"context"

	"github.com/ductus/ductus/integration/config"
	"github.com/ductus/ductus/runtime/host"
)

// routeSender is a destination of type interface: the hop stores the
// output in the target interface's intake. The origin (source message and
// destination) is unique in the target, so a hop retried after its commit
// stores nothing twice: exactly once per hop.
type routeSender struct {
	e    *Engine
	dest *config.Destination
}

func (r *routeSender) send(ctx context.Context, _ host.EffectContext, a sendArgs) error {
	_, err := r.e.Intake(ctx, r.dest.Route.Interface, []Record{{
		Payload: a.Output, Origin: a.M + "/" + r.dest.Name, OriginID: a.M,
		Meta: routeMeta(r.dest.Interface, a.Charset),
	}}, nil)
	return err
}

func (r *routeSender) close() error { return nil }

// routeMeta is a routed message's meta: where it came from and, when it
// was not UTF-8, the set it first arrived in, so the target's destinations
// send it in that set by default as the source's would.
func routeMeta(from, arrived string) map[string]any {
	m := map[string]any{"source": "route", "from": from}
	if arrived != "" {
		m[metaCharset] = arrived
	}
	return m
}
