package mllpnet

import (
	"bytes"
	"errors"
	"net"
	"sync"
	"time"

	"github.com/ductus/ductus/integration/mllp"
)

// errClosing is what a served connection's reads return once the server
// is stopping: the goroutine then ends quietly.
var errClosing = errors.New("mllpnet: the server is stopping")

// served is one connection's shared state: the serving goroutine and a
// stopping server both touch it under mu.
type served struct {
	conn net.Conn
	info ConnInfo

	mu      sync.Mutex
	closing bool // the server is stopping: start no new handler
	busy    bool // a handler is running or its ACK is being written
}

// setReadDeadline arms the next read, or reports false when the server is
// stopping. Checking closing under the same lock that Shutdown takes to
// interrupt reads is what keeps a stop from slipping in between.
func (s *served) setReadDeadline(t time.Time) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closing {
		return false
	}
	_ = s.conn.SetReadDeadline(t)
	return true
}

// begin marks a handler as running, or reports false when stopping.
func (s *served) begin() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closing {
		return false
	}
	s.busy = true
	return true
}

func (s *served) end() {
	s.mu.Lock()
	s.busy = false
	s.mu.Unlock()
}

// stop asks the connection to end: at once when it is waiting for bytes
// (an expired deadline wakes the read), after its ACK when it is busy.
func (s *served) stop() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.closing = true
	if !s.busy {
		_ = s.conn.SetReadDeadline(time.Unix(1, 0))
	}
}

func (s *served) isClosing() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.closing
}

// headSize is how much of each frame is kept aside for an AR to a frame
// the reader drops: enough for any realistic MSH segment.
const headSize = 1024

// frameHead is the first bytes of the frame whose start block is at off.
type frameHead struct {
	off  int64
	prev byte // the byte before the start block
	data []byte
}

// connReader sits between the socket and the mllp.Reader. Before every
// read it sets the deadline the reader's state calls for (idle between
// frames, read timeout inside one), and it keeps the first bytes of the
// frames read from the socket but not yet returned by the reader, so that
// an AR to a dropped frame can name its MSH-10.
//
// Every start block starts a frame in mllp.Reader (inside a frame it
// abandons the current one first), and a start block never appears inside
// a payload, so the heads queue lines up one to one with the frames the
// reader goes on to return or report.
type connReader struct {
	s      *served
	r      *mllp.Reader
	stats  *Stats
	idle   time.Duration // <= 0: none
	read   time.Duration // <= 0: none
	off    int64         // stream offset of the next byte read
	heads  []frameHead   // oldest first
	spare  [][]byte      // head buffers to reuse
	idleAt time.Time     // start of the current idle period
	// inFrame and frameAt follow the reader into a frame: frameAt is when
	// the read that brought its start block returned.
	inFrame  bool
	frameAt  time.Time
	lastRead time.Time
	lastByte byte // the last byte read so far
	// firstStart is the offset of the connection's first start block, -1
	// before one is seen.
	firstStart int64
}

func (c *connReader) Read(p []byte) (int, error) {
	var deadline time.Time
	if c.r.InFrame() {
		if !c.inFrame {
			// A frame whose start arrived while the previous message was
			// being handled starts its clock when reading resumes: the
			// handler's time is not the sender's.
			c.inFrame, c.frameAt = true, c.lastRead
			if c.idleAt.After(c.frameAt) {
				c.frameAt = c.idleAt
			}
		}
		if c.read > 0 {
			deadline = c.frameAt.Add(c.read)
		}
	} else {
		c.inFrame = false
		if c.idle > 0 {
			deadline = c.idleAt.Add(c.idle)
		}
	}
	if !c.s.setReadDeadline(deadline) {
		return 0, errClosing
	}
	n, err := c.s.conn.Read(p)
	c.lastRead = time.Now()
	if n > 0 {
		c.stats.BytesIn.Add(uint64(n))
		c.track(p[:n])
		c.off += int64(n)
	}
	return n, err
}

// frameDone is called when ReadFrame returns (a frame or a framing error):
// the next frame gets its own read-timeout window.
func (c *connReader) frameDone() { c.inFrame = false }

// idleFrom starts the idle clock (after an ACK, or at connect).
func (c *connReader) idleFrom(t time.Time) { c.idleAt = t }

// track records where frames start in the chunk read and copies their
// first bytes.
func (c *connReader) track(chunk []byte) {
	defer func() { c.lastByte = chunk[len(chunk)-1] }()
	for i := 0; ; {
		j := bytes.IndexByte(chunk[i:], mllp.StartBlock)
		seg := chunk[i:]
		if j >= 0 {
			seg = chunk[i : i+j]
		}
		if k := len(c.heads) - 1; k >= 0 {
			h := &c.heads[k]
			room := headSize - len(h.data)
			h.data = append(h.data, seg[:min(room, len(seg))]...)
		}
		if j < 0 {
			return
		}
		var buf []byte
		if n := len(c.spare); n > 0 {
			buf, c.spare = c.spare[n-1][:0], c.spare[:n-1]
		}
		if c.firstStart < 0 {
			c.firstStart = c.off + int64(i+j)
		}
		prev := c.lastByte
		if i+j > 0 {
			prev = chunk[i+j-1]
		}
		c.heads = append(c.heads, frameHead{off: c.off + int64(i+j), prev: prev, data: buf})
		i += j + 1
	}
}

// popFront drops the oldest head: the frame the reader just returned.
func (c *connReader) popFront() {
	if len(c.heads) > 0 {
		c.recycle(c.heads[0].data)
		c.heads = append(c.heads[:0], c.heads[1:]...)
	}
}

// take removes and returns the head of the latest frame starting at or
// before off (with at false, strictly before), dropping older ones: the
// frame a framing error reported at off belongs to. The slice is valid
// until the next read.
func (c *connReader) take(off int64, at bool) []byte {
	k := -1
	for i, h := range c.heads {
		if h.off < off || at && h.off == off {
			k = i
		}
	}
	if k < 0 {
		return nil
	}
	data := c.heads[k].data
	for _, h := range c.heads[:k] {
		c.recycle(h.data)
	}
	c.heads = append(c.heads[:0], c.heads[k+1:]...)
	c.spare = append(c.spare, data) // reused only by a later read
	return data
}

// abandonedAt reports whether the framing error at off is a start block
// that cut the frame before it short (as opposed to an end block 0x1C
// followed directly by the next frame's start block).
func (c *connReader) abandonedAt(off int64) bool {
	for _, h := range c.heads {
		if h.off == off {
			return h.prev != mllp.EndBlock
		}
	}
	return false
}

func (c *connReader) recycle(b []byte) {
	if b != nil && len(c.spare) < 8 {
		c.spare = append(c.spare, b)
	}
}

// startedBefore reports whether a start block was seen before off: bytes
// outside frames before any start block mean the peer is not speaking MLLP.
func (c *connReader) startedBefore(off int64) bool {
	return c.firstStart >= 0 && c.firstStart < off
}
