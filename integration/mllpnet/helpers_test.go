package mllpnet

import (
	"bytes"
	"context"
	"errors"
	"io"
	"log/slog"
	"net"
	"os"
	"testing"
	"time"

	"github.com/ductus/ductus/integration/hl7"
	"github.com/ductus/ductus/integration/mllp"
)

// testLogger writes the server's log to the test's log, so a failing test
// shows what the server saw.
func testLogger(t *testing.T) *slog.Logger {
	return slog.New(slog.NewTextHandler(tWriter{t}, &slog.HandlerOptions{Level: slog.LevelDebug}))
}

type tWriter struct{ t *testing.T }

func (w tWriter) Write(p []byte) (int, error) {
	w.t.Helper()
	w.t.Log(string(bytes.TrimRight(p, "\n")))
	return len(p), nil
}

// ackAA answers every message AA (CA in enhanced mode).
func ackAA(_ context.Context, _ ConnInfo, payload []byte, msg *hl7.Message) []byte {
	m, err := hl7.Parse(payload)
	if err != nil {
		panic(err) // the server only calls the handler with HL7
	}
	// A panic is answered AE, which the tests that expect AA notice.
	if msg == nil || msg.ControlID() != m.ControlID() || msg.Type() != m.Type() {
		panic("the server handed the handler a parse of another message")
	}
	a, err := hl7.BuildACK(msg, hl7.CodeFor(msg, hl7.Accepted), "", hl7.ACKOptions{})
	if err != nil {
		panic(err)
	}
	return a.Bytes()
}

// running is a server under test on a real loopback listener.
type running struct {
	srv  *Server
	addr string
	done chan error // Serve's result
}

func listen(t *testing.T, addr string) net.Listener {
	t.Helper()
	if addr == "" {
		addr = "127.0.0.1:0"
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	return ln
}

func start(t *testing.T, h HandlerFunc, opts ServerOptions) *running {
	t.Helper()
	return startOn(t, listen(t, ""), h, opts)
}

func startOn(t *testing.T, ln net.Listener, h HandlerFunc, opts ServerOptions) *running {
	t.Helper()
	if opts.Logger == nil {
		opts.Logger = testLogger(t)
	}
	srv, err := NewServer(h, opts)
	if err != nil {
		t.Fatal(err)
	}
	r := &running{srv: srv, addr: ln.Addr().String(), done: make(chan error, 1)}
	go func() { r.done <- srv.Serve(context.Background(), ln) }()
	t.Cleanup(func() {
		_ = srv.Close()
		select {
		case <-r.done:
		case <-time.After(10 * time.Second):
			t.Error("Serve did not return after Close")
		}
	})
	return r
}

// peer is a raw MLLP connection driven byte by byte by a test.
type peer struct {
	t    *testing.T
	conn *net.TCPConn
	r    *mllp.Reader
}

func dial(t *testing.T, addr string) *peer {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	tc := c.(*net.TCPConn)
	_ = tc.SetNoDelay(true)
	t.Cleanup(func() { _ = c.Close() })
	return &peer{t: t, conn: tc, r: mllp.NewReader(c, 0)}
}

func (p *peer) write(b []byte) {
	p.t.Helper()
	if _, err := p.conn.Write(b); err != nil {
		p.t.Fatal(err)
	}
}

// ack reads one reply and parses it.
func (p *peer) ack() (code, controlID, text string) {
	p.t.Helper()
	_ = p.conn.SetReadDeadline(time.Now().Add(10 * time.Second))
	f, err := p.r.ReadFrame()
	if err != nil {
		p.t.Fatalf("reading the ACK: %v", err)
	}
	code, controlID, text, err = hl7.ParseACK(f)
	if err != nil {
		p.t.Fatalf("the reply is not an ACK: %v\n%q", err, f)
	}
	return code, controlID, text
}

// closed waits for the server to close the connection (EOF or reset),
// failing if a frame arrives instead or nothing happens within limit.
func (p *peer) closed(limit time.Duration) {
	p.t.Helper()
	_ = p.conn.SetReadDeadline(time.Now().Add(limit))
	f, err := p.r.ReadFrame()
	switch {
	case err == nil:
		p.t.Fatalf("got a frame %q, want the connection closed", f)
	case errors.Is(err, os.ErrDeadlineExceeded):
		p.t.Fatalf("the connection is still open after %v", limit)
	case errors.Is(err, io.EOF), errors.Is(err, mllp.ErrFraming):
	default:
		var ne *net.OpError
		if !errors.As(err, &ne) { // a reset is a close too
			p.t.Fatalf("want EOF, got %v", err)
		}
	}
}

// quiet checks that nothing arrives within d.
func (p *peer) quiet(d time.Duration) {
	p.t.Helper()
	_ = p.conn.SetReadDeadline(time.Now().Add(d))
	f, err := p.r.ReadFrame()
	if err == nil {
		p.t.Fatalf("got an unexpected frame %q", f)
	}
	if !errors.Is(err, os.ErrDeadlineExceeded) {
		p.t.Fatalf("want silence, got %v", err)
	}
}

func frame(p []byte) []byte {
	var b bytes.Buffer
	if err := mllp.WriteFrame(&b, p); err != nil {
		panic(err)
	}
	return b.Bytes()
}

type sample struct {
	raw []byte
	id  string
}

func samples(t *testing.T, n int, enhanced bool) []sample {
	t.Helper()
	g, err := hl7.NewGenerator(hl7.GeneratorOptions{Seed: 7, Patients: 5, Enhanced: enhanced})
	if err != nil {
		t.Fatal(err)
	}
	out := make([]sample, n)
	for i := range out {
		s := g.Next()
		out[i] = sample{raw: s.Bytes, id: s.ControlID}
	}
	return out
}
