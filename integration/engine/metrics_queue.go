package engine

import (
	"context"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// queueCollector exports the destinations' queues and the engine's gate at
// scrape time, from what /interfaces answers: one query over the lanes'
// backlog (Host.BacklogByActor, whose cost grows with what is pending or
// dead, not with history) per scrape, and nothing between scrapes.
type queueCollector struct{ e *Engine }

var (
	pendingDesc = prometheus.NewDesc("ductus_destination_pending",
		"Lane messages and sends of a destination not yet done (every engine's on the database).",
		[]string{"interface", "destination"}, nil)
	quarantinedDesc = prometheus.NewDesc("ductus_destination_quarantined",
		"A destination's deliveries quarantined (dead sends and dead lane messages) and not yet resent or dismissed.",
		[]string{"interface", "destination"}, nil)
	oldestDesc = prometheus.NewDesc("ductus_destination_oldest_pending_age_seconds",
		"How long the oldest of a destination's pending lane messages and sends has waited (0 when none is pending).",
		[]string{"interface", "destination"}, nil)
	pausedDesc = prometheus.NewDesc("ductus_destination_paused",
		"1 while an operator has the destination paused, else 0.",
		[]string{"interface", "destination"}, nil)
	drainingDesc = prometheus.NewDesc("ductus_engine_draining",
		"1 while this engine's gates are closed for a drain, else 0.", nil, nil)
	inFlightDesc = prometheus.NewDesc("ductus_intake_in_flight",
		"Intakes (messages being stored) in progress in this engine.", nil, nil)
)

// queueScrapeTimeout bounds the scrape's query.
const queueScrapeTimeout = 5 * time.Second

func (c queueCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{pendingDesc, quarantinedDesc, oldestDesc, pausedDesc, drainingDesc, inFlightDesc} {
		ch <- d
	}
}

func (c queueCollector) Collect(ch chan<- prometheus.Metric) {
	e := c.e
	gauge := func(d *prometheus.Desc, v float64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, v, labels...)
	}
	draining := 0.0
	if e.drain.gateClosed() {
		draining = 1
	}
	gauge(drainingDesc, draining)
	gauge(inFlightDesc, float64(e.drain.inflight.Load()))
	ctx, cancel := context.WithTimeout(context.Background(), queueScrapeTimeout)
	defer cancel()
	ifs, err := e.Interfaces(ctx)
	if err != nil {
		// The scrape says it failed rather than report zeros.
		ch <- prometheus.NewInvalidMetric(pendingDesc, err)
		return
	}
	now := time.Now()
	for _, in := range ifs {
		for _, d := range in.Destinations {
			paused := 0.0
			if d.Paused != nil {
				paused = 1
			}
			gauge(pendingDesc, float64(d.Pending), in.Name, d.Name)
			gauge(quarantinedDesc, float64(d.Quarantined), in.Name, d.Name)
			age := 0.0
			if d.OldestPendingAt != nil {
				age = max(0, now.Sub(*d.OldestPendingAt).Seconds())
			}
			gauge(oldestDesc, age, in.Name, d.Name)
			gauge(pausedDesc, paused, in.Name, d.Name)
		}
	}
}
