package host

import (
	"errors"
	"testing"
	"time"

	"github.com/ductus/ductus/internal/testutil"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/ductus/ductus/actor"
)

// TestMetricsCounted drives each event the runtime counts and reads the
// counts back from the Prometheus registry, as a scrape would.
func TestMetricsCounted(t *testing.T) {
	be := openSQLite(t)
	hk := &testHooks{failing: 1, gate: make(chan struct{}), entered: make(chan struct{}, 1)}
	h := startHost(t, be, tallyRegistry(hk))
	ctx := testutil.Context(t)
	for i := 0; i < 3; i++ {
		if _, err := h.Ask(ctx, tref("m"), "add", 1); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := h.Ask(ctx, tref("m"), "flaky", nil); err != nil { // fails once, then succeeds
		t.Fatal(err)
	}
	if _, err := h.Ask(ctx, tref("m"), "poison", nil); !errors.Is(err, actor.ErrDeadLetter) {
		t.Fatalf("poison: %v", err)
	}
	// A lease loss: the actor is destroyed while its turn runs, so the
	// turn's commit is refused.
	if _, err := h.Tell(ctx, tref("lost"), "wait", nil); err != nil {
		t.Fatal(err)
	}
	<-hk.entered
	if _, err := h.Destroy(ctx, tref("lost")); err != nil {
		t.Fatal(err)
	}
	close(hk.gate)
	testutil.Eventually(t, 10*time.Second, "the refused commit", func() bool { return metricValue(t, h, "ductus_lease_losses_total") >= 1 })

	cases := []struct {
		name string
		min  float64
	}{
		{"ductus_messages_enqueued_total", 6},
		{"ductus_messages_processed_total", 4},
		{"ductus_turn_commits_total", 4},
		{"ductus_turn_commit_seconds", 4}, // the histogram's sample count
		{"ductus_message_retries_total", 1},
		{"ductus_dead_letters_total", 1},
		{"ductus_lease_losses_total", 1},
		{"ductus_activations_total", 2},
	}
	for _, c := range cases {
		if v := metricValue(t, h, c.name); v < c.min {
			t.Errorf("%s = %v, want at least %v", c.name, v, c.min)
		}
	}
	if v := metricValue(t, h, "ductus_dead_letters_total"); v != 1 {
		t.Errorf("ductus_dead_letters_total = %v, want exactly 1", v)
	}
}

// TestMetricsShareARegisterer starts two hosts on one Registerer (the
// second used to panic on MustRegister): they share the collectors, so a
// scrape shows both hosts' counts. A foreign collector under one of the
// names is an error from New, not a panic.
func TestMetricsShareARegisterer(t *testing.T) {
	be := openSQLite(t)
	reg := prometheus.NewRegistry()
	ctx := testutil.Context(t)
	for i := 0; i < 2; i++ {
		h := startHost(t, be, tallyRegistry(&testHooks{}), func(c *Config) { c.Metrics = reg; c.NoWorkers = true })
		if _, err := h.Tell(ctx, tref("shared"), "add", 1); err != nil {
			t.Fatal(err)
		}
	}
	fams, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	total := 0.0
	for _, f := range fams {
		if f.GetName() == "ductus_messages_enqueued_total" {
			for _, m := range f.GetMetric() {
				total += m.GetCounter().GetValue()
			}
		}
	}
	if total != 2 {
		t.Fatalf("ductus_messages_enqueued_total = %v, want 2 (one per host)", total)
	}

	clash := prometheus.NewRegistry()
	clash.MustRegister(prometheus.NewGauge(prometheus.GaugeOpts{Name: "ductus_dead_letters_total", Help: "not ours"}))
	if _, err := New(Config{Backend: be, Registry: tallyRegistry(&testHooks{}), Metrics: clash}); err == nil {
		t.Fatal("New accepted a registry with a foreign collector under one of its names")
	}
}
