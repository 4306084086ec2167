package mllpnet

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"time"

	"github.com/ductus/ductus/integration/hl7"
	"github.com/ductus/ductus/integration/mllp"
)

// Defaults for ClientOptions.
const (
	DefaultAckTimeout  = 30 * time.Second
	DefaultDialTimeout = 10 * time.Second
	DefaultBackoffMin  = time.Second
	DefaultBackoffMax  = 60 * time.Second
	// DefaultMaxAckBytes bounds an ACK frame: ACKs are small, a peer that
	// sends megabytes in reply is not answering the message.
	DefaultMaxAckBytes = 1 << 20
)

// Errors a Send may return, matched with errors.Is.
var (
	// ErrAckTimeout: no ACK within AckTimeout (or before ctx ended). The
	// message may or may not have been received.
	ErrAckTimeout = errors.New("mllpnet: no ACK within the timeout")
	// ErrAckMismatch: the reply acknowledges another message (MSA-2 is not
	// the message's MSH-10): the connection is out of step.
	ErrAckMismatch = errors.New("mllpnet: the ACK is for another message")
	// ErrBadAck: the reply is not an HL7 acknowledgement.
	ErrBadAck = errors.New("mllpnet: the reply is not an ACK")
	// ErrConnection: dialing, writing or reading failed.
	ErrConnection = errors.New("mllpnet: connection failed")
	// ErrDial: the connection could not be made at all: nothing of the
	// message left this side. errors.Is matches ErrConnection for it too,
	// so its message names one failure, not "connection failed: cannot
	// connect".
	ErrDial error = dialError{}
	// ErrBackoff: a dial is not due yet and ctx ends before it is.
	ErrBackoff = errors.New("mllpnet: waiting to reconnect")
	// ErrMessage: the payload cannot be sent at all: not HL7, no MSH-10,
	// or a framing byte inside. Retrying will not help.
	ErrMessage = errors.New("mllpnet: the message cannot be sent")
	// ErrClientClosed: Send after Close.
	ErrClientClosed = errors.New("mllpnet: client closed")
)

// BackoffError is the ErrBackoff of a Send that did not wait for its dial:
// the dial is due only after the Send's deadline. Nothing was tried, so a
// caller that retries may count it as no attempt and come back after
// Wait.
type BackoffError struct {
	Addr string
	Wait time.Duration // until the next dial is due
}

func (e *BackoffError) Error() string {
	return fmt.Sprintf("%v: the next connection attempt to %s is due in %v", ErrBackoff, e.Addr, e.Wait.Round(time.Millisecond))
}

// Is makes a BackoffError an ErrBackoff.
func (e *BackoffError) Is(target error) bool { return target == ErrBackoff }

// ClientOptions configure a Client.
type ClientOptions struct {
	// CloseAfterAck closes the connection after every ACK, so each message
	// goes on a connection of its own (for receivers that handle one message
	// per connection and misbehave when a second arrives on it).
	CloseAfterAck bool
	// Addr is the peer's host:port (required).
	Addr string
	// AckTimeout bounds one exchange: writing the frame and reading its
	// ACK (default 30 s).
	AckTimeout time.Duration
	// DialTimeout bounds one connection attempt (default 10 s).
	DialTimeout time.Duration
	// BackoffMin and BackoffMax shape the wait before a dial after a failed
	// one: BackoffMin, doubling up to BackoffMax (defaults 1 s and 60 s).
	BackoffMin, BackoffMax time.Duration
	// MaxAckBytes bounds the reply frame (default 1 MiB).
	MaxAckBytes int
	// Dial opens the connection; nil uses a net.Dialer. It is the place to
	// put TLS.
	Dial func(ctx context.Context, network, addr string) (net.Conn, error)
	// Logger receives connection events; nil discards them.
	Logger *slog.Logger
}

// Ack is a peer's acknowledgement.
type Ack struct {
	// Code is MSA-1 upper-cased: AA, AE, AR, CA, CE or CR.
	Code string
	// ControlID is MSA-2, the acknowledged message's MSH-10.
	ControlID string
	// Text is MSA-3, or the ERR segment's text when MSA-3 is empty.
	Text string
	// Raw is the ACK as received.
	Raw []byte
}

// Client sends messages to one MLLP peer over a kept-alive connection,
// one at a time: a Send waits for the one before it, which keeps the
// order of an ordered lane. It is safe for concurrent use.
type Client struct {
	o   ClientOptions
	log *slog.Logger

	lane chan struct{} // a one-slot semaphore: held by the Send in progress

	// Guarded by lane.
	conn    net.Conn
	r       *mllp.Reader
	acked   bool          // the current connection has carried an ACK
	backoff time.Duration // the current wait between failed dials
	dialAt  time.Time     // no dial before this
	closed  bool
}

