package mllpnet

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ductus/ductus/integration/hl7"
	"github.com/ductus/ductus/internal/testutil"
)

// big returns an HL7 message of at least n bytes with control ID id.
func big(id string, n int) []byte {
	var b strings.Builder
	b.WriteString("MSH|^~\\&|LAB|GH|DUCTUS|ENGINE|20260105080000||ORU^R01^ORU_R01|" + id + "|P|2.5.1\r")
	b.WriteString("PID|1||1000001^^^GH^MR||DOE^JANE\r")
	for i := 1; b.Len() < n; i++ {
		fmt.Fprintf(&b, "NTE|%d||%s\r", i, strings.Repeat("x", 200))
	}
	return []byte(b.String())
}

func TestServerFraming(t *testing.T) {
	m := samples(t, 25, false)
	cat := func(parts ...[]byte) []byte { return bytes.Join(parts, nil) }
	var many [][]byte
	var manyWant []string
	for _, s := range m[:20] {
		many = append(many, frame(s.raw))
		manyWant = append(manyWant, "AA "+s.id)
	}
	salvage := []byte("MSH|^~\\&|A|B|C|D|20260105||ADT^A01|BAD1|P|2.5\rgarbage line\r")
	// A frame's bytes without its final 0x0D.
	noCR := func(p []byte) []byte { f := frame(p); return f[:len(f)-1] }
	cases := []struct {
		name   string
		input  []byte
		chunk  int // write in pieces of this size, 0: one write
		want   []string
		closed bool
		check  func(t *testing.T, st StatsSnapshot)
	}{
		{name: "one frame", input: frame(m[0].raw), want: []string{"AA " + m[0].id},
			check: func(t *testing.T, st StatsSnapshot) {
				if st.AA != 1 || st.Frames != 1 || st.BytesIn != uint64(len(m[0].raw)+3) || st.BytesOut == 0 {
					t.Errorf("stats %+v", st)
				}
			}},
		{name: "split into small reads", input: cat(frame(m[0].raw), frame(m[1].raw)), chunk: 7,
			want: []string{"AA " + m[0].id, "AA " + m[1].id}},
		{name: "many frames in one write", input: cat(many...), want: manyWant,
			check: func(t *testing.T, st StatsSnapshot) {
				if st.AA != 20 || st.Frames != 20 {
					t.Errorf("stats %+v", st)
				}
			}},
		{name: "line feed after each frame", input: cat(frame(m[0].raw), []byte("\n"), frame(m[1].raw), []byte("\r\n")),
			want: []string{"AA " + m[0].id, "AA " + m[1].id}},
		{name: "not HL7, then HL7", input: cat(frame([]byte("hello")), frame(m[2].raw)),
			want: []string{"AR ", "AA " + m[2].id},
			check: func(t *testing.T, st StatsSnapshot) {
				if st.NotHL7 != 1 || st.AR != 1 || st.AA != 1 {
					t.Errorf("stats %+v", st)
				}
			}},
		{name: "not HL7 after a readable MSH: AR names it", input: frame(salvage), want: []string{"AR BAD1"}},
		{name: "empty frame", input: cat(frame(nil), frame(m[3].raw)), want: []string{"AR ", "AA " + m[3].id}},
		{name: "too large: AR with its MSH-10, then the connection goes on", input: cat(frame(big("HUGE1", 5000)), frame(m[4].raw)),
			want: []string{"AR HUGE1", "AA " + m[4].id},
			check: func(t *testing.T, st StatsSnapshot) {
				if st.TooLarge != 1 || st.AR != 1 || st.AA != 1 {
					t.Errorf("stats %+v", st)
				}
			}},
		{name: "too large across many reads", input: cat(frame(big("HUGE2", 100_000)), frame(m[5].raw)), chunk: 3000,
			want: []string{"AR HUGE2", "AA " + m[5].id}},
		{name: "bad end block: AR, then the next frame", input: cat(noCR(m[6].raw), []byte("X"), frame(m[7].raw)),
			want: []string{"AR " + m[6].id, "AA " + m[7].id}},
		{name: "end block straight into the next start block", input: cat(noCR(m[8].raw), frame(m[9].raw)),
			want: []string{"AR " + m[8].id, "AA " + m[9].id}},
		{name: "frame cut short by a start block: dropped unanswered", input: cat([]byte{0x0B}, m[10].raw[:40], frame(m[11].raw)),
			want: []string{"AA " + m[11].id},
			check: func(t *testing.T, st StatsSnapshot) {
				if st.FramingErrors != 1 || st.AR != 0 {
					t.Errorf("stats %+v", st)
				}
			}},
		{name: "junk between frames is skipped", input: cat(frame(m[12].raw), []byte("junk"), frame(m[13].raw)),
			want: []string{"AA " + m[12].id, "AA " + m[13].id}},
		{name: "junk before the first frame: not MLLP, closed", input: []byte("GET / HTTP/1.1\r\nHost: x\r\n\r\n"), closed: true},
		{name: "TLS hello on a plain port: closed", input: []byte{0x16, 0x03, 0x01, 0x02, 0x00, 0x01}, closed: true},
		{name: "enhanced mode plumbing: the handler's CA goes out", input: frame(samples(t, 1, true)[0].raw),
			want: []string{"CA " + samples(t, 1, true)[0].id},
			check: func(t *testing.T, st StatsSnapshot) {
				if st.CA != 1 {
					t.Errorf("stats %+v", st)
				}
			}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := start(t, ackAA, ServerOptions{MaxMessageBytes: 4096})
			p := dial(t, r.addr)
			go func() {
				if tc.chunk == 0 {
					_, _ = p.conn.Write(tc.input)
					return
				}
				for b := tc.input; len(b) > 0; {
					n := min(tc.chunk, len(b))
					if _, err := p.conn.Write(b[:n]); err != nil {
						return
					}
					b = b[n:]
					time.Sleep(200 * time.Microsecond) // let the pieces arrive as separate reads
				}
			}()
			for i, w := range tc.want {
				code, id, text := p.ack()
				if got := code + " " + id; got != w {
					t.Fatalf("reply %d: got %q (%s), want %q", i+1, got, text, w)
				}
			}
			if tc.closed {
				p.closed(5 * time.Second)
			} else {
				p.quiet(50 * time.Millisecond)
			}
			if tc.check != nil {
				tc.check(t, r.srv.Stats().Snapshot())
			}
		})
	}
}

