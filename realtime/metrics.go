package realtime

import (
	"errors"

	"github.com/prometheus/client_golang/prometheus"
)

// metrics are the handler's Prometheus collectors.
type metrics struct {
	connections   prometheus.Gauge
	subscriptions prometheus.Gauge
	updates       prometheus.Counter
	snapshots     prometheus.Counter
	drops         prometheus.Counter
	refusals      *prometheus.CounterVec
	malformed     prometheus.Counter
}

func newMetrics(reg prometheus.Registerer) (*metrics, error) {
	m := &metrics{
		connections: prometheus.NewGauge(prometheus.GaugeOpts{Name: "ductus_realtime_connections",
			Help: "Open realtime WebSocket connections."}),
		subscriptions: prometheus.NewGauge(prometheus.GaugeOpts{Name: "ductus_realtime_subscriptions",
			Help: "Active realtime subscriptions over all connections."}),
		updates: prometheus.NewCounter(prometheus.CounterOpts{Name: "ductus_realtime_updates_sent_total",
			Help: "Observable changes sent to clients (in update frames, or resumed)."}),
		snapshots: prometheus.NewCounter(prometheus.CounterOpts{Name: "ductus_realtime_snapshots_sent_total",
			Help: "Snapshot frames sent (new subscriptions, failed resumes, and clients that overflowed)."}),
		drops: prometheus.NewCounter(prometheus.CounterOpts{Name: "ductus_realtime_dropped_updates_total",
			Help: "Pending updates dropped because a client's queue overflowed (a snapshot follows)."}),
		refusals: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "ductus_realtime_refusals_total",
			Help: "Refused connections and subscriptions, by error code."}, []string{"code"}),
		malformed: prometheus.NewCounter(prometheus.CounterOpts{Name: "ductus_realtime_malformed_frames_total",
			Help: "Client frames that could not be decoded (each answered with an error frame)."}),
	}
	for _, c := range []prometheus.Collector{m.connections, m.subscriptions, m.updates, m.snapshots, m.drops, m.refusals, m.malformed} {
		if err := reg.Register(c); err != nil {
			var are prometheus.AlreadyRegisteredError
			if errors.As(err, &are) {
				return nil, errors.New("realtime: metrics are already registered (one Handler per registry)")
			}
			return nil, err
		}
	}
	return m, nil
}
