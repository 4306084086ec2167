package engine

import "github.com/prometheus/client_golang/prometheus"

type metrics struct {
	received     *prometheus.CounterVec
	duplicates   *prometheus.CounterVec
	intakeErrors *prometheus.CounterVec
	filtered     *prometheus.CounterVec
	quarantined  *prometheus.CounterVec
	sent         *prometheus.CounterVec
	resent       *prometheus.CounterVec
	dismissed    *prometheus.CounterVec
	sendRetries  *prometheus.CounterVec
	sendWaits    *prometheus.CounterVec
	groupSize    prometheus.Histogram // intakes per group transaction
	groupSplits  prometheus.Counter   // group transactions run again one intake at a time
}

func newMetrics(reg prometheus.Registerer) *metrics {
	vec := func(name, help string, labels ...string) *prometheus.CounterVec {
		c := prometheus.NewCounterVec(prometheus.CounterOpts{Name: name, Help: help}, labels)
		reg.MustRegister(c)
		return c
	}
	groupSize := prometheus.NewHistogram(prometheus.HistogramOpts{
		Name: "ductus_intake_group_size", Help: "Intakes (source calls) stored by one group transaction.",
		Buckets: []float64{1, 2, 4, 8, 16, 32, 64, 128},
	})
	groupSplits := prometheus.NewCounter(prometheus.CounterOpts{
		Name: "ductus_intake_group_splits_total", Help: "Group transactions that failed before their commit and were run again one intake at a time.",
	})
	reg.MustRegister(groupSize, groupSplits)
	return &metrics{
		groupSize:    groupSize,
		groupSplits:  groupSplits,
		received:     vec("ductus_messages_received_total", "Messages stored by an interface's intake.", "interface"),
		duplicates:   vec("ductus_messages_duplicate_total", "Messages stored as duplicates (never queued).", "interface"),
		intakeErrors: vec("ductus_intake_errors_total", "Intake transactions that failed (the source answered a retryable error).", "interface"),
		filtered:     vec("ductus_deliveries_filtered_total", "Deliveries a transform filtered.", "interface", "destination"),
		quarantined:  vec("ductus_deliveries_quarantined_total", "Deliveries quarantined (transform, refusal, runaway).", "interface", "destination"),
		resent:       vec("ductus_deliveries_resent_total", "Deliveries an operator resent or replayed.", "interface", "destination"),
		dismissed:    vec("ductus_deliveries_dismissed_total", "Quarantined deliveries an operator dismissed.", "interface", "destination"),
		sent:         vec("ductus_deliveries_sent_total", "Deliveries the destination confirmed.", "interface", "destination"),
		sendRetries:  vec("ductus_delivery_retries_total", "Delivery attempts that failed transiently.", "interface", "destination"),
		sendWaits:    vec("ductus_delivery_waits_total", "Delivery attempts that sent nothing because the destination was not free in time (rate limit, busy connections); tried again.", "interface", "destination"),
	}
}
