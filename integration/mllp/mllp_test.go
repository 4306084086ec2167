package mllp

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"strings"
	"testing"
	"testing/iotest"
)

// result is one ReadFrame answer in a readable form: the payload, or the
// kind of error.
func result(frame []byte, err error) string {
	var fe *FramingError
	var tl *FrameTooLargeError
	switch {
	case err == nil:
		return "frame:" + string(frame)
	case err == io.EOF:
		return "EOF"
	case errors.As(err, &tl):
		return fmt.Sprintf("too large@%d", tl.Offset)
	case errors.As(err, &fe) && errors.Is(err, io.ErrUnexpectedEOF):
		return "unexpected EOF"
	case errors.As(err, &fe):
		return fmt.Sprintf("framing@%d", fe.Offset)
	}
	return "error:" + err.Error()
}

// readAll reads until io.EOF (or a read error), at most limit answers.
func readAll(t *testing.T, r *Reader, limit int) []string {
	t.Helper()
	var out []string
	for range limit {
		frame, err := r.ReadFrame()
		out = append(out, result(frame, err))
		if err == io.EOF {
			return out
		}
		if err != nil && !errors.Is(err, ErrFraming) {
			return out
		}
	}
	t.Fatalf("no EOF after %d reads: %v", limit, out)
	return nil
}

func chunked(data []byte, size int) io.Reader {
	var rs []io.Reader
	for len(data) > 0 {
		n := min(size, len(data))
		rs = append(rs, bytes.NewReader(data[:n]))
		data = data[n:]
	}
	return &oneAtATime{rs: rs}
}

// oneAtATime returns each part in its own Read, as a socket delivering
// separate segments would.
type oneAtATime struct{ rs []io.Reader }

func (o *oneAtATime) Read(p []byte) (int, error) {
	for len(o.rs) > 0 {
		n, err := o.rs[0].Read(p)
		if err == io.EOF {
			o.rs = o.rs[1:]
			if n == 0 {
				continue
			}
			err = nil
		}
		return n, err
	}
	return 0, io.EOF
}

func TestReader(t *testing.T) {
	big := strings.Repeat("x", 40)
	tests := []struct {
		name   string
		stream string
		want   []string
	}{
		{"one frame", "\x0bMSH|a\r\x1c\r", []string{"frame:MSH|a\r", "EOF"}},
		{"several frames", "\x0bA\x1c\r\x0bB\x1c\r\x0bC\x1c\r", []string{"frame:A", "frame:B", "frame:C", "EOF"}},
		{"empty stream", "", []string{"EOF"}},
		{"empty frame", "\x0b\x1c\r", []string{"frame:", "EOF"}},
		{"whitespace between frames", "\r\n \x0bA\x1c\r\n\t\x0bB\x1c\r\r\n", []string{"frame:A", "frame:B", "EOF"}},
		{"junk before a frame", "GET / HTTP/1.1\r\n\x0bA\x1c\r", []string{"framing@0", "frame:A", "EOF"}},
		{"junk between frames", "\x0bA\x1c\rzz\x0bB\x1c\r", []string{"frame:A", "framing@4", "frame:B", "EOF"}},
		{"junk at the end", "\x0bA\x1c\rjunk", []string{"frame:A", "framing@4", "EOF"}},
		{"end block without CR", "\x0bA\x1cX\x0bB\x1c\r", []string{"framing@3", "framing@3", "frame:B", "EOF"}},
		{"end block then start", "\x0bA\x1c\x0bB\x1c\r", []string{"framing@3", "frame:B", "EOF"}},
		{"start inside a frame", "\x0bA\x0bB\x1c\r", []string{"framing@2", "frame:B", "EOF"}},
		{"EOF inside a frame", "\x0bMSH|", []string{"unexpected EOF", "EOF"}},
		{"EOF after end block", "\x0bA\x1c", []string{"unexpected EOF", "EOF"}},
		{"oversized frame", "\x0b" + big + "\x1c\r\x0bok\x1c\r", []string{"too large@0", "frame:ok", "EOF"}},
		{"oversized frame cut by a start", "\x0b" + big + "\x0bok\x1c\r", []string{"too large@0", "frame:ok", "EOF"}},
		{"exactly the limit", "\x0b" + big[:32] + "\x1c\r", []string{"frame:" + big[:32], "EOF"}},
		{"one over the limit", "\x0b" + big[:33] + "\x1c\r", []string{"too large@0", "EOF"}},
		{"oversized frame at EOF", "\x0b" + big, []string{"too large@0", "unexpected EOF", "EOF"}},
		{"binary payload", "\x0b\x00\xff\r\n\x1c\r", []string{"frame:\x00\xff\r\n", "EOF"}},
	}
	for _, tt := range tests {
		for _, size := range []int{1, 2, 3, 7, 1 << 20} {
			t.Run(fmt.Sprintf("%s/%d", tt.name, size), func(t *testing.T) {
				got := readAll(t, NewReader(chunked([]byte(tt.stream), size), 32), 20)
				if strings.Join(got, " | ") != strings.Join(tt.want, " | ") {
					t.Errorf("got  %q\nwant %q", got, tt.want)
				}
			})
		}
	}
}

