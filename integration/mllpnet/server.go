package mllpnet

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"runtime/debug"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/ductus/ductus/integration/hl7"
	"github.com/ductus/ductus/integration/mllp"
)

// Defaults for ServerOptions. They match the engine's configuration
// defaults for an mllp source.
const (
	DefaultMaxMessageBytes = 1 << 20
	DefaultIdleTimeout     = 5 * time.Minute
	DefaultReadTimeout     = 30 * time.Second
	DefaultWriteTimeout    = 30 * time.Second
	DefaultShutdownTimeout = 30 * time.Second
)

// ConnInfo identifies the connection a message came in on.
type ConnInfo struct {
	// ID numbers the server's connections from 1 in accept order.
	ID     uint64
	Remote net.Addr
	Local  net.Addr
}

// Handler answers one message. payload is the frame's content and msg
// the server's parse of it (hl7.Parse(payload)), handed over so that a
// message is parsed once between the socket and the handler; both belong
// to the handler.
// The handler returns the ACK to write, usually built with hl7.BuildACK
// and hl7.CodeFor; nil or empty writes nothing (enhanced mode with MSH-15
// NE, say). Calls for one connection are sequential and in arrival order;
// calls for different connections run concurrently.
//
// ctx is cancelled only when the server is closed without a drain (Close,
// or a Shutdown whose context ran out); a graceful Shutdown lets the
// handler finish and sends its ACK.
type Handler interface {
	HandleMessage(ctx context.Context, conn ConnInfo, payload []byte, msg *hl7.Message) (ack []byte)
}

// HandlerFunc adapts a function to Handler.
type HandlerFunc func(ctx context.Context, conn ConnInfo, payload []byte, msg *hl7.Message) []byte

// HandleMessage calls f.
func (f HandlerFunc) HandleMessage(ctx context.Context, conn ConnInfo, payload []byte, msg *hl7.Message) []byte {
	return f(ctx, conn, payload, msg)
}

// ServerOptions tune a Server. The zero value is ready to use; a zero
// duration or size means its default, a negative duration means none.
type ServerOptions struct {
	// MaxMessageBytes is the largest payload accepted (default 1 MiB).
	MaxMessageBytes int
	// IdleTimeout closes a connection on which no frame has begun for this
	// long since it opened or since its last ACK (default 5 min).
	IdleTimeout time.Duration
	// ReadTimeout closes a connection whose frame, once begun, has not
	// ended within it (default 30 s).
	ReadTimeout time.Duration
	// WriteTimeout bounds writing one ACK (default 30 s).
	WriteTimeout time.Duration
	// MaxConnections refuses (accepts and closes at once) connections past
	// this many open ones; 0 means no limit.
	MaxConnections int
	// ShutdownTimeout bounds the drain when Serve's context ends (default
	// 30 s); past it, connections are closed and handlers cancelled.
	ShutdownTimeout time.Duration
	// Logger receives connection events; nil discards them.
	Logger *slog.Logger
	// Stats receives the counters; nil gives the server its own (see
	// Server.Stats).
	Stats *Stats
}

func (o *ServerOptions) normalise() error {
	if o.MaxMessageBytes < 0 {
		return fmt.Errorf("mllpnet: MaxMessageBytes is negative (%d)", o.MaxMessageBytes)
	}
	if o.MaxConnections < 0 {
		return fmt.Errorf("mllpnet: MaxConnections is negative (%d)", o.MaxConnections)
	}
	if o.MaxMessageBytes == 0 {
		o.MaxMessageBytes = DefaultMaxMessageBytes
	}
	def := func(d *time.Duration, v time.Duration) {
		if *d == 0 {
			*d = v
		}
	}
	def(&o.IdleTimeout, DefaultIdleTimeout)
	def(&o.ReadTimeout, DefaultReadTimeout)
	def(&o.WriteTimeout, DefaultWriteTimeout)
	def(&o.ShutdownTimeout, DefaultShutdownTimeout)
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if o.Stats == nil {
		o.Stats = new(Stats)
	}
	return nil
}

// ErrServerClosed is returned by Serve after Shutdown or Close, and by a
// Serve called on a server already stopped.
var ErrServerClosed = errors.New("mllpnet: server closed")

