package mllp

import (
	"bytes"
	"io"
	"strings"
	"testing"
)

// FuzzReader checks that no byte stream makes the reader panic or hang,
// that the answers do not depend on how the stream is cut into reads, and
// that frames written are the frames read back.
func FuzzReader(f *testing.F) {
	f.Add([]byte("\x0bMSH|^~\\&|A\r\x1c\r\x0bB\x1c\r"), uint8(1))
	f.Add([]byte("junk\x0bA\x1cX\x0bB\x0bC\x1c\r\n"), uint8(3))
	f.Add([]byte("\x0b"+strings.Repeat("z", 70)+"\x1c\r\x0b"), uint8(0))
	f.Add([]byte("\x1c\r\x0b\x1c\r\r\n \t"), uint8(200))
	f.Fuzz(func(t *testing.T, data []byte, cut uint8) {
		const limit = 64
		whole := readAll(t, NewReader(bytes.NewReader(data), limit), len(data)+2)
		pieces := readAll(t, NewReader(chunked(data, 1+int(cut)%17), limit), len(data)+2)
		if strings.Join(whole, "\x00") != strings.Join(pieces, "\x00") {
			t.Fatalf("answers depend on the reads:\n%q\n%q", whole, pieces)
		}
		for _, r := range whole {
			if strings.HasPrefix(r, "frame:") && len(r)-len("frame:") > limit {
				t.Fatalf("a frame over the limit: %d bytes", len(r)-6)
			}
		}

		// Frames written are frames read: the input cut at 0xFF into
		// payloads (framing bytes taken out), with whitespace between.
		var payloads [][]byte
		var stream bytes.Buffer
		for i, p := range bytes.Split(data, []byte{0xff}) {
			clean := make([]byte, 0, len(p))
			for _, c := range p {
				if c != StartBlock && c != EndBlock {
					clean = append(clean, c)
				}
			}
			p = clean
			if i%2 == 1 {
				stream.WriteString("\r\n")
			}
			if err := WriteFrame(&stream, p); err != nil {
				t.Fatal(err)
			}
			payloads = append(payloads, p)
		}
		r := NewReader(chunked(stream.Bytes(), 1+int(cut)%5), 0)
		for i, want := range payloads {
			got, err := r.ReadFrame()
			if err != nil || !bytes.Equal(got, want) {
				t.Fatalf("frame %d: got %q (%v), want %q", i, got, err, want)
			}
		}
		if _, err := r.ReadFrame(); err != io.EOF {
			t.Fatalf("after the frames: %v", err)
		}
	})
}
