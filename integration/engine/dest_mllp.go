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
	"github.com/ductus/ductus/integration/mllpnet"
	"github.com/ductus/ductus/runtime/host"
)

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
	if be := (*mllpnet.BackoffError)(nil); errors.As(err, &be) {
		// The connection waits to dial again and nothing was tried: no
		// attempt used up (max_attempts counts sends and dials that fail,
		// not the wait between them); back when the dial is due.
		return &waitError{after: be.Wait, why: err.Error()}
	}
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