func TestServerRejectTexts(t *testing.T) {
	r := start(t, ackAA, ServerOptions{MaxMessageBytes: 4096})
	p := dial(t, r.addr)
	p.write(frame([]byte("hello")))
	if code, _, text := p.ack(); code != "AR" || !strings.Contains(text, "not an HL7 message") {
		t.Errorf("not HL7: %s %q", code, text)
	}
	p.write(frame(big("HUGE", 5000)))
	if code, _, text := p.ack(); code != "AR" || !strings.Contains(text, "too large") || !strings.Contains(text, "4096") {
		t.Errorf("too large: %s %q", code, text)
	}
}

func TestIdleTimeout(t *testing.T) {
	m := samples(t, 2, false)
	t.Run("a connection without a frame is closed", func(t *testing.T) {
		r := start(t, ackAA, ServerOptions{IdleTimeout: 150 * time.Millisecond})
		p := dial(t, r.addr)
		p.closed(5 * time.Second)
		testutil.Eventually(t, 10*time.Second, "the idle timeout counted", func() bool { return r.srv.Stats().IdleTimeouts.Load() == 1 })
	})
	t.Run("line ends between frames do not keep it open", func(t *testing.T) {
		r := start(t, ackAA, ServerOptions{IdleTimeout: 300 * time.Millisecond})
		p := dial(t, r.addr)
		p.write(frame(m[0].raw))
		p.ack()
		stop := make(chan struct{})
		defer close(stop)
		go func() {
			for {
				select {
				case <-stop:
					return
				case <-time.After(20 * time.Millisecond):
					if _, err := p.conn.Write([]byte("\r\n")); err != nil {
						return
					}
				}
			}
		}()
		p.closed(5 * time.Second)
	})
	t.Run("a slow handler does not count as idle", func(t *testing.T) {
		slow := func(ctx context.Context, c ConnInfo, payload []byte, msg *hl7.Message) []byte {
			time.Sleep(400 * time.Millisecond)
			return ackAA(ctx, c, payload, msg)
		}
		r := start(t, slow, ServerOptions{IdleTimeout: 150 * time.Millisecond, ReadTimeout: 150 * time.Millisecond})
		p := dial(t, r.addr)
		// The second frame begins while the first is handled, longer than
		// either timeout; its read timeout starts when reading resumes.
		second := frame(m[1].raw)
		p.write(append(frame(m[0].raw), second[:20]...))
		if code, id, _ := p.ack(); code != "AA" || id != m[0].id {
			t.Fatalf("got %s %s, want AA %s", code, id, m[0].id)
		}
		p.write(second[20:])
		if code, id, _ := p.ack(); code != "AA" || id != m[1].id {
			t.Fatalf("got %s %s, want AA %s", code, id, m[1].id)
		}
		p.write(frame(m[0].raw)) // not idle: 400 ms of handling went by
		p.ack()
		if st := r.srv.Stats().Snapshot(); st.IdleTimeouts != 0 || st.ReadTimeouts != 0 {
			t.Errorf("stats %+v", st)
		}
	})
}