// NewClient checks opts and returns a client. It does not connect: the
// first Send does.
func NewClient(opts ClientOptions) (*Client, error) {
	if opts.Addr == "" {
		return nil, errors.New("mllpnet: a client needs an address (host:port)")
	}
	if _, _, err := net.SplitHostPort(opts.Addr); err != nil {
		return nil, fmt.Errorf("mllpnet: the address %q is not host:port: %w", opts.Addr, err)
	}
	for _, d := range []struct {
		name string
		v    time.Duration
	}{{"AckTimeout", opts.AckTimeout}, {"DialTimeout", opts.DialTimeout}, {"BackoffMin", opts.BackoffMin}, {"BackoffMax", opts.BackoffMax}} {
		if d.v < 0 {
			return nil, fmt.Errorf("mllpnet: %s is negative (%v)", d.name, d.v)
		}
	}
	if opts.MaxAckBytes < 0 {
		return nil, fmt.Errorf("mllpnet: MaxAckBytes is negative (%d)", opts.MaxAckBytes)
	}
	def := func(d *time.Duration, v time.Duration) {
		if *d == 0 {
			*d = v
		}
	}
	def(&opts.AckTimeout, DefaultAckTimeout)
	def(&opts.DialTimeout, DefaultDialTimeout)
	def(&opts.BackoffMin, DefaultBackoffMin)
	def(&opts.BackoffMax, DefaultBackoffMax)
	if opts.BackoffMax < opts.BackoffMin {
		return nil, fmt.Errorf("mllpnet: BackoffMax (%v) is below BackoffMin (%v)", opts.BackoffMax, opts.BackoffMin)
	}
	if opts.MaxAckBytes == 0 {
		opts.MaxAckBytes = DefaultMaxAckBytes
	}
	if opts.Dial == nil {
		d := &net.Dialer{}
		opts.Dial = d.DialContext
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	c := &Client{o: opts, log: opts.Logger.With("peer", opts.Addr), lane: make(chan struct{}, 1)}
	return c, nil
}

// Send writes payload as one frame and waits for its ACK. The payload must
// be an HL7 message with an MSH-10; the ACK's MSA-2 must equal it.
//
// An answer from the peer, whatever its code, is returned with a nil
// error: AE or AR is the peer's decision, which OutcomeOf turns into retry
// or reject. An error means there is no usable answer: the connection is
// closed (the next Send dials again) unless the error is ErrMessage or
// ErrBackoff, which never touch the connection.
func (c *Client) Send(ctx context.Context, payload []byte) (Ack, error) {
	controlID, err := checkPayload(payload)
	if err != nil {
		return Ack{}, err
	}
	select {
	case c.lane <- struct{}{}:
	case <-ctx.Done():
		return Ack{}, fmt.Errorf("mllpnet: waiting for the previous send: %w", ctx.Err())
	}
	defer func() { <-c.lane }()
	if c.closed {
		return Ack{}, ErrClientClosed
	}
	if c.conn != nil && peerClosed(c.conn) {
		// The peer closed the kept-alive connection while it was idle (an
		// idle timeout on its side). Nothing of this message was written,
		// so reconnecting now is safe and not a failure.
		c.log.Debug("mllp: the peer closed the idle connection; reconnecting")
		c.drop(true)
	}
	if c.conn == nil {
		if err := c.dial(ctx); err != nil {
			return Ack{}, err
		}
	}
	ack, err := c.exchange(ctx, payload, controlID)
	if err != nil {
		c.drop(false)
		return Ack{}, err
	}
	c.acked, c.backoff = true, 0
	if c.o.CloseAfterAck {
		c.drop(true)
	}
	return ack, nil
}

// checkPayload returns the message's MSH-10, or why it cannot be sent.
func checkPayload(payload []byte) (string, error) {
	m, err := hl7.Parse(payload)
	if err != nil {
		return "", fmt.Errorf("%w: %w", ErrMessage, err)
	}
	id := m.ControlID()
	if id == "" {
		return "", fmt.Errorf("%w: MSH-10 (message control ID) is empty, so no ACK could be matched to it", ErrMessage)
	}
	for i, b := range payload {
		if b == mllp.StartBlock || b == mllp.EndBlock {
			return "", fmt.Errorf("%w: byte %d is a framing byte (0x%02X)", ErrMessage, i, b)
		}
	}
	return id, nil
}

// dial connects, waiting out the back-off of earlier failures.
func (c *Client) dial(ctx context.Context) error {
	if wait := time.Until(c.dialAt); wait > 0 {
		if dl, ok := ctx.Deadline(); ok && dl.Before(c.dialAt) {
			return &BackoffError{Addr: c.o.Addr, Wait: wait}
		}
		t := time.NewTimer(wait)
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			return fmt.Errorf("%w: %w", ErrBackoff, ctx.Err())
		}
	}
	dctx, cancel := context.WithTimeout(ctx, c.o.DialTimeout)
	defer cancel()
	conn, err := c.o.Dial(dctx, "tcp", c.o.Addr)
	if err != nil {
		c.failed()
		return fmt.Errorf("%w to %s: %w (next attempt in %v)", ErrDial, c.o.Addr, err, c.backoff)
	}
	if tc, ok := conn.(*net.TCPConn); ok {
		_ = tc.SetNoDelay(true)
	}
	c.conn, c.r, c.acked = conn, mllp.NewReader(conn, c.o.MaxAckBytes), false
	c.log.Debug("mllp: connected")
	return nil
}