func TestReaderErrorText(t *testing.T) {
	r := NewReader(strings.NewReader("HELLO\x0b"+strings.Repeat("y", 10)+"\x1c\r\x0bA\x1cB"), 5)
	_, err := r.ReadFrame()
	if err == nil || err.Error() != `mllp: byte 0: bytes outside a frame (a frame starts with 0x0B) ("HELLO")` {
		t.Errorf("junk: %v", err)
	}
	_, err = r.ReadFrame()
	if err == nil || err.Error() != "mllp: the frame starting at byte 5 is larger than the limit of 5 bytes" || !errors.Is(err, ErrFraming) {
		t.Errorf("too large: %v", err)
	}
	_, err = r.ReadFrame()
	if err == nil || !strings.Contains(err.Error(), "followed by 0x42, not 0x0D") {
		t.Errorf("bad end: %v", err)
	}
}

func TestReaderPassesReadErrors(t *testing.T) {
	boom := errors.New("boom")
	r := NewReader(iotest.DataErrReader(io.MultiReader(strings.NewReader("\x0bAB\x1c\r\x0bC"), iotest.ErrReader(boom))), 0)
	if f, err := r.ReadFrame(); err != nil || string(f) != "AB" {
		t.Fatalf("%q %v", f, err)
	}
	if _, err := r.ReadFrame(); !errors.Is(err, boom) || !strings.HasPrefix(err.Error(), "mllp: read: ") {
		t.Fatalf("want boom, got %v", err)
	}
	if !r.InFrame() {
		t.Error("the partial frame C should still be in progress")
	}
}

// An underlying reader that times out must not lose the partial frame:
// reading again after the error carries on.
func TestReaderResumesAfterTimeout(t *testing.T) {
	r := NewReader(&script{steps: []any{"\x0bAB", iotest.ErrTimeout, "C\x1c", iotest.ErrTimeout, "\r"}}, 0)
	if r.InFrame() {
		t.Error("in a frame before reading")
	}
	for i := range 2 {
		if _, err := r.ReadFrame(); !errors.Is(err, iotest.ErrTimeout) {
			t.Fatalf("read %d: want a timeout, got %v", i, err)
		}
		if !r.InFrame() {
			t.Errorf("read %d: not in a frame after a partial one", i)
		}
	}
	if f, err := r.ReadFrame(); err != nil || string(f) != "ABC" {
		t.Fatalf("got %q %v", f, err)
	}
	if r.InFrame() {
		t.Error("in a frame after the frame")
	}
	if _, err := r.ReadFrame(); err != io.EOF {
		t.Fatalf("want EOF, got %v", err)
	}
}

// script answers each Read with its next step: a string of data or an error.
type script struct{ steps []any }

func (s *script) Read(p []byte) (int, error) {
	if len(s.steps) == 0 {
		return 0, io.EOF
	}
	step := s.steps[0]
	s.steps = s.steps[1:]
	if err, ok := step.(error); ok {
		return 0, err
	}
	return copy(p, step.(string)), nil
}

func TestReaderZeroReads(t *testing.T) {
	r := NewReader(zeroReader{}, 0)
	if _, err := r.ReadFrame(); !errors.Is(err, io.ErrNoProgress) {
		t.Fatalf("got %v", err)
	}
}

type zeroReader struct{}

func (zeroReader) Read([]byte) (int, error) { return 0, nil }

func TestWriteFrame(t *testing.T) {
	var b bytes.Buffer
	if err := WriteFrame(&b, []byte("MSH|x\r")); err != nil {
		t.Fatal(err)
	}
	if err := WriteFrame(&b, nil); err != nil {
		t.Fatal(err)
	}
	if b.String() != "\x0bMSH|x\r\x1c\r\x0b\x1c\r" {
		t.Errorf("wrote %q", b.String())
	}
	for _, bad := range []string{"a\x1cb", "\x0b"} {
		if err := WriteFrame(&b, []byte(bad)); !errors.Is(err, ErrPayload) {
			t.Errorf("payload %q: %v", bad, err)
		}
	}
	if err := WriteFrame(errWriter{}, []byte("x")); err == nil || !strings.Contains(err.Error(), "mllp: write") {
		t.Errorf("write error: %v", err)
	}
}

type errWriter struct{}

func (errWriter) Write([]byte) (int, error) { return 0, errors.New("closed") }