func TestReadTimeout(t *testing.T) {
	m := samples(t, 1, false)
	r := start(t, ackAA, ServerOptions{ReadTimeout: 150 * time.Millisecond, IdleTimeout: -1})
	idle := dial(t, r.addr)
	stalled := dial(t, r.addr)
	stalled.write(append([]byte{0x0B}, m[0].raw[:30]...))
	stalled.closed(5 * time.Second)
	testutil.Eventually(t, 10*time.Second, "the read timeout counted", func() bool { return r.srv.Stats().ReadTimeouts.Load() == 1 })
	// With no idle timeout, the connection that never began a frame stays.
	idle.quiet(100 * time.Millisecond)
	idle.write(frame(m[0].raw))
	if code, _, _ := idle.ack(); code != "AA" {
		t.Errorf("the idle connection got %s", code)
	}
}

func TestShutdownDrains(t *testing.T) {
	m := samples(t, 2, false)
	entered := make(chan struct{}, 1)
	release := make(chan struct{})
	var cancelled atomic.Bool
	h := func(ctx context.Context, c ConnInfo, payload []byte, msg *hl7.Message) []byte {
		entered <- struct{}{}
		<-release
		cancelled.Store(ctx.Err() != nil)
		return ackAA(ctx, c, payload, msg)
	}
	r := start(t, h, ServerOptions{})
	busy := dial(t, r.addr)
	idle := dial(t, r.addr)
	// The second frame is read but must not be handled once the drain has
	// begun: it gets no ACK.
	busy.write(append(frame(m[0].raw), frame(m[1].raw)...))
	<-entered
	testutil.Eventually(t, 10*time.Second, "both connections open", func() bool { return r.srv.Stats().ConnectionsOpen.Load() == 2 })

	shut := make(chan error, 1)
	go func() { shut <- r.srv.Shutdown(context.Background()) }()
	idle.closed(5 * time.Second)
	testutil.Eventually(t, 10*time.Second, "the listener closed", func() bool {
		c, err := net.DialTimeout("tcp", r.addr, time.Second)
		if err == nil {
			c.Close()
		}
		return err != nil
	})
	select {
	case err := <-shut:
		t.Fatalf("Shutdown returned %v with a handler still running", err)
	case <-time.After(50 * time.Millisecond):
	}
	close(release)
	if code, id, _ := busy.ack(); code != "AA" || id != m[0].id {
		t.Fatalf("the in-flight message got %s %s", code, id)
	}
	busy.closed(5 * time.Second)
	if err := <-shut; err != nil {
		t.Fatalf("Shutdown: %v", err)
	}
	if err := <-r.done; !errors.Is(err, ErrServerClosed) {
		t.Fatalf("Serve returned %v, want ErrServerClosed", err)
	}
	r.done <- nil // for the cleanup
	if cancelled.Load() {
		t.Error("a graceful drain cancelled the handler's context")
	}
	if st := r.srv.Stats().Snapshot(); st.AA != 1 || st.ConnectionsOpen != 0 {
		t.Errorf("stats %+v", st)
	}
}

func TestShutdownTimeoutForces(t *testing.T) {
	m := samples(t, 1, false)
	entered := make(chan struct{}, 1)
	sawCancel := make(chan bool, 1)
	h := func(ctx context.Context, c ConnInfo, payload []byte, msg *hl7.Message) []byte {
		entered <- struct{}{}
		select {
		case <-ctx.Done():
			sawCancel <- true
		case <-time.After(10 * time.Second):
			sawCancel <- false
		}
		return ackAA(ctx, c, payload, msg)
	}
	r := start(t, h, ServerOptions{})
	p := dial(t, r.addr)
	p.write(frame(m[0].raw))
	<-entered
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	if err := r.srv.Shutdown(ctx); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Shutdown: %v, want DeadlineExceeded", err)
	}
	if !<-sawCancel {
		t.Error("the handler's context was not cancelled")
	}
	p.closed(5 * time.Second)
}

