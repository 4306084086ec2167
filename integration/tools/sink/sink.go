// Package sink is `ductus sink`: an MLLP receiver that plays the
// downstream system of a feed. It acknowledges every message AA (CA when
// the message asks for enhanced mode), or AE or AR for a chosen share,
// optionally after a delay; it counts, prints, and appends each accepted
// message to a file that end-to-end tests read to check what arrived and
// in which order.
//
// The same receiver is a library type (New), because the engine's own
// end-to-end tests need a real MLLP peer in the same process: New listens
// at once, Addr says where, Messages returns what arrived.
//
// Which messages get AE or AR is deterministic for a seed: each arrival
// draws from a hash of the seed, the message's MSH-10 and how many times
// that MSH-10 has arrived before. A resent message draws afresh, so with
// -ae 0.1 a sender that retries AE gets through in the end, and two runs
// with the same seed and the same messages answer alike whatever order
// the connections interleave in.
package sink

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/fnv"
	"io"
	"log/slog"
	"net"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/ductus/ductus/integration/hl7"
	"github.com/ductus/ductus/integration/mllpnet"
	"github.com/ductus/ductus/integration/tools"
)

// DefaultListen is where the sink listens without -listen: next to the
// HL7 port 2575 an engine's MLLP source usually takes.
const DefaultListen = "127.0.0.1:2576"

// Options configure a sink. The zero value listens on DefaultListen and
// accepts everything.
type Options struct {
	// Listen is the host:port to listen on; port 0 picks a free one.
	Listen string
	// AE and AR are the shares (0 to 1, together at most 1) of messages
	// answered AE (CE) and AR (CR).
	AE, AR float64
	// Seed makes the AE/AR choice reproducible.
	Seed uint64
	// Delay is waited before each ACK.
	Delay time.Duration
	// Print writes each message, with its ACK code, to Stdout.
	Print bool
	// Out, when set, is a file each accepted message is appended to (see
	// EncodeLine for the format), before its ACK is sent.
	Out string
	// MaxMessageBytes is the size limit (default mllpnet's, 1 MiB).
	MaxMessageBytes int
	// Stdout receives Print's output; nil discards it.
	Stdout io.Writer
	// Logger receives the listener's log; nil discards it.
	Logger *slog.Logger
	// NoKeep stops the sink from keeping messages in memory for Messages
	// (the command line sink runs for as long as it is left, and only
	// counts).
	NoKeep bool
}

func (o *Options) check() error {
	if o.Listen == "" {
		o.Listen = DefaultListen
	}
	switch {
	case o.AE < 0 || o.AE > 1:
		return fmt.Errorf("sink: the AE share must be between 0 and 1, got %v", o.AE)
	case o.AR < 0 || o.AR > 1:
		return fmt.Errorf("sink: the AR share must be between 0 and 1, got %v", o.AR)
	case o.AE+o.AR > 1:
		return fmt.Errorf("sink: the AE and AR shares add up to %v, more than 1", o.AE+o.AR)
	case o.Delay < 0:
		return fmt.Errorf("sink: the delay is negative (%v)", o.Delay)
	case o.MaxMessageBytes < 0:
		return fmt.Errorf("sink: the size limit is negative (%d)", o.MaxMessageBytes)
	}
	if o.Stdout == nil {
		o.Stdout = io.Discard
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	return nil
}

// Message is one message the sink received.
type Message struct {
	// Seq is the arrival number over all connections, from 1.
	Seq int
	// Conn is the connection's number (mllpnet.ConnInfo.ID).
	Conn uint64
	// ControlID is MSH-10, Type MSH-9.1^MSH-9.2, Key PID-3.1 (the MRN).
	ControlID, Type, Key string
	// Code is the ACK code the sink answered with.
	Code string
	// Raw is the message as received.
	Raw []byte
	// At is when it arrived.
	At time.Time
}

// Accepted reports whether the sink answered AA or CA.
func (m Message) Accepted() bool { return m.Code == hl7.CodeAA || m.Code == hl7.CodeCA }

// Sink is a running MLLP receiver.
type Sink struct {
	o     Options
	srv   *mllpnet.Server
	addr  string
	codes tools.Codes
	done  chan error

	mu    sync.Mutex
	seq   int
	msgs  []Message
	seen  map[string]int // arrivals per MSH-10, for the AE/AR draw
	out   *os.File
	close sync.Once
}

// New starts a sink: it listens on opts.Listen and serves until Close.
func New(opts Options) (*Sink, error) {
	if err := opts.check(); err != nil {
		return nil, err
	}
	s := &Sink{o: opts, seen: map[string]int{}, done: make(chan error, 1)}
	if opts.Out != "" {
		f, err := os.OpenFile(opts.Out, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o644)
		if err != nil {
			return nil, fmt.Errorf("sink: the out file: %w", err)
		}
		s.out = f
	}
	srv, err := mllpnet.NewServer(mllpnet.HandlerFunc(s.handle), mllpnet.ServerOptions{
		MaxMessageBytes: opts.MaxMessageBytes, Logger: opts.Logger,
		IdleTimeout: -1, // a test peer waits as long as its sender likes
	})
	if err != nil {
		s.closeOut()
		return nil, err
	}
	ln, err := net.Listen("tcp", opts.Listen)
	if err != nil {
		s.closeOut()
		return nil, fmt.Errorf("sink: %w", err)
	}
	s.srv, s.addr = srv, ln.Addr().String()
	go func() { s.done <- srv.Serve(context.Background(), ln) }()
	return s, nil
}

// Addr returns the address the sink listens on, host:port.
func (s *Sink) Addr() string { return s.addr }

// Stats returns the listener's counters (connections, frames, and the
// frames refused before the sink saw them: not HL7, too large).
func (s *Sink) Stats() *mllpnet.Stats { return s.srv.Stats() }

// Codes returns how many of each ACK code the sink has answered.
func (s *Sink) Codes() tools.CodeCounts { return s.codes.Snapshot() }

// Messages returns a copy of the messages received so far, in arrival
// order (empty with NoKeep).
func (s *Sink) Messages() []Message {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]Message, len(s.msgs))
	copy(out, s.msgs)
	return out
}

