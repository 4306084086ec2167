package host

import (
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"os"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/ductus/ductus/actor"
	"github.com/ductus/ductus/runtime/store"
)

// Config configures a Host. Zero fields take the defaults documented on
// each field.
type Config struct {
	Backend  store.Backend   // required
	Registry *actor.Registry // required: the actor types this process knows
	Policies actor.Policies  // authorization hooks (nil hooks allow)
	Limits   actor.Limits    // value limits (zero fields: actor.DefaultLimits)
	// Logger receives the runtime's own lines (default: discard): Info for
	// the process started and stopped, a stale commit refused, an effect
	// retried; Warn for a failed message or dead-lettered effect, a lost
	// lease, a loop whose store call failed (claims, renewals, heartbeat,
	// reminders, sends, broadcasts, retention), a reminder skipping missed
	// occurrences, turns cancelled at shutdown; Error for an activation that
	// failed, outcomes that could not be recorded, a loop that panicked.
	// Every line carries the fields to find the row (ref, message, effect,
	// err). It does not reach the backend, which is opened before the host:
	// give the same logger to the adapter's Config.Logger (or
	// dburl.Options.Logger) for the adapter's own lines.
	Logger *slog.Logger
	// Metrics receives the runtime's Prometheus collectors; nil keeps them
	// in a private registry (see Host.Metrics).
	Metrics prometheus.Registerer
	// Effects maps effect names to their handlers.
	Effects map[string]Effect

	Kind    string // process kind in the process registry (default "runtime")
	Version string // application version, for spotting mixed fleets

	// Workers is how many activations run at once (default 8). Zero
	// workers with NoWorkers makes a client-only process.
	Workers   int
	NoWorkers bool
	// BatchSize is K: how many ready messages a turn takes and commits
	// together (default 128, chosen by measuring K = 1..512 on SQLite and
	// PostgreSQL: see "Choosing K" in docs/benchmarks.md).
	BatchSize int
	// LeaseTTL is an activation lease's length (default 30s); leases are
	// renewed every RenewEvery (default LeaseTTL/3) while cached.
	LeaseTTL   time.Duration
	RenewEvery time.Duration
	// PollInterval is the safety-net poll for work other processes enqueue
	// (default 500ms; wake-ups make it rarely matter).
	PollInterval time.Duration
	// A pass over one activation stops after PassMessages messages or
	// PassDuration (defaults 1024 and 500ms), then yields its lease so
	// actors that waited longer go first.
	PassMessages int
	PassDuration time.Duration
	// Idle activations stay cached (lease renewed) for IdleTimeout (default
	// 30s), at most CacheCapacity of them (default 10,000; least recently
	// used go first).
	IdleTimeout   time.Duration
	CacheCapacity int
	// Retry governs failed messages; TypeRetry overrides it per actor type
	// (zero fields of an override take Retry's values).
	Retry     RetryPolicy
	TypeRetry map[string]RetryPolicy
	// AskTimeout is Ask's default wait (default 30s).
	AskTimeout time.Duration
	// ShutdownTimeout bounds how long Shutdown waits for running turns
	// (default 30s).
	ShutdownTimeout time.Duration
	// Heartbeat is the process row's heartbeat interval (default 5s);
	// rows silent for ProcessRetention (default 24h) are deleted.
	Heartbeat        time.Duration
	ProcessRetention time.Duration
	// ClaimTTL is how long a claim of effects, outbox rows or reminders
	// lasts before another process may take them over (default: 30s, or
	// the longest effect Timeout plus 10s if that is longer). After a crash
	// the claimed rows wait this long.
	ClaimTTL time.Duration
	// SystemAllowance is how far the runtime's own System messages may
	// exceed a full mailbox (default 100). Effect outcome messages are
	// never refused: their effect is finished in the same transaction.
	SystemAllowance int
	// CatchUpMax bounds a CatchUpAll reminder's replay after downtime: with
	// more missed occurrences than this still to come, it fires once and
	// skips past now like CatchUpLatest, and logs it (default 100).
	CatchUpMax int
	// Retention prunes finished history older than Keep; zero Keep (the
	// default) keeps everything.
	Retention Retention
}

// RetryPolicy is the back-off for failed messages: attempt n waits
// Base*2^(n-1), capped at Max, with ±Jitter of it randomised; after
// MaxAttempts the message is dead-lettered.
type RetryPolicy struct {
	MaxAttempts int           // default 10
	Base        time.Duration // default 100ms
	Max         time.Duration // default 5m
	Jitter      float64       // fraction, default 0.2
}

