package engine

import (
	"context"
	"errors"
	"net"
	"strconv"
	"testing"
	"time"

	"github.com/ductus/ductus/integration/config"
	"github.com/ductus/ductus/integration/mllpnet"
	"github.com/ductus/ductus/internal/testutil"
	"github.com/ductus/ductus/runtime/host"
)

// A connection waiting out its reconnect back-off past the attempt's
// deadline tries nothing: the send is a wait (given back without using
// up an attempt, due again when the dial is), not a failure. Only a dial
// that fails counts; otherwise a long back-off (it doubles up to a
// minute) would burn max_attempts without ever reaching the receiver.
func TestMLLPSenderBackoffIsAWait(t *testing.T) {
	addr := testutil.FreePort(t) // nothing listens
	peerHost, portStr, _ := net.SplitHostPort(addr)
	port, _ := strconv.Atoi(portStr)
	c, err := mllpnet.NewClient(mllpnet.ClientOptions{Addr: addr, DialTimeout: time.Second, AckTimeout: time.Second,
		BackoffMin: time.Minute, BackoffMax: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	m := &mllpSender{dest: &config.Destination{MLLP: &config.MLLPDestination{Host: peerHost, Port: port, AckTimeout: time.Second}},
		clients: []*mllpnet.Client{c}, free: make(chan *mllpnet.Client, 1)}
	m.free <- c
	msg := sendArgs{Output: hl7With("W1", "MRN1", "")}

	err = m.send(context.Background(), host.EffectContext{}, msg)
	if !errors.Is(err, mllpnet.ErrDial) || errors.Is(err, errWaiting) {
		t.Fatalf("the first send: %v, want a failed dial (an attempt)", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	err = m.send(ctx, host.EffectContext{}, msg)
	var we *waitError
	if !errors.Is(err, errWaiting) || !errors.As(err, &we) || we.after < 50*time.Second || we.after > time.Minute {
		t.Fatalf("the second send, a minute before the next dial: %v, want a wait of about a minute", err)
	}
}
