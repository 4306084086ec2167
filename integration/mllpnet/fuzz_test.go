package mllpnet

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/ductus/ductus/integration/hl7"
	"github.com/ductus/ductus/integration/mllp"
)

// pipeListener hands out one end of in-memory connections: the fuzzer
// runs thousands of connections, which loopback TCP would make slow.
type pipeListener struct {
	conns chan net.Conn
	once  sync.Once
	done  chan struct{}
}

func newPipeListener() *pipeListener {
	return &pipeListener{conns: make(chan net.Conn), done: make(chan struct{})}
}

func (l *pipeListener) Accept() (net.Conn, error) {
	select {
	case c := <-l.conns:
		return c, nil
	case <-l.done:
		return nil, net.ErrClosed
	}
}

func (l *pipeListener) Close() error { l.once.Do(func() { close(l.done) }); return nil }

func (l *pipeListener) Addr() net.Addr { return &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1)} }

func (l *pipeListener) dial() net.Conn {
	a, b := net.Pipe()
	l.conns <- b
	return a
}

// FuzzServeConn feeds arbitrary bytes to a served connection: no panic,
// no hang, and every reply is an acknowledgement.
func FuzzServeConn(f *testing.F) {
	msg := []byte("MSH|^~\\&|A|B|C|D|20260105||ADT^A01|X1|P|2.5\rPID|1||123\r")
	f.Add(frame(msg))
	f.Add(append(frame(msg), frame(msg)...))
	f.Add([]byte("\x0bMSH|^~\\&|A|B|C|D|20260105||ADT^A01|X2|P|2.5\x1cX\x0bhello\x1c\x0d"))
	f.Add(append([]byte("\x0bMSH|^~\\&|A"), frame(msg)...))
	f.Add([]byte("GET / HTTP/1.1\r\n\r\n"))
	f.Add(append(frame(msg), []byte("junk\x0b\x1c\x0d")...))
	f.Add(frame(bytes.Repeat([]byte("MSH|^~\\&|"), 100)))

	f.Fuzz(func(t *testing.T, input []byte) {
		ln := newPipeListener()
		srv, err := NewServer(HandlerFunc(ackAA), ServerOptions{MaxMessageBytes: 512, ReadTimeout: 2 * time.Second, IdleTimeout: 2 * time.Second})
		if err != nil {
			t.Fatal(err)
		}
		served := make(chan error, 1)
		go func() { served <- srv.Serve(context.Background(), ln) }()
		conn := ln.dial()
		replies := make(chan error, 1)
		go func() {
			r := mllp.NewReader(conn, 0)
			for {
				f, err := r.ReadFrame()
				if err != nil {
					if errors.Is(err, io.EOF) || errors.Is(err, io.ErrClosedPipe) {
						err = nil
					}
					replies <- err
					return
				}
				if _, _, _, err := hl7.ParseACK(f); err != nil {
					replies <- err
					return
				}
			}
		}()
		_ = conn.SetWriteDeadline(time.Now().Add(5 * time.Second))
		_, _ = conn.Write(input)
		_ = conn.SetWriteDeadline(time.Time{})
		// Half of a pipe cannot be closed: close all once the server had a
		// moment to answer what it read.
		time.Sleep(time.Millisecond)
		_ = conn.Close()
		select {
		case err := <-replies:
			if err != nil {
				t.Fatalf("a reply: %v", err)
			}
		case <-time.After(10 * time.Second):
			t.Fatal("the replies did not end")
		}
		_ = srv.Close()
		select {
		case <-served:
		case <-time.After(10 * time.Second):
			t.Fatal("Serve did not return: a connection hangs")
		}
	})
}

// FuzzAckCode: no panic, and only a real code comes out.
func FuzzAckCode(f *testing.F) {
	f.Add([]byte("MSH|^~\\&|A\rMSA|AA|X"))
	f.Add([]byte("MSH#^~\\&#A\nMSA#ce^x#X"))
	f.Add([]byte("MSH|"))
	f.Fuzz(func(t *testing.T, in []byte) {
		switch c := AckCode(in); c {
		case "", "AA", "AE", "AR", "CA", "CE", "CR":
		default:
			t.Fatalf("AckCode(%q) = %q", in, c)
		}
	})
}