// Server is an MLLP listener. Create it with NewServer, run it with Serve,
// stop it with Shutdown or Close. A Server serves one listener once.
type Server struct {
	h     Handler
	o     ServerOptions
	log   *slog.Logger
	stats *Stats

	mu       sync.Mutex
	ln       net.Listener
	conns    map[*served]struct{}
	stopping bool
	stopped  chan struct{} // closed when stopping begins
	lnAddr   net.Addr

	nextID atomic.Uint64
	wg     sync.WaitGroup // connection goroutines
	cancel context.CancelFunc
	hctx   context.Context
}

// NewServer checks opts and returns a server that answers with h.
func NewServer(h Handler, opts ServerOptions) (*Server, error) {
	if h == nil {
		return nil, errors.New("mllpnet: a server needs a handler")
	}
	if err := opts.normalise(); err != nil {
		return nil, err
	}
	return &Server{h: h, o: opts, log: opts.Logger, stats: opts.Stats,
		conns: map[*served]struct{}{}, stopped: make(chan struct{})}, nil
}

// Stats returns the server's counters.
func (s *Server) Stats() *Stats { return s.stats }

// Addr returns the listener's address once Serve has begun, else nil.
func (s *Server) Addr() net.Addr {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.lnAddr
}

// Serve accepts connections on ln until Shutdown or Close, or until ctx
// ends, which drains like Shutdown bounded by ShutdownTimeout. ctx's
// values reach the handlers; its cancellation does not cancel a handler
// during the drain. Serve closes ln, and returns once every connection's
// goroutine has ended: ErrServerClosed after Shutdown or Close, nil after
// a drain caused by ctx, an error wrapping context.DeadlineExceeded when
// that drain had to be cut short, or the listener's error.
func (s *Server) Serve(ctx context.Context, ln net.Listener) error {
	s.mu.Lock()
	if s.stopping || s.ln != nil {
		s.mu.Unlock()
		_ = ln.Close()
		return ErrServerClosed
	}
	s.ln, s.lnAddr = ln, ln.Addr()
	s.hctx, s.cancel = context.WithCancel(context.WithoutCancel(ctx))
	s.mu.Unlock()

	drained := make(chan error, 1)
	stopWatch := context.AfterFunc(ctx, func() {
		sctx, cancel := context.WithTimeout(context.Background(), s.o.ShutdownTimeout)
		defer cancel()
		drained <- s.shutdown(sctx)
	})
	defer stopWatch()

	err := s.acceptLoop(ln)
	s.wg.Wait()
	if ctx.Err() != nil {
		if derr := <-drained; derr != nil {
			return fmt.Errorf("mllpnet: the drain did not finish within %v: %w", s.o.ShutdownTimeout, derr)
		}
		return nil
	}
	return err
}

func (s *Server) acceptLoop(ln net.Listener) error {
	var delay time.Duration
	for {
		c, err := ln.Accept()
		if err != nil {
			if s.isStopping() {
				return ErrServerClosed
			}
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() || errors.Is(err, syscall.EMFILE) || errors.Is(err, syscall.ENFILE) {
				// Out of file descriptors or a transient error: wait, as
				// net/http does, rather than spin or give up.
				delay = min(max(2*delay, 5*time.Millisecond), time.Second)
				s.log.Warn("mllp: accept failed; retrying", "error", err, "in", delay)
				select {
				case <-time.After(delay):
				case <-s.stopped:
				}
				continue
			}
			s.stop(false)
			return fmt.Errorf("mllpnet: accept: %w", err)
		}
		delay = 0
		s.add(c)
	}
}

// add starts serving c, or refuses it.
func (s *Server) add(c net.Conn) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.stopping {
		_ = c.Close()
		return
	}
	if s.o.MaxConnections > 0 && len(s.conns) >= s.o.MaxConnections {
		s.stats.Refused.Add(1)
		s.log.Warn("mllp: connection refused: the listener has its maximum of open connections",
			"remote", c.RemoteAddr().String(), "max_connections", s.o.MaxConnections)
		_ = c.Close()
		return
	}
	sv := &served{conn: c, info: ConnInfo{ID: s.nextID.Add(1), Remote: c.RemoteAddr(), Local: c.LocalAddr()}}
	s.conns[sv] = struct{}{}
	s.stats.Connections.Add(1)
	s.stats.ConnectionsOpen.Add(1)
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		defer s.remove(sv)
		s.serveConn(sv)
	}()
}

