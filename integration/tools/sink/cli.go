package sink

import (
	"context"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"time"

	"github.com/ductus/ductus/integration/tools"
)

// CLIOptions are the command line's options: the sink's, and how often
// the progress line is written.
type CLIOptions struct {
	Options
	// Progress is the interval of the progress line on stderr (default 1 s;
	// 0 or less: none).
	Progress time.Duration
	// Verbose logs the listener's connection events to stderr.
	Verbose bool
}

// Flags defines the sink's flags on fs and returns the options they fill.
// cmd/ductus mounts them as `ductus sink`.
func Flags(fs *flag.FlagSet) *CLIOptions {
	o := &CLIOptions{}
	fs.StringVar(&o.Listen, "listen", DefaultListen, "`host:port` to listen on")
	fs.Float64Var(&o.AE, "ae", 0, "share of messages answered AE (CE in enhanced mode), 0 to 1")
	fs.Float64Var(&o.AR, "ar", 0, "share of messages answered AR (CR in enhanced mode), 0 to 1")
	fs.Uint64Var(&o.Seed, "seed", 1, "seed of the AE/AR choice: the same seed and messages give the same answers")
	fs.DurationVar(&o.Delay, "delay", 0, "wait this long before each ACK")
	fs.BoolVar(&o.Print, "print", false, "print each message and its ACK code on stdout")
	fs.StringVar(&o.Out, "out", "", "append each accepted message to this `file`, one per line (CR as \\r, LF as \\n, backslash as \\\\)")
	fs.IntVar(&o.MaxMessageBytes, "max-message-bytes", 0, "largest message accepted (default 1 MiB); larger ones get AR")
	fs.DurationVar(&o.Progress, "progress", time.Second, "interval of the progress line on stderr (0: none)")
	fs.BoolVar(&o.Verbose, "v", false, "log connections and framing problems to stderr")
	return o
}

// Main parses args and runs: the whole of `ductus sink` for a caller
// that has only the arguments.
func Main(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("ductus sink", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: ductus sink [flags]\n\nReceives HL7 over MLLP: ACKs AA (or AE/AR for a share), counts, prints, records.")
		fs.PrintDefaults()
	}
	o := Flags(fs)
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("sink: unexpected arguments %q (the sink takes flags only)", fs.Args())
	}
	return Run(ctx, *o, stdout, stderr)
}

// Run is `ductus sink`: it receives until ctx ends (Ctrl-C), with a
// progress line on stderr, then prints a summary on stdout.
func Run(ctx context.Context, o CLIOptions, stdout, stderr io.Writer) error {
	opts := o.Options
	opts.Stdout, opts.NoKeep = stdout, true
	if o.Verbose {
		opts.Logger = slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: slog.LevelDebug}))
	}
	s, err := New(opts)
	if err != nil {
		return err
	}
	fmt.Fprintf(stderr, "sink: listening on %s (AE %g, AR %g, delay %v)\n", s.Addr(), opts.AE, opts.AR, opts.Delay)
	began := time.Now()
	last, lastAt := 0, began
	stop := tools.Every(ctx, o.Progress, func() {
		n, now := s.Received(), time.Now()
		st := s.Stats().Snapshot()
		fmt.Fprintf(stderr, "sink: %d messages (%s), %.0f/s, %d connections open\n",
			n, s.Codes().Short(), tools.Rate(uint64(n-last), now.Sub(lastAt)), st.ConnectionsOpen)
		last, lastAt = n, now
	})
	<-ctx.Done()
	stop()
	cerr := s.Close()
	elapsed := time.Since(began)
	st := s.Stats().Snapshot()
	n := s.Received()
	fmt.Fprintf(stdout, "received %d messages on %d connections in %v (%.1f msg/s)\n",
		n, st.Connections, elapsed.Round(time.Millisecond), tools.Rate(uint64(n), elapsed))
	fmt.Fprintf(stdout, "ACK codes: %s\n", s.Codes())
	fmt.Fprintf(stdout, "refused by the listener: %d not HL7, %d too large, %d framing errors\n", st.NotHL7, st.TooLarge, st.FramingErrors)
	return cerr
}
