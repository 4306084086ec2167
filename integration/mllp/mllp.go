// Package mllp reads and writes the Minimal Lower Layer Protocol framing
// that carries HL7 v2 over TCP: each message is sent as 0x0B, the payload,
// then 0x1C 0x0D.
//
// TCP delivers a byte stream, not messages, so a frame may arrive split
// across many reads and several frames may arrive in one. Reader
// reassembles them with a small buffer of its own and no goroutines; the
// listener and client that use it set deadlines on the net.Conn and decide
// what an error means for the connection.
//
// What Reader accepts, and why:
//   - Between frames, CR, LF, space and tab are skipped silently: some
//     senders end a frame with 0x1C 0x0D 0x0A, or send line ends as
//     keep-alives.
//   - Any other byte between frames is an error (*FramingError, once per
//     run of such bytes), not skipped in silence: a peer that sends it is
//     usually not speaking MLLP at all (an HTTP request, a TLS hello on a
//     plain port), and the log line should say so. Reading again skips on
//     to the next start block, so a caller can choose to carry on.
//   - Inside a frame, 0x1C must be followed by 0x0D, and 0x0B may not
//     appear; either is a *FramingError and the partial frame is dropped
//     (a new 0x0B begins the next frame).
//   - A frame longer than the maximum is a *FrameTooLargeError as soon as
//     the limit is passed; the rest of that frame is skipped by the next
//     read, so the connection stays usable. The listener in package
//     mllpnet answers such a frame with AR and keeps the connection open
//     (its package doc says why closing would be worse).
package mllp

import (
	"errors"
	"fmt"
	"io"
)

// The framing bytes.
const (
	StartBlock     byte = 0x0B
	EndBlock       byte = 0x1C
	CarriageReturn byte = 0x0D
)

// DefaultMaxFrame is the frame size limit NewReader uses for a limit of 0:
// large enough for an ORU carrying an encoded PDF report.
const DefaultMaxFrame = 16 << 20

// ErrFraming is matched (errors.Is) by every *FramingError and
// *FrameTooLargeError.
var ErrFraming = errors.New("mllp: framing error")

// FramingError says what in the byte stream broke the framing rules.
type FramingError struct {
	// Offset is the position in the stream (bytes read since NewReader)
	// where the problem was found.
	Offset int64
	Reason string
	// Sample holds up to 16 of the offending bytes, for the log.
	Sample []byte
	// Err is io.ErrUnexpectedEOF when the stream ended inside a frame.
	Err error
}

func (e *FramingError) Error() string {
	s := fmt.Sprintf("mllp: byte %d: %s", e.Offset, e.Reason)
	if len(e.Sample) > 0 {
		s += fmt.Sprintf(" (%q)", e.Sample)
	}
	return s
}

// Unwrap returns io.ErrUnexpectedEOF for a stream that ended inside a frame.
func (e *FramingError) Unwrap() error { return e.Err }

// Is makes errors.Is(err, ErrFraming) true.
func (e *FramingError) Is(target error) bool { return target == ErrFraming }

// FrameTooLargeError is returned when a frame's payload passes the limit.
type FrameTooLargeError struct {
	Limit  int
	Offset int64 // where the frame started
}

func (e *FrameTooLargeError) Error() string {
	return fmt.Sprintf("mllp: the frame starting at byte %d is larger than the limit of %d bytes", e.Offset, e.Limit)
}

// Is makes errors.Is(err, ErrFraming) true.
func (e *FrameTooLargeError) Is(target error) bool { return target == ErrFraming }

type state int

const (
	outside    state = iota // between frames
	junk                    // between frames, in bytes already reported
	inside                  // in a frame's payload
	insideEnd               // in a frame, 0x1C seen
	discard                 // in an oversized frame
	discardEnd              // in an oversized frame, 0x1C seen
)

// Reader reads MLLP frames from a byte stream. It is not safe for
// concurrent use.
type Reader struct {
	r      io.Reader
	buf    []byte
	pos    int // buf[pos:n] is unread
	n      int
	off    int64 // stream offset of buf[pos]
	max    int
	st     state
	frame  []byte
	begin  int64 // stream offset of the current frame's start block
	err    error // from r, returned once the buffer is empty
	zeroes int
}

// NewReader returns a Reader over r whose frames may hold at most
// maxFrame payload bytes (0 means DefaultMaxFrame).
func NewReader(r io.Reader, maxFrame int) *Reader {
	if maxFrame <= 0 {
		maxFrame = DefaultMaxFrame
	}
	return &Reader{r: r, buf: make([]byte, 16<<10), max: maxFrame}
}

// InFrame reports whether the reader has consumed part of a frame, so that
// a caller can tell an idle connection (false) from a sender stalled in the
// middle of a message (true).
func (r *Reader) InFrame() bool { return r.st != outside && r.st != junk }

// ReadFrame returns the next frame's payload, without the framing bytes;
// the slice belongs to the caller. At the end of the stream between frames
// it returns io.EOF. An error from the underlying reader (such as a
// deadline) is returned wrapped and leaves the reader as it was, so after
// a timeout the caller may extend the deadline and read again.
func (r *Reader) ReadFrame() ([]byte, error) {
	for {
		if r.pos == r.n {
			if err := r.fill(); err != nil {
				return nil, err
			}
			continue
		}
		frame, done, err := r.step()
		if done {
			return frame, err
		}
	}
}

