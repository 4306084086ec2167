package mllp

import (
	"bytes"
	"errors"
	"io"
	"math/rand/v2"
	"net"
	"os"
	"testing"
	"time"

	"github.com/ductus/ductus/integration/hl7"
)

// pair returns the two ends of a real loopback TCP connection.
func pair(t *testing.T) (client, server *net.TCPConn) {
	t.Helper()
	ln, err := net.ListenTCP("tcp", &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	done := make(chan *net.TCPConn, 1)
	go func() {
		c, err := ln.AcceptTCP()
		if err != nil {
			done <- nil
			return
		}
		done <- c
	}()
	client, err = net.DialTCP("tcp", nil, ln.Addr().(*net.TCPAddr))
	if err != nil {
		t.Fatal(err)
	}
	server = <-done
	if server == nil {
		t.Fatal("accept failed")
	}
	_ = client.SetNoDelay(true) // small writes go out as separate segments
	t.Cleanup(func() { client.Close(); server.Close() })
	return client, server
}

func messages(t *testing.T, n int) [][]byte {
	t.Helper()
	g, err := hl7.NewGenerator(hl7.GeneratorOptions{Seed: 11, Patients: 10})
	if err != nil {
		t.Fatal(err)
	}
	out := make([][]byte, n)
	for i := range out {
		out[i] = g.Next().Bytes
	}
	return out
}

func frameOf(p []byte) []byte {
	var b bytes.Buffer
	_ = WriteFrame(&b, p)
	return b.Bytes()
}

// readN reads n frames on the server side.
func readN(t *testing.T, conn net.Conn, n, limit int) [][]byte {
	t.Helper()
	r := NewReader(conn, limit)
	_ = conn.SetReadDeadline(time.Now().Add(30 * time.Second))
	var got [][]byte
	for range n {
		f, err := r.ReadFrame()
		if err != nil {
			t.Fatalf("frame %d: %v", len(got)+1, err)
		}
		got = append(got, f)
	}
	return got
}

func TestTCPSplitWrites(t *testing.T) {
	client, server := pair(t)
	msgs := messages(t, 50)
	var stream []byte
	for _, m := range msgs {
		stream = append(stream, frameOf(m)...)
		stream = append(stream, '\n') // a trailing LF some senders add
	}
	go func() {
		rng := rand.New(rand.NewPCG(1, 2))
		for len(stream) > 0 {
			n := min(len(stream), 1+rng.IntN(300))
			if _, err := client.Write(stream[:n]); err != nil {
				return
			}
			stream = stream[n:]
		}
		client.CloseWrite()
	}()
	got := readN(t, server, len(msgs), 0)
	for i := range msgs {
		if !bytes.Equal(got[i], msgs[i]) {
			t.Fatalf("frame %d differs", i)
		}
	}
	if _, err := NewReader(server, 0).ReadFrame(); err != io.EOF {
		t.Errorf("after the last frame: %v", err)
	}
}

func TestTCPManyFramesInOneWrite(t *testing.T) {
	client, server := pair(t)
	msgs := messages(t, 300)
	var stream []byte
	for _, m := range msgs {
		stream = append(stream, frameOf(m)...)
	}
	go func() { _, _ = client.Write(stream) }()
	got := readN(t, server, len(msgs), 0)
	for i := range msgs {
		if !bytes.Equal(got[i], msgs[i]) {
			t.Fatalf("frame %d differs", i)
		}
	}
}

// The listener's answer to an oversized frame: AR, then close.
func TestTCPOversizedFrame(t *testing.T) {
	client, server := pair(t)
	huge := bytes.Repeat([]byte("OBX|1|ED|PDF||"), 1000)
	go func() {
		_, _ = client.Write(frameOf(huge))
		_, _ = client.Write(frameOf([]byte("MSH|^~\\&|A\r")))
	}()
	r := NewReader(server, 4096)
	_ = server.SetReadDeadline(time.Now().Add(30 * time.Second))
	_, err := r.ReadFrame()
	var tl *FrameTooLargeError
	if !errors.As(err, &tl) || tl.Limit != 4096 {
		t.Fatalf("want FrameTooLargeError, got %v", err)
	}
	ack := hl7.BuildRejectACK(huge, err.Error(), hl7.ACKOptions{})
	if err := WriteFrame(server, ack.Bytes()); err != nil {
		t.Fatal(err)
	}
	// Reading on skips the rest of the big frame and finds the next one.
	if f, err := r.ReadFrame(); err != nil || string(f) != "MSH|^~\\&|A\r" {
		t.Fatalf("next frame: %q %v", f, err)
	}
	server.Close()

	cr := NewReader(client, 0)
	_ = client.SetReadDeadline(time.Now().Add(30 * time.Second))
	f, err := cr.ReadFrame()
	if err != nil {
		t.Fatal(err)
	}
	code, _, text, err := hl7.ParseACK(f)
	if err != nil || code != "AR" || text == "" {
		t.Fatalf("ACK %q %q %v", code, text, err)
	}
	if _, err := cr.ReadFrame(); err != io.EOF {
		t.Errorf("after close: %v", err)
	}
}

// A deadline in the middle of a frame keeps the part read; after a new
// deadline the frame completes.
func TestTCPDeadlineMidFrame(t *testing.T) {
	client, server := pair(t)
	msg := messages(t, 1)[0]
	frame := frameOf(msg)
	half := len(frame) / 2
	if _, err := client.Write(frame[:half]); err != nil {
		t.Fatal(err)
	}
	r := NewReader(server, 0)
	_ = server.SetReadDeadline(time.Now().Add(50 * time.Millisecond))
	_, err := r.ReadFrame()
	if !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("want a deadline error, got %v", err)
	}
	var ne net.Error
	if !errors.As(err, &ne) || !ne.Timeout() {
		t.Errorf("the error should be a net.Error timeout: %v", err)
	}
	if !r.InFrame() {
		t.Error("not in a frame after half of one")
	}
	if _, err := client.Write(frame[half:]); err != nil {
		t.Fatal(err)
	}
	_ = server.SetReadDeadline(time.Now().Add(30 * time.Second))
	f, err := r.ReadFrame()
	if err != nil || !bytes.Equal(f, msg) {
		t.Fatalf("after the new deadline: %v", err)
	}
}

