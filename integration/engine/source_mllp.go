package engine

import (
	"context"
	"errors"
	"fmt"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/ductus/ductus/integration/hl7"
	"github.com/ductus/ductus/integration/mllpnet"
)

// mllpSource is an interface's MLLP listener: each message is stored
// (persist before acknowledge) and then answered AA (CA in enhanced mode);
// AE (CE) when storing failed, so the sender retries; the original's ACK
// again for a duplicate. Frames that are not HL7 are answered AR by the
// server before they reach here.
//
// A drain closes its gate: the server shuts down (the listener closes,
// what is in flight is answered) and a new one listens on the same address
// when the gate opens again (drain.go).
type mllpSource struct {
	e  *Engine
	ir *ifaceRuntime

	mu  sync.Mutex
	ln  net.Listener
	srv *mllpnet.Server
	// gated: the server was shut down by a drain (not by a failure), so
	// run listens again once the gate opens, however soon that is.
	gated atomic.Bool
}

func (e *Engine) newMLLPSource(ir *ifaceRuntime) (source, error) {
	s := &mllpSource{e: e, ir: ir}
	if err := s.listen(ir.cfg.Source.MLLP.Listen); err != nil {
		return nil, err
	}
	return s, nil
}

// listen binds addr and makes the server that will serve it.
func (s *mllpSource) listen(addr string) error {
	c := s.ir.cfg.Source.MLLP
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return fmt.Errorf("interface %s: mllp source: listen on %s: %w", s.ir.cfg.Name, addr, err)
	}
	srv, err := mllpnet.NewServer(mllpnet.HandlerFunc(s.handle), mllpnet.ServerOptions{
		MaxMessageBytes: int(c.MaxMessageBytes), IdleTimeout: c.IdleTimeout, ReadTimeout: c.ReadTimeout,
		Logger: s.e.log.With("interface", s.ir.cfg.Name, "source", "mllp"),
	})
	if err != nil {
		ln.Close()
		return fmt.Errorf("interface %s: mllp source: %w", s.ir.cfg.Name, err)
	}
	s.mu.Lock()
	s.ln, s.srv = ln, srv
	s.mu.Unlock()
	return nil
}

func (s *mllpSource) current() (net.Listener, *mllpnet.Server) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.ln, s.srv
}

func (s *mllpSource) name() string   { return "mllp " + s.addr() }
func (s *mllpSource) iface() string  { return s.ir.cfg.Name }
func (s *mllpSource) addr() string   { ln, _ := s.current(); return ln.Addr().String() }
func (s *mllpSource) closeListener() { ln, _ := s.current(); ln.Close() }

// closeGate shuts the server down for a drain: the listener closes at
// once, messages in flight are answered.
func (s *mllpSource) closeGate() {
	_, srv := s.current()
	s.gated.Store(true)
	// The listener is closed when the drain's call returns; the messages
	// in flight are answered after.
	srv.StopAccepting()
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if err := srv.Shutdown(ctx); err != nil {
			s.e.log.Warn("draining: the MLLP source did not finish its messages in time", "interface", s.ir.cfg.Name, "err", err)
		}
	}()
}

func (s *mllpSource) run(ctx context.Context) error {
	for {
		ln, srv := s.current()
		err := srv.Serve(ctx, ln)
		if ctx.Err() != nil {
			return nil
		}
		if !errors.Is(err, mllpnet.ErrServerClosed) || !s.gated.Swap(false) {
			return err
		}
		// Closed for a drain: listen again, on the address it had, once
		// the gate opens.
		if s.e.drain.waitOpen(ctx) != nil {
			return nil
		}
		if err := s.listen(ln.Addr().String()); err != nil {
			return err
		}
		s.e.log.Info("drain cancelled: the MLLP source listens again", "interface", s.ir.cfg.Name, "addr", s.addr())
	}
}

func (s *mllpSource) handle(ctx context.Context, conn mllpnet.ConnInfo, payload []byte, msg *hl7.Message) []byte {
	// Decode first: a message whose bytes are not text in its character set
	// would be stored altered (or quarantined later, after an AA), so it is
	// refused here, before anything is written, with a reason the sender's
	// operator can act on.
	in, err := decodeIn(s.ir.cfg, payload, nil)
	if err != nil {
		reason := "the message's characters cannot be read: " + err.Error()
		s.e.log.Warn("mllp source: refused a message that does not decode; answered AR",
			"interface", s.ir.cfg.Name, "remote", conn.Remote.String(), "reason", err.Error())
		return hl7.BuildRejectACK(payload, reason, hl7.ACKOptions{}).Bytes()
	}
	// The server's parse of the raw bytes serves unless decoding changed
	// them (a non-ASCII message in a set other than UTF-8).
	if !undecoded(in.text, payload) {
		if msg, err = hl7.Parse(in.text); err != nil { // the server answered non-HL7 itself; a safety net
			return hl7.BuildRejectACK(payload, "not an HL7 v2 message: "+err.Error(), hl7.ACKOptions{}).Bytes()
		}
	}
	build := func(o hl7.Outcome, text string) ([]byte, error) {
		if !hl7.AckWanted(msg, o) {
			return nil, nil
		}
		ack, err := hl7.BuildACK(msg, hl7.CodeFor(msg, o), text, hl7.ACKOptions{})
		if err != nil {
			return nil, err
		}
		// The ACK echoes the message's MSH fields: send it in the set
		// the message came in. Should a character not fit (it came from
		// that very set, so it cannot), UTF-8 is better than no ACK.
		if b, err := in.cs.Encode(ack.Bytes()); err == nil {
			return b, nil
		}
		return ack.Bytes(), nil
	}
	meta := map[string]any{"source": "mllp", "remote": conn.Remote.String(), "control_id": msg.ControlID()}
	stored, err := s.e.Intake(ctx, s.ir.cfg.Name, []Record{{
		Payload: in.text,
		Parsed:  msg, // the parse of in.text: the keys are read from it
		Meta:    withCharset(meta, in.cs),
		ACK:     func(string) ([]byte, error) { return build(hl7.Accepted, "") },
	}}, nil)
	if err != nil {
		text := "the message could not be stored; send it again"
		switch {
		case errors.Is(err, ErrInterfaceStopped):
			text = "the interface is stopped after repeated script failures; send it again later"
		case errors.Is(err, ErrDraining):
			text = "the engine is draining; send it again later"
		}
		s.e.log.Warn("mllp source: storing failed; answered AE", "interface", s.ir.cfg.Name, "control_id", msg.ControlID(), "err", err)
		ack, berr := build(hl7.Errored, text)
		if berr != nil {
			return nil
		}
		return ack
	}
	st := stored[0]
	if len(st.ACK) > 0 {
		return st.ACK // the ACK stored with the message (for a duplicate, the original's)
	}
	ack, err := build(hl7.Accepted, "")
	if err != nil {
		return nil
	}
	return ack
}