func (r *Reader) fill() error {
	if r.err != nil {
		err := r.err
		if err != io.EOF {
			r.err = nil
			return fmt.Errorf("mllp: read: %w", err)
		}
		switch r.st {
		case inside, insideEnd, discard, discardEnd:
			got := len(r.frame)
			r.st, r.frame = outside, nil
			return &FramingError{Offset: r.off, Reason: fmt.Sprintf("the stream ended inside the frame that started at byte %d (%d bytes of it read)", r.begin, got), Err: io.ErrUnexpectedEOF}
		}
		return io.EOF
	}
	n, err := r.r.Read(r.buf)
	if n < 0 || n > len(r.buf) {
		return fmt.Errorf("mllp: read: the reader returned %d bytes for a buffer of %d", n, len(r.buf))
	}
	r.pos, r.n = 0, n
	r.err = err
	if n == 0 && err == nil {
		if r.zeroes++; r.zeroes > 100 {
			r.zeroes = 0
			return fmt.Errorf("mllp: read: %w", io.ErrNoProgress)
		}
	} else {
		r.zeroes = 0
	}
	return nil
}

// advance consumes k buffered bytes.
func (r *Reader) advance(k int) {
	r.pos += k
	r.off += int64(k)
}

// step handles the buffered bytes (at least one) in the current state; done
// says whether ReadFrame should return frame and err.
func (r *Reader) step() (frame []byte, done bool, err error) {
	data := r.buf[r.pos:r.n]
	switch r.st {
	case outside, junk:
		for i, c := range data {
			switch {
			case c == StartBlock:
				r.advance(i + 1)
				r.st, r.frame, r.begin = inside, nil, r.off-1
				return nil, false, nil
			case c == '\r' || c == '\n' || c == ' ' || c == '\t':
			case r.st == outside:
				at := r.off + int64(i)
				k := i
				for k < len(data) && data[k] != StartBlock {
					k++
				}
				sample := append([]byte(nil), data[i:min(k, i+16)]...)
				r.advance(k)
				r.st = junk
				return nil, true, &FramingError{Offset: at, Reason: "bytes outside a frame (a frame starts with 0x0B)", Sample: sample}
			}
		}
		r.advance(len(data))
		return nil, false, nil

	case inside, discard:
		for i, c := range data {
			if c != StartBlock && c != EndBlock {
				continue
			}
			if r.st == inside && !r.appendPayload(data[:i]) {
				r.advance(i)
				return nil, true, r.tooLarge()
			}
			if c == EndBlock {
				r.advance(i + 1)
				if r.st == inside {
					r.st = insideEnd
				} else {
					r.st = discardEnd
				}
				return nil, false, nil
			}
			// A start block inside a frame: the sender gave up on this
			// frame and started another, or the stream is corrupt.
			r.advance(i)
			was := r.st
			r.st, r.frame = outside, nil
			if was == discard {
				return nil, false, nil // the oversized frame was reported already
			}
			return nil, true, &FramingError{Offset: r.off, Reason: fmt.Sprintf("a start block (0x0B) inside the frame that started at byte %d; that frame is dropped", r.begin)}
		}
		if r.st == inside && !r.appendPayload(data) {
			r.advance(len(data))
			return nil, true, r.tooLarge()
		}
		r.advance(len(data))
		return nil, false, nil

	default: // insideEnd, discardEnd
		c := data[0]
		was := r.st
		r.st = outside
		if c == CarriageReturn {
			r.advance(1)
			if was == discardEnd {
				return nil, false, nil
			}
			frame, r.frame = r.frame, nil
			if frame == nil {
				frame = []byte{}
			}
			return frame, true, nil
		}
		r.frame = nil
		if was == discardEnd {
			return nil, false, nil
		}
		// The byte after 0x1C is left for the outside state: a 0x0B there
		// still starts the next frame.
		return nil, true, &FramingError{Offset: r.off, Reason: fmt.Sprintf("the end block 0x1C of the frame that started at byte %d is followed by 0x%02X, not 0x0D; that frame is dropped", r.begin, c)}
	}
}

// appendPayload adds p to the frame, or reports false past the limit.
func (r *Reader) appendPayload(p []byte) bool {
	if len(r.frame)+len(p) > r.max {
		return false
	}
	r.frame = append(r.frame, p...)
	return true
}

func (r *Reader) tooLarge() error {
	r.st, r.frame = discard, nil
	return &FrameTooLargeError{Limit: r.max, Offset: r.begin}
}

// ErrPayload is returned by WriteFrame for a payload holding a framing
// byte, which the receiver would read as the end of the frame.
var ErrPayload = errors.New("mllp: the payload contains a framing byte (0x0B or 0x1C)")

// WriteFrame writes payload as one frame in a single Write call.
func WriteFrame(w io.Writer, payload []byte) error {
	for i, c := range payload {
		if c == StartBlock || c == EndBlock {
			return fmt.Errorf("%w at byte %d", ErrPayload, i)
		}
	}
	buf := make([]byte, 0, len(payload)+3)
	buf = append(buf, StartBlock)
	buf = append(buf, payload...)
	buf = append(buf, EndBlock, CarriageReturn)
	if _, err := w.Write(buf); err != nil {
		return fmt.Errorf("mllp: write: %w", err)
	}
	return nil
}