// failed grows the back-off after a failed dial or a connection that
// failed before its first ACK.
func (c *Client) failed() {
	if c.backoff == 0 {
		c.backoff = c.o.BackoffMin
	} else {
		c.backoff = min(2*c.backoff, c.o.BackoffMax)
	}
	c.dialAt = time.Now().Add(c.backoff)
}

// drop closes the connection. A connection that never carried an ACK
// counts as a failed attempt (a peer that accepts and closes at once must
// not be redialled in a tight loop), unless clean says the peer merely
// closed it while idle.
func (c *Client) drop(clean bool) {
	if c.conn == nil {
		return
	}
	_ = c.conn.Close()
	if !clean && !c.acked {
		c.failed()
	}
	c.conn, c.r, c.acked = nil, nil, false
}

// exchange writes one frame and reads its ACK.
func (c *Client) exchange(ctx context.Context, payload []byte, controlID string) (Ack, error) {
	deadline := time.Now().Add(c.o.AckTimeout)
	if dl, ok := ctx.Deadline(); ok && dl.Before(deadline) {
		deadline = dl
	}
	conn := c.conn
	_ = conn.SetDeadline(deadline)
	// A cancelled ctx wakes the blocked write or read at once. The callback
	// holds its own copy of the connection: it may still be running after
	// exchange returned, when a failed send has already dropped c.conn.
	stop := context.AfterFunc(ctx, func() { _ = conn.SetDeadline(time.Unix(1, 0)) })
	defer stop()

	timedOut := func(err error) error {
		if ctx.Err() != nil {
			return fmt.Errorf("%w: %w", ErrAckTimeout, ctx.Err())
		}
		return fmt.Errorf("%w (%v) from %s for %s: %w", ErrAckTimeout, c.o.AckTimeout, c.o.Addr, controlID, err)
	}
	if err := mllp.WriteFrame(c.conn, payload); err != nil {
		if errors.Is(err, os.ErrDeadlineExceeded) {
			return Ack{}, timedOut(err)
		}
		return Ack{}, fmt.Errorf("%w: sending %s to %s: %w", ErrConnection, controlID, c.o.Addr, err)
	}
	frame, err := c.r.ReadFrame()
	if err != nil {
		switch {
		case errors.Is(err, os.ErrDeadlineExceeded):
			return Ack{}, timedOut(err)
		case errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF):
			return Ack{}, fmt.Errorf("%w: %s closed the connection before acknowledging %s", ErrConnection, c.o.Addr, controlID)
		case errors.Is(err, mllp.ErrFraming):
			return Ack{}, fmt.Errorf("%w: the reply to %s: %w", ErrBadAck, controlID, err)
		}
		return Ack{}, fmt.Errorf("%w: waiting for the ACK of %s from %s: %w", ErrConnection, controlID, c.o.Addr, err)
	}
	code, ackOf, text, err := hl7.ParseACK(frame)
	if err != nil {
		return Ack{}, fmt.Errorf("%w: the reply to %s: %w", ErrBadAck, controlID, err)
	}
	if ackOf != controlID {
		return Ack{}, fmt.Errorf("%w: sent %s, the ACK (%s) is for %q", ErrAckMismatch, controlID, code, ackOf)
	}
	return Ack{Code: code, ControlID: ackOf, Text: text, Raw: frame}, nil
}

// Close closes the connection; a Send in progress finishes first. Later
// Sends return ErrClientClosed.
func (c *Client) Close() error {
	c.lane <- struct{}{}
	defer func() { <-c.lane }()
	c.closed = true
	if c.conn != nil {
		err := c.conn.Close()
		c.conn, c.r = nil, nil
		return err
	}
	return nil
}

// dialError is ErrDial: a connection failure (ErrConnection) of its own.
type dialError struct{}

func (dialError) Error() string { return "mllpnet: cannot connect" }

// Is makes errors.Is(err, ErrConnection) hold for a dial failure.
func (dialError) Is(target error) bool { return target == ErrConnection }
