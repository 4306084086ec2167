package mllpnet

import (
	"context"
	"errors"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ductus/ductus/integration/hl7"
	"github.com/ductus/ductus/internal/testutil"
)

func newClient(t *testing.T, addr string, o ClientOptions) *Client {
	t.Helper()
	o.Addr = addr
	if o.Logger == nil {
		o.Logger = testLogger(t)
	}
	c, err := NewClient(o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// answering returns a handler that answers every message with outcome o in
// its mode.
func answering(o hl7.Outcome) HandlerFunc {
	return func(_ context.Context, _ ConnInfo, _ []byte, msg *hl7.Message) []byte {
		a, err := hl7.BuildACK(msg, hl7.CodeFor(msg, o), "because", hl7.ACKOptions{})
		if err != nil {
			panic(err)
		}
		return a.Bytes()
	}
}

func TestClientCodes(t *testing.T) {
	cases := []struct {
		name     string
		outcome  hl7.Outcome
		enhanced bool
		code     string
		want     Outcome
	}{
		{"AA", hl7.Accepted, false, "AA", Sent},
		{"AE", hl7.Errored, false, "AE", Retry},
		{"AR", hl7.Rejected, false, "AR", Reject},
		{"CA", hl7.Accepted, true, "CA", Sent},
		{"CE", hl7.Errored, true, "CE", Retry},
		{"CR", hl7.Rejected, true, "CR", Reject},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := start(t, answering(tc.outcome), ServerOptions{})
			c := newClient(t, r.addr, ClientOptions{})
			s := samples(t, 1, tc.enhanced)[0]
			ack, err := c.Send(context.Background(), s.raw)
			if err != nil {
				t.Fatal(err)
			}
			if ack.Code != tc.code || ack.ControlID != s.id || len(ack.Raw) == 0 {
				t.Errorf("ack %+v", ack)
			}
			if tc.code != "AA" && tc.code != "CA" && ack.Text != "because" {
				t.Errorf("text %q", ack.Text)
			}
			if got := OutcomeOf(ack, err); got != tc.want {
				t.Errorf("outcome %v, want %v", got, tc.want)
			}
		})
	}
}

func TestClientKeepsOneConnection(t *testing.T) {
	r := start(t, ackAA, ServerOptions{})
	c := newClient(t, r.addr, ClientOptions{})
	var wg sync.WaitGroup
	for _, s := range samples(t, 40, false) {
		wg.Add(1)
		go func() { // concurrent callers take turns on the one connection
			defer wg.Done()
			if ack, err := c.Send(context.Background(), s.raw); err != nil || ack.ControlID != s.id {
				t.Errorf("send %s: %+v %v", s.id, ack, err)
			}
		}()
	}
	wg.Wait()
	if got := r.srv.Stats().Connections.Load(); got != 1 {
		t.Errorf("%d connections, want 1", got)
	}
}

func TestClientReconnectsAfterRestart(t *testing.T) {
	m := samples(t, 3, false)
	ln := listen(t, "")
	addr := ln.Addr().String()
	first := startOn(t, ln, ackAA, ServerOptions{})
	c := newClient(t, addr, ClientOptions{BackoffMin: 20 * time.Millisecond, BackoffMax: 40 * time.Millisecond})
	if _, err := c.Send(context.Background(), m[0].raw); err != nil {
		t.Fatal(err)
	}
	_ = first.srv.Close()
	<-first.done
	first.done <- nil

	_, err := c.Send(context.Background(), m[1].raw)
	if !errors.Is(err, ErrConnection) || !errors.Is(err, ErrDial) || OutcomeOf(Ack{}, err) != Retry {
		t.Fatalf("with the server down: %v, want a dial error to retry", err)
	}
	if want := "mllpnet: cannot connect to " + addr + ": "; !strings.HasPrefix(err.Error(), want) || strings.Count(err.Error(), "mllpnet:") != 1 {
		t.Fatalf("the dial error reads %q; want it to start %q and name the package once", err, want)
	}
	second := startOn(t, listen(t, addr), ackAA, ServerOptions{})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	ack, err := c.Send(ctx, m[1].raw)
	if err != nil || ack.Code != "AA" || ack.ControlID != m[1].id {
		t.Fatalf("after the restart: %+v %v", ack, err)
	}
	if got := second.srv.Stats().AA.Load(); got != 1 {
		t.Errorf("the new server acknowledged %d", got)
	}
}

