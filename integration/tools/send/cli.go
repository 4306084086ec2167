package send

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"time"

	"github.com/ductus/ductus/integration/tools"
)

// CLIOptions are the command line's options: a run's, and how often the
// progress line is written.
type CLIOptions struct {
	Options
	// Progress is the interval of the progress line on stderr (default 1 s;
	// 0 or less: none).
	Progress time.Duration
	// Verbose logs connection events to stderr.
	Verbose bool
}

// Flags defines the sender's flags on fs and returns the options they
// fill. The files to send are the arguments left after the flags: set
// Files to fs.Args() after fs.Parse (Main does). cmd/ductus mounts this as
// `ductus send`.
func Flags(fs *flag.FlagSet) *CLIOptions {
	o := &CLIOptions{}
	fs.StringVar(&o.Addr, "addr", DefaultAddr, "the receiver's `host:port`")
	fs.IntVar(&o.Count, "count", 0, "messages to generate (default 100); with files, the most to send (default all)")
	fs.StringVar(&o.Types, "types", "", "generated message `types`, comma-separated, of ADT^A01, ADT^A04, ADT^A08 and ORU^R01 (default all)")
	fs.IntVar(&o.Patients, "patients", DefaultPatients, "size of the generated patients' MRN pool")
	fs.Uint64Var(&o.Seed, "seed", 1, "seed of the generator: the same seed gives the same messages (MSH-10's prefix aside)")
	fs.StringVar(&o.Prefix, "prefix", "", "MSH-10 prefix of generated messages, at most 11 characters (default a fresh one per run)")
	fs.BoolVar(&o.Enhanced, "enhanced", false, "generate messages asking for enhanced-mode ACKs (MSH-15 AL): CA/CE/CR")
	fs.IntVar(&o.Connections, "connections", 1, "connections to spread the messages over; one patient's messages always share one")
	fs.Float64Var(&o.Rate, "rate", 0, "most messages per second over all connections (0: as fast as ACKs come)")
	fs.DurationVar(&o.Timeout, "timeout", DefaultTimeout, "how long to wait for each ACK")
	fs.DurationVar(&o.Progress, "progress", time.Second, "interval of the progress line on stderr (0: none)")
	fs.BoolVar(&o.Verbose, "v", false, "log connection events to stderr")
	return o
}

// Main parses args (flags, then files) and runs: the whole of `ductus
// send` for a caller that has only the arguments.
func Main(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("ductus send", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: ductus send [flags] [file ...]\n\nSends the HL7 messages of the files, or generated ADT/ORU messages, over MLLP.")
		fs.PrintDefaults()
	}
	o := Flags(fs)
	if err := fs.Parse(args); err != nil {
		return err
	}
	o.Files = fs.Args()
	return Run(ctx, *o, stdout, stderr)
}

// Run is `ductus send`: it sends, writes a progress line on stderr about
// every o.Progress and a line per problem, and prints the summary on
// stdout. It returns an error when any message did not get AA or CA, so
// the exit status tells a script whether the receiver took everything.
func Run(ctx context.Context, o CLIOptions, stdout, stderr io.Writer) error {
	if o.Verbose {
		o.Logger = slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: slog.LevelDebug}))
	}
	if err := o.Options.check(); err != nil {
		return err // nothing ran
	}
	total := ""
	if len(o.Files) == 0 {
		total = fmt.Sprintf("/%d", o.count())
	}
	lastN, lastAt := 0, time.Now()
	progress := func(r Result) {
		now := time.Now()
		fmt.Fprintf(stderr, "send: %d%s sent (%s), %d timeouts, %d errors, %.0f msg/s\n",
			r.Messages, total, r.Codes.Short(), r.Timeouts, r.Errors, tools.Rate(uint64(r.Messages-lastN), now.Sub(lastAt)))
		lastN, lastAt = r.Messages, now
	}
	res, err := Send(ctx, o.Options, stderr, o.Progress, progress)
	printSummary(stdout, &o.Options, res)
	if err != nil {
		return err
	}
	if n := res.Failed(); n > 0 {
		return fmt.Errorf("send: %d of %d messages did not get AA or CA%s", n, res.Messages+res.Unreadable+res.NotSent, failures(res))
	}
	if res.Messages == 0 {
		return errors.New("send: no message was sent")
	}
	return nil
}

func failures(r Result) string {
	var parts []string
	for _, code := range []string{"AE", "AR", "CE", "CR"} {
		if n := r.Codes.Get(code); n > 0 {
			parts = append(parts, fmt.Sprintf("%s %d", code, n))
		}
	}
	for _, p := range []struct {
		n    int
		what string
	}{{r.Timeouts, "timeouts"}, {r.Errors, "errors"}, {r.Unreadable, "unreadable"}, {r.NotSent, "not sent"}} {
		if p.n > 0 {
			parts = append(parts, fmt.Sprintf("%d %s", p.n, p.what))
		}
	}
	if len(parts) == 0 {
		return ""
	}
	return ": " + strings.Join(parts, ", ")
}

func printSummary(w io.Writer, o *Options, r Result) {
	fmt.Fprintf(w, "sent %d messages to %s over %d connection(s) in %v (%.1f msg/s)\n",
		r.Messages, o.Addr, o.Connections, r.Elapsed.Round(time.Millisecond), r.Rate())
	fmt.Fprintf(w, "ACK codes: %s\n", r.Codes)
	fmt.Fprintf(w, "timeouts %d  errors %d  unreadable %d  not sent %d\n", r.Timeouts, r.Errors, r.Unreadable, r.NotSent)
	fmt.Fprintf(w, "ACK latency: p50 %v  p99 %v\n", round(r.P50), round(r.P99))
	if r.Stopped != "" {
		fmt.Fprintf(w, "stopped early: %s\n", r.Stopped)
	}
}

// round keeps latencies readable: microseconds below a millisecond, else
// tenths of a millisecond.
func round(d time.Duration) time.Duration {
	if d < time.Millisecond {
		return d.Round(time.Microsecond)
	}
	return d.Round(100 * time.Microsecond)
}