// A sender and receiver talking MLLP the way an interface does: one
// message, one ACK, on one kept-alive connection.
func TestTCPMessageAndACK(t *testing.T) {
	client, server := pair(t)
	msgs := messages(t, 100)
	errc := make(chan error, 1)
	go func() {
		r := NewReader(server, 0)
		for {
			f, err := r.ReadFrame()
			if err == io.EOF {
				errc <- nil
				return
			}
			if err != nil {
				errc <- err
				return
			}
			m, err := hl7.Parse(f)
			if err != nil {
				errc <- err
				return
			}
			ack, err := hl7.BuildACK(m, hl7.CodeFor(m, hl7.Accepted), "", hl7.ACKOptions{})
			if err == nil {
				err = WriteFrame(server, ack.Bytes())
			}
			if err != nil {
				errc <- err
				return
			}
		}
	}()
	cr := NewReader(client, 0)
	_ = client.SetDeadline(time.Now().Add(30 * time.Second))
	for i, m := range msgs {
		if err := WriteFrame(client, m); err != nil {
			t.Fatal(err)
		}
		f, err := cr.ReadFrame()
		if err != nil {
			t.Fatalf("ACK %d: %v", i, err)
		}
		code, id, _, err := hl7.ParseACK(f)
		want, _ := hl7.Parse(m)
		if err != nil || code != "AA" || id != want.ControlID() {
			t.Fatalf("ACK %d: %q %q %v", i, code, id, err)
		}
	}
	client.CloseWrite()
	if err := <-errc; err != nil {
		t.Fatal(err)
	}
}