func (s *Server) remove(sv *served) {
	_ = sv.conn.Close()
	s.mu.Lock()
	delete(s.conns, sv)
	s.mu.Unlock()
	s.stats.ConnectionsOpen.Add(-1)
}

func (s *Server) isStopping() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.stopping
}

// stop closes the listener and asks every connection to end; with force it
// also closes them and cancels the handlers.
func (s *Server) stop(force bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.stopping {
		s.stopping = true
		close(s.stopped)
		if s.ln != nil {
			_ = s.ln.Close()
		}
	}
	for sv := range s.conns {
		sv.stop()
		if force {
			_ = sv.conn.Close()
		}
	}
	if force && s.cancel != nil {
		s.cancel()
	}
}

// StopAccepting closes the listener and asks idle connections to end, at
// once, without waiting: the first half of Shutdown, for a caller that
// must know no new connection is accepted before it goes on (and calls
// Shutdown to wait for the rest).
func (s *Server) StopAccepting() { s.stop(false) }

// Shutdown stops the server gracefully: the listener closes, connections
// waiting for a frame close, a handler already running finishes and its
// ACK is written before its connection closes. It returns when every
// connection has ended, or when ctx ends, in which case it closes what is
// left as Close does and returns ctx's error.
func (s *Server) Shutdown(ctx context.Context) error {
	return s.shutdown(ctx)
}

func (s *Server) shutdown(ctx context.Context) error {
	s.stop(false)
	done := make(chan struct{})
	go func() {
		s.wg.Wait()
		close(done)
	}()
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		s.stop(true)
		<-done
		return ctx.Err()
	}
}

// Close stops the server at once: the listener and every connection close
// and the handlers' context is cancelled. ACKs not yet written are lost,
// which a sender answers by resending. Close does not wait for handlers
// to return; Serve does.
func (s *Server) Close() error {
	s.stop(true)
	return nil
}

// serveConn reads frames, hands them to the handler and writes the ACKs,
// one at a time, until the connection ends.
func (s *Server) serveConn(sv *served) {
	log := s.log.With("conn", sv.info.ID, "remote", sv.info.Remote.String())
	cr := &connReader{s: sv, stats: s.stats, idle: s.o.IdleTimeout, read: s.o.ReadTimeout, firstStart: -1}
	r := mllp.NewReader(cr, s.o.MaxMessageBytes)
	cr.r = r
	cr.idleFrom(time.Now())
	log.Debug("mllp: connection opened")
	frames := 0
	for {
		payload, err := r.ReadFrame()
		cr.frameDone()
		if err != nil {
			if !s.readFailed(sv, cr, log, err, frames) {
				return
			}
			continue
		}
		frames++
		s.stats.Frames.Add(1)
		if !sv.begin() {
			return // stopping: this frame gets no ACK, the sender resends it
		}
		cr.popFront()
		ack := s.answer(sv, log, payload)
		ok := s.write(sv, log, ack)
		sv.end()
		if !ok {
			return
		}
		cr.idleFrom(time.Now())
	}
}

// answer returns the ACK for one frame: the server's own AR for a frame
// that is not HL7, the handler's answer otherwise.
func (s *Server) answer(sv *served, log *slog.Logger, payload []byte) []byte {
	msg, err := hl7.Parse(payload)
	if err != nil {
		s.stats.NotHL7.Add(1)
		log.Warn("mllp: a frame that is not HL7 answered AR", "error", err, "bytes", len(payload))
		return hl7.BuildRejectACK(payload, "not an HL7 message: "+err.Error(), hl7.ACKOptions{}).Bytes()
	}
	return s.call(sv, log, payload, msg)
}

// call runs the handler; a panic is logged and answered AE, so that one
// bad message cannot take the listener down and the sender retries.
func (s *Server) call(sv *served, log *slog.Logger, payload []byte, msg *hl7.Message) (ack []byte) {
	defer func() {
		if p := recover(); p != nil {
			s.stats.HandlerPanics.Add(1)
			log.Error("mllp: the message handler panicked; answering AE", "panic", fmt.Sprint(p), "stack", string(debug.Stack()))
			// Parsed again: the handler may have changed msg before it
			// panicked, and the ACK must echo what was sent.
			m, err := hl7.Parse(payload)
			if err != nil {
				ack = nil
				return
			}
			a, err := hl7.BuildACK(m, hl7.CodeFor(m, hl7.Errored), "internal error in the receiver", hl7.ACKOptions{})
			if err != nil {
				ack = nil
				return
			}
			ack = a.Bytes()
		}
	}()
	return s.h.HandleMessage(s.hctx, sv.info, payload, msg)
}

