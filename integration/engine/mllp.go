package engine

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strconv"
	"time"

	"github.com/ductus/ductus/actor"
	"github.com/ductus/ductus/integration/config"
	"github.com/ductus/ductus/integration/hl7"
	"github.com/ductus/ductus/integration/mllpnet"
	"github.com/ductus/ductus/runtime/host"
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

func (s *mllpSource) handle(ctx context.Context, conn mllpnet.ConnInfo, payload []byte) []byte {
	msg, err := hl7.Parse(payload)
	if err != nil { // the server answers non-HL7 itself; this is a safety net
		return hl7.BuildRejectACK(payload, "not an HL7 v2 message: "+err.Error(), hl7.ACKOptions{}).Bytes()
	}
	build := func(o hl7.Outcome, text string) ([]byte, error) {
		if !hl7.AckWanted(msg, o) {
			return nil, nil
		}
		ack, err := hl7.BuildACK(msg, hl7.CodeFor(msg, o), text, hl7.ACKOptions{})
		if err != nil {
			return nil, err
		}
		return ack.Bytes(), nil
	}
	stored, err := s.e.Intake(ctx, s.ir.cfg.Name, []Record{{
		Payload: payload,
		Meta:    map[string]any{"source": "mllp", "remote": conn.Remote.String(), "control_id": msg.ControlID()},
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

// mllpSender keeps connections to the destination (one by default, or
// the destination's connections) and waits for each message's ACK: AA (CA)
// is sent; AE (CE), a timeout or a broken connection is retried; AR (CR)
// is a refusal, quarantined. The destination's lanes share the
// connections; a lane sends one message at a time, so its order holds on
// whichever connection carries it.
type mllpSender struct {
	dest    *config.Destination
	clients []*mllpnet.Client
	free    chan *mllpnet.Client
}

func (e *Engine) newMLLPSender(d *config.Destination) (sender, error) {
	n := max(d.MLLP.Connections, 1)
	m := &mllpSender{dest: d, free: make(chan *mllpnet.Client, n)}
	for i := 0; i < n; i++ {
		c, err := mllpnet.NewClient(mllpnet.ClientOptions{
			Addr:          net.JoinHostPort(d.MLLP.Host, strconv.Itoa(d.MLLP.Port)),
			AckTimeout:    d.MLLP.AckTimeout,
			DialTimeout:   mllpDialTimeout,
			CloseAfterAck: !d.MLLP.KeepAlive,
			Logger:        e.log.With("interface", d.Interface, "destination", d.Name, "connection", i),
		})
		if err != nil {
			m.close()
			return nil, err
		}
		m.clients = append(m.clients, c)
		m.free <- c
	}
	return m, nil
}

// mllpDialTimeout bounds a connection attempt of an MLLP destination.
const mllpDialTimeout = 5 * time.Second

func (m *mllpSender) send(ctx context.Context, _ host.EffectContext, a sendArgs) error {
	// Waiting for a free connection must not eat into the exchange: an ACK
	// cut short by the attempt's deadline would drop a healthy connection
	// and resend. Wait only while a whole exchange still fits.
	wctx, cancel := waitContext(ctx, m.dest)
	defer cancel()
	var c *mllpnet.Client
	select {
	case c = <-m.free:
	case <-wctx.Done():
		if ctx.Err() != nil {
			return ctx.Err()
		}
		return fmt.Errorf("%w: all %d connection(s) to %s are busy", errWaiting, len(m.clients), m.addr())
	}
	defer func() { m.free <- c }()
	ack, err := c.Send(ctx, a.Output)
	switch mllpnet.OutcomeOf(ack, err) {
	case mllpnet.Sent:
		return nil
	case mllpnet.Reject:
		if err != nil {
			return actor.Permanent(err)
		}
		return actor.Permanent(fmt.Errorf("%s refused the message: %s %s", m.addr(), ack.Code, ack.Text))
	default:
		if err != nil {
			return err
		}
		return fmt.Errorf("%s answered %s %s", m.addr(), ack.Code, ack.Text)
	}
}

func (m *mllpSender) close() error {
	var errs []error
	for _, c := range m.clients {
		errs = append(errs, c.Close())
	}
	return errors.Join(errs...)
}

func (m *mllpSender) addr() string {
	return net.JoinHostPort(m.dest.MLLP.Host, strconv.Itoa(m.dest.MLLP.Port))
}