// Received is the number of messages handled so far (including AE/AR).
func (s *Sink) Received() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.seq
}

// Close stops the sink gracefully (a message being handled still gets its
// ACK) and closes the out file.
func (s *Sink) Close() error {
	var err error
	s.close.Do(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		err = s.srv.Shutdown(ctx)
		if serr := <-s.done; serr != nil && !errors.Is(serr, mllpnet.ErrServerClosed) && err == nil {
			err = serr
		}
		if cerr := s.closeOut(); cerr != nil && err == nil {
			err = cerr
		}
	})
	return err
}

func (s *Sink) closeOut() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.out == nil {
		return nil
	}
	err := s.out.Close()
	s.out = nil
	if err != nil {
		return fmt.Errorf("sink: closing the out file: %w", err)
	}
	return nil
}

// draw returns a number in [0, 1) from the seed, the control ID and how
// many times it arrived before.
func draw(seed uint64, id string, n int) float64 {
	h := fnv.New64a()
	var b [16]byte
	binary.LittleEndian.PutUint64(b[:8], seed)
	binary.LittleEndian.PutUint64(b[8:], uint64(n))
	_, _ = h.Write(b[:8])
	_, _ = h.Write([]byte(id))
	_, _ = h.Write(b[8:])
	// splitmix64's finaliser spreads FNV's weak low bits over the range.
	x := h.Sum64()
	x ^= x >> 30
	x *= 0xbf58476d1ce4e5b9
	x ^= x >> 27
	x *= 0x94d049bb133111eb
	x ^= x >> 31
	return float64(x>>11) / (1 << 53)
}

func (s *Sink) handle(ctx context.Context, conn mllpnet.ConnInfo, payload []byte, m *hl7.Message) []byte {
	id := m.ControlID()
	outcome, text := hl7.Accepted, ""

	s.mu.Lock()
	if s.o.AE > 0 || s.o.AR > 0 {
		n := s.seen[id]
		s.seen[id] = n + 1
		switch u := draw(s.o.Seed, id, n); {
		case u < s.o.AR:
			outcome, text = hl7.Rejected, "sink: refused (the chosen AR share)"
		case u < s.o.AR+s.o.AE:
			outcome, text = hl7.Errored, "sink: try again (the chosen AE share)"
		}
	}
	code := hl7.CodeFor(m, outcome)
	if outcome == hl7.Accepted && s.out != nil {
		if _, err := s.out.Write(EncodeLine(payload)); err != nil {
			outcome, text = hl7.Errored, "sink: writing the out file failed: "+err.Error()
			code = hl7.CodeFor(m, outcome)
			s.o.Logger.Error("sink: writing the out file failed", "error", err)
		}
	}
	s.seq++
	msg := Message{Seq: s.seq, Conn: conn.ID, ControlID: id, Type: m.Type(), Key: m.Get("PID-3.1"), Code: code, At: time.Now()}
	if !s.o.NoKeep {
		msg.Raw = payload
		s.msgs = append(s.msgs, msg)
	}
	if s.o.Print {
		printMessage(s.o.Stdout, msg, payload)
	}
	s.mu.Unlock()

	if s.o.Delay > 0 {
		t := time.NewTimer(s.o.Delay)
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
		}
	}
	ack, err := hl7.BuildACK(m, code, text, hl7.ACKOptions{})
	if err != nil {
		s.o.Logger.Error("sink: building the ACK failed", "error", err)
		return nil
	}
	s.codes.Add(code)
	return ack.Bytes()
}

// printMessage writes a header line and the message's segments, one per
// line, then a blank line.
func printMessage(w io.Writer, m Message, raw []byte) {
	var b strings.Builder
	fmt.Fprintf(&b, "#%d %s %s %s conn=%d", m.Seq, m.Code, m.ControlID, m.Type, m.Conn)
	if m.Key != "" {
		fmt.Fprintf(&b, " key=%s", m.Key)
	}
	b.WriteByte('\n')
	text := strings.ReplaceAll(strings.ReplaceAll(string(raw), "\r\n", "\n"), "\r", "\n")
	b.WriteString(strings.TrimRight(text, "\n"))
	b.WriteString("\n\n")
	_, _ = io.WriteString(w, b.String())
}