// write sends one ACK; false means the connection must end.
func (s *Server) write(sv *served, log *slog.Logger, ack []byte) bool {
	if len(ack) == 0 {
		s.stats.NoAck.Add(1)
		return true
	}
	if s.o.WriteTimeout > 0 {
		_ = sv.conn.SetWriteDeadline(time.Now().Add(s.o.WriteTimeout))
	}
	if err := mllp.WriteFrame(sv.conn, ack); err != nil {
		if errors.Is(err, mllp.ErrPayload) {
			log.Error("mllp: the handler's ACK cannot be framed; closing the connection", "error", err)
		} else {
			log.Info("mllp: writing the ACK failed; closing the connection", "error", err)
		}
		return false
	}
	s.stats.BytesOut.Add(uint64(len(ack) + 3))
	s.stats.countAck(AckCode(ack))
	return true
}

// readFailed handles a ReadFrame error; true means carry on reading.
func (s *Server) readFailed(sv *served, cr *connReader, log *slog.Logger, err error, frames int) bool {
	var tooLarge *mllp.FrameTooLargeError
	var bad *mllp.FramingError
	switch {
	case errors.Is(err, errClosing) || sv.isClosing():
		return false
	case errors.Is(err, io.EOF):
		log.Debug("mllp: connection closed by the peer", "frames", frames)
		return false
	case errors.Is(err, os.ErrDeadlineExceeded):
		if cr.r.InFrame() {
			s.stats.ReadTimeouts.Add(1)
			log.Warn("mllp: a frame was not finished within the read timeout; closing the connection", "read_timeout", s.o.ReadTimeout)
		} else {
			s.stats.IdleTimeouts.Add(1)
			log.Info("mllp: connection idle past the idle timeout; closing it", "idle_timeout", s.o.IdleTimeout)
		}
		return false
	case errors.As(err, &tooLarge):
		s.stats.TooLarge.Add(1)
		head := cr.take(tooLarge.Offset, true)
		log.Warn("mllp: a message over the size limit answered AR; skipping the rest of it", "limit", tooLarge.Limit)
		text := fmt.Sprintf("message too large: the limit is %d bytes", tooLarge.Limit)
		return s.reject(sv, log, head, text)
	case errors.As(err, &bad):
		s.stats.FramingErrors.Add(1)
		if errors.Is(err, io.ErrUnexpectedEOF) {
			log.Warn("mllp: the connection ended inside a frame", "error", err)
			return false
		}
		if len(bad.Sample) > 0 { // bytes outside any frame
			if !cr.startedBefore(bad.Offset) {
				log.Warn("mllp: the peer does not speak MLLP (bytes before the first frame); closing the connection", "error", err)
				return false
			}
			log.Warn("mllp: bytes between frames skipped", "error", err)
			return true
		}
		if cr.abandonedAt(bad.Offset) {
			cr.take(bad.Offset, false)
			log.Warn("mllp: a frame cut short by a new start block was dropped unanswered", "error", err)
			return true
		}
		head := cr.take(bad.Offset, false)
		log.Warn("mllp: a frame with a bad end block answered AR", "error", err)
		return s.reject(sv, log, head, "framing error: the end block 0x1C is not followed by 0x0D")
	default:
		log.Info("mllp: reading failed; closing the connection", "error", err)
		return false
	}
}

// reject writes an AR for a frame the reader dropped, built from what was
// kept of its start.
func (s *Server) reject(sv *served, log *slog.Logger, head []byte, text string) bool {
	if !sv.begin() {
		return false
	}
	defer sv.end()
	ack := hl7.BuildRejectACK(head, text, hl7.ACKOptions{}).Bytes()
	return s.write(sv, log, ack)
}

// Serve runs a Server with h and opts on ln until ctx ends, then drains it
// (see Server.Serve): the usual way to run a listener for the life of a
// context.
func Serve(ctx context.Context, ln net.Listener, h Handler, opts ServerOptions) error {
	s, err := NewServer(h, opts)
	if err != nil {
		_ = ln.Close()
		return err
	}
	return s.Serve(ctx, ln)
}
