package host

import (
	"errors"
	"fmt"

	"github.com/prometheus/client_golang/prometheus"
)

// metrics are the runtime's Prometheus collectors, labelled by actor type
// (a bounded set: registered types only) and never by actor ID.
type metrics struct {
	enqueued    *prometheus.CounterVec
	processed   *prometheus.CounterVec
	turns       *prometheus.CounterVec
	commit      prometheus.Histogram
	retries     *prometheus.CounterVec
	deadLetters *prometheus.CounterVec
	leaseLosses *prometheus.CounterVec
	activations *prometheus.CounterVec
	cached      prometheus.Gauge
	effects     *prometheus.CounterVec
	reminders   prometheus.Counter
	sends       prometheus.Counter
	broadcasts  prometheus.Counter
	storeErrors *prometheus.CounterVec
}

// newMetrics builds the collectors and registers them with reg. A second
// Host on the same Registerer shares the first one's collectors (its counts
// add to theirs) instead of failing; a different collector already
// registered under one of the names is an error.
func newMetrics(reg prometheus.Registerer) (*metrics, error) {
	m := &metrics{
		enqueued: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "ductus_messages_enqueued_total", Help: "Messages committed to mailboxes by this process.",
		}, []string{"type"}),
		processed: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "ductus_messages_processed_total", Help: "Messages whose turn committed (completed).",
		}, []string{"type"}),
		turns: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "ductus_turn_commits_total", Help: "Fenced turn commits by outcome.",
		}, []string{"type", "outcome"}),
		commit: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name: "ductus_turn_commit_seconds", Help: "Latency of fenced turn commits.",
			Buckets: prometheus.ExponentialBuckets(0.0001, 2, 16),
		}),
		retries: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "ductus_message_retries_total", Help: "Failed message attempts scheduled for retry.",
		}, []string{"type"}),
		deadLetters: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "ductus_dead_letters_total", Help: "Messages dead-lettered.",
		}, []string{"type"}),
		leaseLosses: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "ductus_lease_losses_total", Help: "Activations that lost their lease (a stale commit was refused, or renewal failed).",
		}, []string{"type"}),
		activations: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "ductus_activations_total", Help: "Activations claimed and loaded.",
		}, []string{"type"}),
		cached: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "ductus_activations_cached", Help: "Activations held by this process.",
		}),
		effects: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "ductus_effects_total", Help: "Effect attempts by outcome.",
		}, []string{"name", "outcome"}),
		reminders: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "ductus_reminder_occurrences_total", Help: "Reminder occurrences fired.",
		}),
		sends: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "ductus_sends_delivered_total", Help: "Actor-to-actor sends delivered into their targets.",
		}),
		broadcasts: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "ductus_broadcasts_published_total", Help: "Observable changes published to subscribers.",
		}),
		storeErrors: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "ductus_store_errors_total", Help: "Store operations that failed, by kind.",
		}, []string{"kind"}),
	}
	if reg == nil {
		return m, nil
	}
	err := errors.Join(
		register(reg, &m.enqueued), register(reg, &m.processed), register(reg, &m.turns), register(reg, &m.commit),
		register(reg, &m.retries), register(reg, &m.deadLetters), register(reg, &m.leaseLosses), register(reg, &m.activations),
		register(reg, &m.cached), register(reg, &m.effects), register(reg, &m.reminders), register(reg, &m.sends),
		register(reg, &m.broadcasts), register(reg, &m.storeErrors),
	)
	if err != nil {
		return nil, fmt.Errorf("host: register metrics: %w", err)
	}
	return m, nil
}

// register registers *c, or replaces it with the equal collector already
// registered.
func register[C prometheus.Collector](reg prometheus.Registerer, c *C) error {
	err := reg.Register(*c)
	var dup prometheus.AlreadyRegisteredError
	if !errors.As(err, &dup) {
		return err
	}
	existing, ok := dup.ExistingCollector.(C)
	if !ok {
		return fmt.Errorf("another kind of collector is registered with the same name: %w", err)
	}
	*c = existing
	return nil
}
