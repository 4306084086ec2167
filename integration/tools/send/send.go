// Package send is `ductus send`: an MLLP sender for trying out a feed. It
// sends the HL7 messages of files (many per file, any segment
// terminator), or generated ADT and ORU messages for a pool of patients,
// over one or more connections at an optional rate, and reports what came
// back: ACK codes, timeouts, errors, rate and ACK latency.
//
// Order is kept per patient: a message goes on the connection chosen by a
// hash of its PID-3.1 (the MRN), and each connection sends one message at
// a time and waits for its ACK. So with -connections 8 the messages of one
// patient still arrive in the order they were read or generated, which is
// what an ordering test checks at the receiver. Messages without a PID-3.1
// are spread round-robin.
//
// The sender does not retry: an AE, AR, timeout or error is counted and
// the run goes on, and the exit status says whether every message got AA
// or CA. A receiver that cannot be reached at all stops the run.
package send

import (
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"io"
	"log/slog"
	"math"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/time/rate"

	"github.com/ductus/ductus/integration/mllpnet"
	"github.com/ductus/ductus/integration/tools"
)

// Defaults for Options.
const (
	DefaultAddr     = "127.0.0.1:2575"
	DefaultCount    = 100
	DefaultPatients = 100
	DefaultTimeout  = 30 * time.Second
)

// Options configure a run. The zero value sends DefaultCount generated
// messages to DefaultAddr over one connection.
type Options struct {
	// Addr is the receiver's host:port.
	Addr string
	// Files are the files to send, in order; none means generate.
	Files []string
	// Count is how many messages to generate (default 100), or with Files
	// the most to send (0: all).
	Count int
	// Types are the generated message types, comma-separated (default
	// ADT^A01,ADT^A04,ADT^A08,ORU^R01).
	Types string
	// Patients is the generator's MRN pool (default 100).
	Patients int
	// Seed makes the generated messages reproducible (but for MSH-10's
	// prefix, see Prefix).
	Seed uint64
	// Prefix starts each generated MSH-10 (at most 11 characters); empty
	// picks a fresh one per run, so that runs do not collide under a
	// receiver's dedupe.
	Prefix string
	// Enhanced asks for enhanced-mode acknowledgements (MSH-15 AL): the
	// receiver answers CA/CE/CR.
	Enhanced bool
	// Connections is the number of connections (default 1).
	Connections int
	// Rate is the most messages per second over all connections (0: as
	// fast as the receiver answers).
	Rate float64
	// Timeout is how long to wait for each ACK (default 30 s).
	Timeout time.Duration
	// Logger receives the connections' log; nil discards it.
	Logger *slog.Logger
}