func TestClientBackoff(t *testing.T) {
	m := samples(t, 1, false)
	t.Run("a failed dial makes the next wait", func(t *testing.T) {
		ln := listen(t, "")
		addr := ln.Addr().String()
		ln.Close() // nothing listens here now
		c := newClient(t, addr, ClientOptions{BackoffMin: 5 * time.Second})
		if _, err := c.Send(context.Background(), m[0].raw); !errors.Is(err, ErrConnection) {
			t.Fatalf("first: %v", err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
		defer cancel()
		_, err := c.Send(ctx, m[0].raw)
		var be *BackoffError
		if !errors.Is(err, ErrBackoff) || OutcomeOf(Ack{}, err) != Retry || !errors.As(err, &be) || be.Wait <= 100*time.Millisecond {
			t.Fatalf("second: %v, want a BackoffError past the deadline", err)
		}
	})
	t.Run("a peer that closes before any ACK counts as a failure", func(t *testing.T) {
		ln := listen(t, "")
		go func() {
			for {
				conn, err := ln.Accept()
				if err != nil {
					return
				}
				conn.Close()
			}
		}()
		t.Cleanup(func() { ln.Close() })
		c := newClient(t, ln.Addr().String(), ClientOptions{BackoffMin: 5 * time.Second})
		if _, err := c.Send(context.Background(), m[0].raw); !errors.Is(err, ErrConnection) || errors.Is(err, ErrDial) {
			t.Fatalf("first: %v", err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
		defer cancel()
		if _, err := c.Send(ctx, m[0].raw); !errors.Is(err, ErrBackoff) {
			t.Fatalf("second: %v, want ErrBackoff", err)
		}
	})
}

func TestClientIdleClosedByPeer(t *testing.T) {
	m := samples(t, 2, false)
	r := start(t, ackAA, ServerOptions{IdleTimeout: 50 * time.Millisecond})
	c := newClient(t, r.addr, ClientOptions{BackoffMin: 5 * time.Second})
	if _, err := c.Send(context.Background(), m[0].raw); err != nil {
		t.Fatal(err)
	}
	testutil.Eventually(t, 10*time.Second, "the server closed the idle connection", func() bool {
		st := r.srv.Stats().Snapshot()
		return st.IdleTimeouts == 1 && st.ConnectionsOpen == 0
	})
	// The probe notices the close: no error, no back-off, a new connection.
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	if ack, err := c.Send(ctx, m[1].raw); err != nil || ack.Code != "AA" {
		t.Fatalf("%+v %v", ack, err)
	}
	if got := r.srv.Stats().Connections.Load(); got != 2 {
		t.Errorf("%d connections, want 2", got)
	}
}

func TestClientAckTimeout(t *testing.T) {
	m := samples(t, 2, false)
	release := make(chan struct{})
	h := func(ctx context.Context, ci ConnInfo, payload []byte, msg *hl7.Message) []byte {
		if ci.ID == 1 {
			<-release
		}
		return ackAA(ctx, ci, payload, msg)
	}
	r := start(t, h, ServerOptions{})
	defer close(release)
	c := newClient(t, r.addr, ClientOptions{AckTimeout: 100 * time.Millisecond, BackoffMin: 10 * time.Millisecond})
	_, err := c.Send(context.Background(), m[0].raw)
	if !errors.Is(err, ErrAckTimeout) || OutcomeOf(Ack{}, err) != Retry {
		t.Fatalf("%v, want ErrAckTimeout", err)
	}
	// The late ACK goes to the closed connection; the next send is answered
	// on a new one and matches.
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	ack, err := c.Send(ctx, m[1].raw)
	if err != nil || ack.ControlID != m[1].id {
		t.Fatalf("%+v %v", ack, err)
	}
	if got := r.srv.Stats().Connections.Load(); got != 2 {
		t.Errorf("%d connections, want 2", got)
	}
}

func TestClientContextCancel(t *testing.T) {
	m := samples(t, 1, false)
	release := make(chan struct{})
	r := start(t, func(ctx context.Context, ci ConnInfo, p []byte, msg *hl7.Message) []byte {
		<-release
		return ackAA(ctx, ci, p, msg)
	}, ServerOptions{})
	defer close(release)
	c := newClient(t, r.addr, ClientOptions{})
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(50*time.Millisecond, cancel)
	_, err := c.Send(ctx, m[0].raw)
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("%v, want context.Canceled", err)
	}
}

// A context cancelled while a send is failing: the cancel callback may
// still run after the failed send dropped the connection (it once read the
// dropped, nil connection and crashed the process; -race sees the race).
func TestClientCancelRacesDrop(t *testing.T) {
	m := samples(t, 1, false)
	r := start(t, func(ctx context.Context, ci ConnInfo, p []byte, msg *hl7.Message) []byte { return nil }, ServerOptions{})
	c := newClient(t, r.addr, ClientOptions{AckTimeout: time.Millisecond, BackoffMin: time.Microsecond, BackoffMax: time.Microsecond})
	for i := range 200 {
		ctx, cancel := context.WithCancel(context.Background())
		go func() {
			time.Sleep(time.Duration(i%7) * 100 * time.Microsecond)
			cancel()
		}()
		_, _ = c.Send(ctx, m[0].raw)
		cancel()
	}
}

func TestClientBadReplies(t *testing.T) {
	m := samples(t, 2, false)
	cases := []struct {
		name  string
		reply func(payload []byte) []byte
		want  error
	}{
		{"an ACK for another message", func([]byte) []byte {
			other, _ := hl7.Parse(m[1].raw)
			a, _ := hl7.BuildACK(other, "AA", "", hl7.ACKOptions{})
			return a.Bytes()
		}, ErrAckMismatch},
		{"the message echoed back", func(p []byte) []byte { return p }, ErrBadAck},
		{"not HL7", func([]byte) []byte { return []byte("OK") }, ErrBadAck},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			bad := true
			var mu sync.Mutex
			h := func(ctx context.Context, ci ConnInfo, p []byte, msg *hl7.Message) []byte {
				mu.Lock()
				defer mu.Unlock()
				if bad {
					bad = false
					return tc.reply(p)
				}
				return ackAA(ctx, ci, p, msg)
			}
			r := start(t, h, ServerOptions{})
			c := newClient(t, r.addr, ClientOptions{BackoffMin: 10 * time.Millisecond})
			_, err := c.Send(context.Background(), m[0].raw)
			if !errors.Is(err, tc.want) || OutcomeOf(Ack{}, err) != Retry {
				t.Fatalf("%v, want %v", err, tc.want)
			}
			// Out of step: the connection was dropped, the resend is clean.
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			if ack, err := c.Send(ctx, m[0].raw); err != nil || ack.Code != "AA" {
				t.Fatalf("resend: %+v %v", ack, err)
			}
			if got := r.srv.Stats().Connections.Load(); got != 2 {
				t.Errorf("%d connections, want 2", got)
			}
		})
	}
}

func TestClientRefusesUnsendable(t *testing.T) {
	r := start(t, ackAA, ServerOptions{})
	c := newClient(t, r.addr, ClientOptions{})
	cases := map[string][]byte{
		"not HL7":      []byte("hello"),
		"no MSH-10":    []byte("MSH|^~\\&|A|B|C|D|20260105||ADT^A01||P|2.5\r"),
		"framing byte": []byte("MSH|^~\\&|A|B|C|D|20260105||ADT^A01|X|P|2.5\rNTE|1||a\x1cb\r"),
	}
	for name, p := range cases {
		t.Run(name, func(t *testing.T) {
			_, err := c.Send(context.Background(), p)
			if !errors.Is(err, ErrMessage) || OutcomeOf(Ack{}, err) != Reject {
				t.Fatalf("%v, want ErrMessage", err)
			}
		})
	}
	if got := r.srv.Stats().Connections.Load(); got != 0 {
		t.Errorf("%d connections for unsendable messages", got)
	}
}

func TestClientClosed(t *testing.T) {
	r := start(t, ackAA, ServerOptions{})
	c := newClient(t, r.addr, ClientOptions{})
	_ = c.Close()
	if _, err := c.Send(context.Background(), samples(t, 1, false)[0].raw); !errors.Is(err, ErrClientClosed) {
		t.Fatalf("%v", err)
	}
}

func TestNewClientChecks(t *testing.T) {
	cases := []struct {
		name string
		o    ClientOptions
	}{
		{"no address", ClientOptions{}},
		{"not host:port", ClientOptions{Addr: "localhost"}},
		{"negative timeout", ClientOptions{Addr: "a:1", AckTimeout: -1}},
		{"max below min", ClientOptions{Addr: "a:1", BackoffMin: time.Minute, BackoffMax: time.Second}},
		{"negative ack size", ClientOptions{Addr: "a:1", MaxAckBytes: -1}},
	}
	for _, tc := range cases {
		if _, err := NewClient(tc.o); err == nil {
			t.Errorf("%s: no error", tc.name)
		}
	}
}

func TestOutcomeOf(t *testing.T) {
	cases := []struct {
		ack  Ack
		err  error
		want Outcome
	}{
		{Ack{Code: "AA"}, nil, Sent},
		{Ack{Code: "CA"}, nil, Sent},
		{Ack{Code: "AE"}, nil, Retry},
		{Ack{Code: "CE"}, nil, Retry},
		{Ack{Code: "AR"}, nil, Reject},
		{Ack{Code: "CR"}, nil, Reject},
		{Ack{}, ErrAckTimeout, Retry},
		{Ack{}, &net.OpError{Op: "dial", Err: errors.New("refused")}, Retry},
		{Ack{}, ErrAckMismatch, Retry},
		{Ack{}, ErrMessage, Reject},
	}
	for _, tc := range cases {
		if got := OutcomeOf(tc.ack, tc.err); got != tc.want {
			t.Errorf("OutcomeOf(%+v, %v) = %v, want %v", tc.ack, tc.err, got, tc.want)
		}
	}
}