// Retention prunes finished messages, effects, delivered outbox and
// broadcast rows in bounded batches.
type Retention struct {
	Keep  time.Duration // 0 = keep forever
	Every time.Duration // default 1m
	Batch int           // rows per table per call, default 1000
}

// Delay is the back-off before attempt+1 after attempt failed.
func (r RetryPolicy) Delay(attempt int) time.Duration {
	d := r.Base
	for i := 1; i < attempt && d < r.Max; i++ {
		d *= 2
	}
	d = min(d, r.Max)
	if r.Jitter > 0 {
		span := float64(d) * r.Jitter
		d += time.Duration((rand.Float64()*2 - 1) * span)
	}
	return max(d, time.Millisecond)
}

// retryFor is the retry policy of an actor type.
func (c *Config) retryFor(typ string) RetryPolicy {
	if rp, ok := c.TypeRetry[typ]; ok {
		return rp
	}
	return c.Retry
}

func (c *Config) withDefaults() (Config, error) {
	cfg := *c
	if cfg.Backend == nil {
		return cfg, errors.New("host: Config.Backend is required")
	}
	if cfg.Registry == nil {
		return cfg, errors.New("host: Config.Registry is required")
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	cfg.Limits = cfg.Limits.WithDefaults()
	if err := cfg.Limits.Validate(); err != nil {
		return cfg, fmt.Errorf("host: %w", err)
	}
	def := func(v *time.Duration, d time.Duration) {
		if *v <= 0 {
			*v = d
		}
	}
	defInt := func(v *int, d int) {
		if *v <= 0 {
			*v = d
		}
	}
	if cfg.Kind == "" {
		cfg.Kind = "runtime"
	}
	if cfg.Version == "" {
		cfg.Version = "dev"
	}
	defInt(&cfg.Workers, 8)
	defInt(&cfg.BatchSize, 128)
	def(&cfg.LeaseTTL, 30*time.Second)
	def(&cfg.RenewEvery, cfg.LeaseTTL/3)
	def(&cfg.PollInterval, 500*time.Millisecond)
	defInt(&cfg.PassMessages, 1024)
	def(&cfg.PassDuration, 500*time.Millisecond)
	def(&cfg.IdleTimeout, 30*time.Second)
	defInt(&cfg.CacheCapacity, 10_000)
	defInt(&cfg.Retry.MaxAttempts, 10)
	def(&cfg.Retry.Base, 100*time.Millisecond)
	def(&cfg.Retry.Max, 5*time.Minute)
	if cfg.Retry.Jitter == 0 {
		cfg.Retry.Jitter = 0.2
	}
	def(&cfg.AskTimeout, 30*time.Second)
	def(&cfg.ShutdownTimeout, 30*time.Second)
	def(&cfg.Heartbeat, 5*time.Second)
	def(&cfg.ProcessRetention, 24*time.Hour)
	defInt(&cfg.SystemAllowance, 100)
	defInt(&cfg.CatchUpMax, 100)
	def(&cfg.Retention.Every, time.Minute)
	defInt(&cfg.Retention.Batch, 1000)
	if len(cfg.TypeRetry) > 0 {
		m := make(map[string]RetryPolicy, len(cfg.TypeRetry))
		for typ, rp := range cfg.TypeRetry {
			if rp.MaxAttempts <= 0 {
				rp.MaxAttempts = cfg.Retry.MaxAttempts
			}
			if rp.Base <= 0 {
				rp.Base = cfg.Retry.Base
			}
			if rp.Max <= 0 {
				rp.Max = cfg.Retry.Max
			}
			if rp.Jitter == 0 {
				rp.Jitter = cfg.Retry.Jitter
			}
			m[typ] = rp
		}
		cfg.TypeRetry = m
	}
	if cfg.RenewEvery >= cfg.LeaseTTL {
		return cfg, fmt.Errorf("host: RenewEvery (%s) must be shorter than LeaseTTL (%s)", cfg.RenewEvery, cfg.LeaseTTL)
	}
	longest := time.Duration(0)
	for name, e := range cfg.Effects {
		if e.Handler == nil {
			return cfg, fmt.Errorf("host: effect %q has no handler", name)
		}
		longest = max(longest, e.timeout())
	}
	if cfg.ClaimTTL <= 0 {
		cfg.ClaimTTL = max(30*time.Second, longest+10*time.Second)
	}
	if longest >= cfg.ClaimTTL {
		return cfg, fmt.Errorf("host: ClaimTTL (%s) must be longer than the longest effect timeout (%s)", cfg.ClaimTTL, longest)
	}
	return cfg, nil
}

func hostname() string {
	h, err := os.Hostname()
	if err != nil {
		return "unknown"
	}
	return h
}