func TestServeUntilContext(t *testing.T) {
	m := samples(t, 1, false)
	ln := listen(t, "")
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- Serve(ctx, ln, HandlerFunc(ackAA), ServerOptions{Logger: testLogger(t)}) }()
	p := dial(t, ln.Addr().String())
	p.write(frame(m[0].raw))
	p.ack()
	cancel()
	p.closed(5 * time.Second)
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("Serve: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Serve did not return")
	}
}

func TestMaxConnections(t *testing.T) {
	m := samples(t, 1, false)
	r := start(t, ackAA, ServerOptions{MaxConnections: 1})
	first := dial(t, r.addr)
	first.write(frame(m[0].raw))
	first.ack()
	second := dial(t, r.addr)
	second.closed(5 * time.Second)
	if got := r.srv.Stats().Refused.Load(); got != 1 {
		t.Errorf("refused %d, want 1", got)
	}
	first.write(frame(m[0].raw))
	if code, _, _ := first.ack(); code != "AA" {
		t.Errorf("the first connection got %s", code)
	}
}

func TestHandlerAnswers(t *testing.T) {
	m := samples(t, 2, false)
	t.Run("a panic is answered AE", func(t *testing.T) {
		r := start(t, func(context.Context, ConnInfo, []byte, *hl7.Message) []byte { panic("boom") }, ServerOptions{})
		p := dial(t, r.addr)
		p.write(frame(m[0].raw))
		if code, id, _ := p.ack(); code != "AE" || id != m[0].id {
			t.Errorf("got %s %s", code, id)
		}
		if r.srv.Stats().HandlerPanics.Load() != 1 {
			t.Error("the panic was not counted")
		}
	})
	t.Run("an empty answer sends nothing", func(t *testing.T) {
		h := func(ctx context.Context, c ConnInfo, payload []byte, msg *hl7.Message) []byte {
			if bytes.Contains(payload, []byte(m[0].id)) {
				return nil
			}
			return ackAA(ctx, c, payload, msg)
		}
		r := start(t, h, ServerOptions{})
		p := dial(t, r.addr)
		p.write(frame(m[0].raw))
		p.quiet(50 * time.Millisecond)
		p.write(frame(m[1].raw))
		if code, id, _ := p.ack(); code != "AA" || id != m[1].id {
			t.Errorf("got %s %s", code, id)
		}
	})
	t.Run("the handler sees the connection", func(t *testing.T) {
		var seen atomic.Value
		h := func(ctx context.Context, c ConnInfo, payload []byte, msg *hl7.Message) []byte {
			seen.Store(c)
			return ackAA(ctx, c, payload, msg)
		}
		r := start(t, h, ServerOptions{})
		p := dial(t, r.addr)
		p.write(frame(m[0].raw))
		p.ack()
		c := seen.Load().(ConnInfo)
		if c.ID != 1 || c.Remote.String() != p.conn.LocalAddr().String() || c.Local.String() != r.addr {
			t.Errorf("ConnInfo %+v", c)
		}
	})
}

func TestNewServerChecks(t *testing.T) {
	cases := []struct {
		name string
		h    Handler
		o    ServerOptions
		want string
	}{
		{"no handler", nil, ServerOptions{}, "needs a handler"},
		{"negative size", HandlerFunc(ackAA), ServerOptions{MaxMessageBytes: -1}, "MaxMessageBytes"},
		{"negative connections", HandlerFunc(ackAA), ServerOptions{MaxConnections: -2}, "MaxConnections"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := NewServer(tc.h, tc.o); err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("got %v, want an error about %s", err, tc.want)
			}
		})
	}
}

func TestAckCode(t *testing.T) {
	m, _ := hl7.ParseString("MSH|^~\\&|A|B|C|D|20260105||ADT^A01|X1|P|2.5\r")
	build := func(code string) []byte {
		a, err := hl7.BuildACK(m, code, "text", hl7.ACKOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return a.Bytes()
	}
	cases := []struct {
		in   []byte
		want string
	}{
		{build("AA"), "AA"}, {build("AE"), "AE"}, {build("AR"), "AR"},
		{build("CA"), "CA"}, {build("CE"), "CE"}, {build("CR"), "CR"},
		{[]byte("MSH#^~\\&#A\nMSA#aa#X"), "AA"},
		{[]byte("MSH|^~\\&|A\rMSA|AA^x|X"), "AA"},
		{[]byte("MSH|^~\\&|A\rMSA|ZZ|X"), ""},
		{[]byte("MSH|^~\\&|A\rPID|1"), ""},
		{[]byte("hello"), ""},
		{nil, ""},
	}
	for _, tc := range cases {
		if got := AckCode(tc.in); got != tc.want {
			t.Errorf("AckCode(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}
