package engine

import (
	"context"
	"errors"
	"fmt"
	"net"

	"github.com/ductus/ductus/integration/hl7"
	"github.com/ductus/ductus/integration/mllpnet"
)

// mllpSource is an interface's MLLP listener: each message is stored
// (persist before acknowledge) and then answered AA (CA in enhanced mode);
// AE (CE) when storing failed, so the sender retries; the original's ACK
// again for a duplicate. Frames that are not HL7 are answered AR by the
// server before they reach here.
type mllpSource struct {
	e   *Engine
	ir  *ifaceRuntime
	ln  net.Listener
	srv *mllpnet.Server
}

func (e *Engine) newMLLPSource(ir *ifaceRuntime) (source, error) {
	c := ir.cfg.Source.MLLP
	ln, err := net.Listen("tcp", c.Listen)
	if err != nil {
		return nil, fmt.Errorf("interface %s: mllp source: listen on %s: %w", ir.cfg.Name, c.Listen, err)
	}
	s := &mllpSource{e: e, ir: ir, ln: ln}
	s.srv, err = mllpnet.NewServer(mllpnet.HandlerFunc(s.handle), mllpnet.ServerOptions{
		MaxMessageBytes: int(c.MaxMessageBytes), IdleTimeout: c.IdleTimeout, ReadTimeout: c.ReadTimeout,
		Logger: e.log.With("interface", ir.cfg.Name, "source", "mllp"),
	})
	if err != nil {
		ln.Close()
		return nil, fmt.Errorf("interface %s: mllp source: %w", ir.cfg.Name, err)
	}
	return s, nil
}

func (s *mllpSource) name() string   { return "mllp " + s.ln.Addr().String() }
func (s *mllpSource) iface() string  { return s.ir.cfg.Name }
func (s *mllpSource) addr() string   { return s.ln.Addr().String() }
func (s *mllpSource) closeListener() { s.ln.Close() }

func (s *mllpSource) run(ctx context.Context) error {
	err := s.srv.Serve(ctx, s.ln)
	if ctx.Err() != nil {
		return nil
	}
	return err
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
		if errors.Is(err, ErrInterfaceStopped) {
			text = "the interface is stopped after repeated script failures; send it again later"
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