func (o *Options) check() error {
	if o.Addr == "" {
		o.Addr = DefaultAddr
	}
	if o.Connections == 0 {
		o.Connections = 1
	}
	if o.Patients == 0 {
		o.Patients = DefaultPatients
	}
	if o.Timeout == 0 {
		o.Timeout = DefaultTimeout
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	switch {
	case o.Connections < 0 || o.Connections > 10_000:
		return fmt.Errorf("send: -connections must be 1 to 10000, got %d", o.Connections)
	case o.Count < 0:
		return fmt.Errorf("send: -count is negative (%d)", o.Count)
	case o.Rate < 0 || math.IsNaN(o.Rate) || math.IsInf(o.Rate, 0):
		return fmt.Errorf("send: -rate must be a number of messages per second, 0 or more, got %v", o.Rate)
	case o.Timeout < 0:
		return fmt.Errorf("send: -timeout is negative (%v)", o.Timeout)
	case o.Patients < 0:
		return fmt.Errorf("send: -patients is negative (%d)", o.Patients)
	}
	if len(o.Files) > 0 && (o.Types != "" || o.Prefix != "" || o.Enhanced) {
		return errors.New("send: -types, -prefix and -enhanced are for generated messages; files are sent as they are")
	}
	if len(o.Files) == 0 && o.Prefix == "" {
		o.Prefix = runPrefix()
	}
	return nil
}

// count is the number of messages to generate.
func (o *Options) count() int {
	if o.Count == 0 {
		return DefaultCount
	}
	return o.Count
}

// Result is what a run saw.
type Result struct {
	// Messages is the number of messages tried (sent, or given up on).
	Messages int
	// Codes counts the ACKs by code.
	Codes tools.CodeCounts
	// Timeouts are messages whose ACK did not come in time; Errors those
	// that failed otherwise (connection errors, an ACK for another
	// message, a reply that is not an ACK); Unreadable input records that
	// were not messages (skipped, not sent); NotSent messages left when the
	// run stopped early.
	Timeouts, Errors, Unreadable, NotSent int
	// Elapsed is the run's duration; P50 and P99 the ACK latency, write to
	// ACK, over the messages that got one.
	Elapsed  time.Duration
	P50, P99 time.Duration
	// Stopped says why the run ended early ("" when it did not).
	Stopped string
}

// Failed is the number of messages that did not get AA or CA, unreadable
// records included.
func (r Result) Failed() int {
	return r.Messages - int(r.Codes.Accepted()) + r.Unreadable + r.NotSent
}

// Rate is messages per second over the run.
func (r Result) Rate() float64 { return tools.Rate(uint64(r.Messages), r.Elapsed) }

// run is the state of one run, shared by the lanes.
type run struct {
	o        *Options
	limiter  *rate.Limiter
	codes    tools.Codes
	tried    atomic.Int64
	timeouts atomic.Int64
	errs     atomic.Int64
	skipped  atomic.Int64
	notSent  atomic.Int64
	notes    io.Writer // where problems are reported as they happen
	notesMu  sync.Mutex

	mu        sync.Mutex
	latencies []time.Duration
	stopped   string
}

func (r *run) note(format string, args ...any) {
	r.notesMu.Lock()
	defer r.notesMu.Unlock()
	fmt.Fprintf(r.notes, "send: "+format+"\n", args...)
}

// Send runs opts to the end and returns the result. progress, when not
// nil, is called about every interval with the counts so far (the command
// prints it); notes receives one line per problem (unreadable records,
// failed sends); nil discards them.
func Send(ctx context.Context, opts Options, notes io.Writer, interval time.Duration, progress func(Result)) (Result, error) {
	if err := opts.check(); err != nil {
		return Result{}, err
	}
	if notes == nil {
		notes = io.Discard
	}
	r := &run{o: &opts, notes: notes}
	if opts.Rate > 0 {
		// A burst of a twentieth of a second's worth keeps the average
		// honest when the sleeps between tokens overshoot at high rates.
		r.limiter = rate.NewLimiter(rate.Limit(opts.Rate), max(1, int(math.Ceil(opts.Rate/20))))
	}
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)

	lanes := make([]chan item, opts.Connections)
	var wg sync.WaitGroup
	for i := range lanes {
		lanes[i] = make(chan item, 64)
		c, err := mllpnet.NewClient(mllpnet.ClientOptions{Addr: opts.Addr, AckTimeout: opts.Timeout, Logger: opts.Logger.With("lane", i)})
		if err != nil {
			return Result{}, fmt.Errorf("send: %w", err)
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer c.Close()
			r.lane(ctx, cancel, c, lanes[i])
		}()
	}

	began := time.Now()
	if progress != nil {
		stop := tools.Every(ctx, interval, func() { progress(r.result(began)) })
		defer stop()
	}
	rr := 0
	err := produce(ctx, &opts, func(it item) error {
		lane := rr % len(lanes)
		if it.key != "" {
			h := fnv.New32a()
			_, _ = h.Write([]byte(it.key))
			lane = int(h.Sum32() % uint32(len(lanes)))
		} else {
			rr++
		}
		select {
		case lanes[lane] <- it:
			return nil
		case <-ctx.Done():
			r.notSent.Add(1)
			return context.Cause(ctx)
		}
	}, func(p problem) {
		r.skipped.Add(1)
		r.note("%s: %s (skipped)", p.from, p.reason)
	})
	for _, l := range lanes {
		close(l)
	}
	wg.Wait()
	res := r.result(began)
	switch {
	case err == nil:
	case res.Stopped != "": // a lane stopped the run: the receiver is unreachable
	case ctx.Err() != nil:
		res.Stopped = "interrupted"
	default: // the input could not be read
		res.Stopped = err.Error()
		return res, err
	}
	return res, nil
}

// lane sends its messages one at a time on its connection.
func (r *run) lane(ctx context.Context, stop context.CancelCauseFunc, c *mllpnet.Client, in <-chan item) {
	for it := range in {
		if ctx.Err() != nil {
			r.notSent.Add(1)
			continue // drain, counting what was never sent
		}
		if r.limiter != nil {
			if err := r.limiter.Wait(ctx); err != nil {
				r.notSent.Add(1)
				continue
			}
		}
		began := time.Now()
		ack, err := c.Send(ctx, it.payload)
		took := time.Since(began)
		if err != nil && ctx.Err() != nil {
			r.notSent.Add(1) // interrupted, not the receiver's doing
			continue
		}
		r.tried.Add(1)
		switch {
		case err == nil:
			r.codes.Add(ack.Code)
			r.mu.Lock()
			r.latencies = append(r.latencies, took)
			r.mu.Unlock()
			if ack.Code != "AA" && ack.Code != "CA" {
				text := ack.Text
				if text == "" {
					text = "no reason given"
				}
				r.note("%s (%s): %s: %s", it.id, it.from, ack.Code, text)
			}
		case errors.Is(err, mllpnet.ErrAckTimeout):
			r.timeouts.Add(1)
			r.note("%s (%s): %v", it.id, it.from, err)
		case errors.Is(err, mllpnet.ErrDial):
			r.errs.Add(1)
			r.mu.Lock()
			if r.stopped == "" {
				r.stopped = err.Error()
			}
			r.mu.Unlock()
			stop(err)
		default:
			r.errs.Add(1)
			r.note("%s (%s): %v", it.id, it.from, err)
		}
	}
}

func (r *run) result(began time.Time) Result {
	r.mu.Lock()
	lat := append([]time.Duration(nil), r.latencies...)
	stopped := r.stopped
	r.mu.Unlock()
	return Result{
		Messages: int(r.tried.Load()), Codes: r.codes.Snapshot(),
		Timeouts: int(r.timeouts.Load()), Errors: int(r.errs.Load()),
		Unreadable: int(r.skipped.Load()), NotSent: int(r.notSent.Load()),
		Elapsed: time.Since(began),
		P50:     tools.Percentile(lat, 50), P99: tools.Percentile(lat, 99),
		Stopped: stopped,
	}
}
