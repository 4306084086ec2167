package realtime

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"sync"
	"time"

	"github.com/gorilla/websocket"

	"github.com/ductus/ductus/actor"
)

// sub is one subscription of a connection. pending and held belong to the
// hub (under hub.mu); the rest is fixed when it is made.
type sub struct {
	c      *conn
	ref    actor.Ref
	obs    []string // sorted; what the client gets
	claims Claims

	pending bool    // a snapshot is being read: changes are held
	held    []entry // changes that arrived while pending
}

func (s *sub) wants(name string) bool {
	_, ok := slices.BinarySearch(s.obs, name)
	return ok
}

type itemKind uint8

const (
	kindUpdate itemKind = iota
	kindSnapshot
	kindResumed
	kindUnsubscribed
	kindError
)

// item is one queued outgoing frame (updates are coalesced when written).
type item struct {
	kind    itemKind
	sub     *sub
	version int64
	name    string                     // update
	value   json.RawMessage            // update
	frame   *websocket.PreparedMessage // update, framed once for all
	values  map[string]json.RawMessage
	err     *errorFrame
}

// conn is one WebSocket connection. Only one goroutine writes frames at a
// time (flush, started on demand so an idle connection costs no writer
// goroutine); the handler's goroutine reads.
type conn struct {
	h      *Handler
	ws     *websocket.Conn
	key    string
	caller any
	ctx    context.Context
	cancel context.CancelFunc

	qmu     sync.Mutex
	queue   []item
	stale   map[*sub]bool // dropped updates: a snapshot follows once drained
	writing bool          // a flush goroutine runs
	closed  bool

	subMu sync.Mutex // serializes subscribe, unsubscribe and re-snapshots
	subs  map[actor.Ref]*sub
}

// enqueue queues a frame that is never dropped (snapshots, acks, errors:
// bounded by the client's own requests).
func (c *conn) enqueue(it item) {
	c.qmu.Lock()
	defer c.qmu.Unlock()
	if c.closed {
		return
	}
	c.queue = append(c.queue, it)
	c.kick()
}

// enqueueUpdate queues a change; on overflow every pending update is dropped
// and their subscriptions are marked for a snapshot once the queue drains,
// so a slow client costs only itself.
func (c *conn) enqueueUpdate(s *sub, e entry) {
	c.qmu.Lock()
	defer c.qmu.Unlock()
	if c.closed {
		return
	}
	if c.stale[s] {
		c.h.met.drops.Inc()
		return
	}
	if len(c.queue) >= c.h.cfg.QueueSize {
		kept := c.queue[:0]
		dropped := 1
		if c.stale == nil {
			c.stale = map[*sub]bool{}
		}
		c.stale[s] = true
		for _, it := range c.queue {
			if it.kind == kindUpdate {
				c.stale[it.sub] = true
				dropped++
				continue
			}
			kept = append(kept, it)
		}
		clear(c.queue[len(kept):])
		c.queue = kept
		c.h.met.drops.Add(float64(dropped))
		c.kick()
		return
	}
	c.queue = append(c.queue, item{kind: kindUpdate, sub: s, version: e.id, name: e.name, value: e.value, frame: e.frame})
	c.kick()
}

// kick starts a flush goroutine if none runs. Call with qmu held.
func (c *conn) kick() {
	if !c.writing {
		c.writing = true
		go c.flush()
	}
}

// flush writes queued frames until the queue is empty and no subscription
// waits for a re-snapshot, then exits.
func (c *conn) flush() {
	for {
		c.qmu.Lock()
		batch := c.queue
		c.queue = nil
		var stale []*sub
		if len(batch) == 0 {
			for s := range c.stale {
				stale = append(stale, s)
			}
			c.stale = nil
			if len(stale) == 0 || c.closed {
				c.writing = false
				c.qmu.Unlock()
				return
			}
		}
		c.qmu.Unlock()
		if len(batch) > 0 {
			if err := c.write(batch); err != nil {
				c.close()
				return
			}
			continue
		}
		for _, s := range stale {
			c.resnapshot(s)
		}
	}
}

// write sends a batch, merging adjacent updates of one subscription into
// one update frame (same order, fewer frames for a client catching up).
func (c *conn) write(batch []item) error {
	now := time.Now()
	for i := 0; i < len(batch); i++ {
		it := batch[i]
		if it.sub != nil && it.kind != kindUnsubscribed && !now.Before(it.sub.claims.Expires) {
			// The token has run out: nothing more of this actor is sent
			// on it. The subscription ends with token_expired (once), so
			// a client re-subscribes with a fresh token and since.
			if c.expire(it.sub) {
				ref := it.sub.ref
				c.sendError(&ref, CodeTokenExpired, "the subscription's token expired at "+
					it.sub.claims.Expires.UTC().Format(time.RFC3339)+"; subscribe again with a fresh token and since")
			}
			continue
		}
		var frame any
		switch it.kind {
		case kindUpdate:
			if it.frame != nil && (i+1 == len(batch) || batch[i+1].kind != kindUpdate || batch[i+1].sub != it.sub) {
				c.h.met.updates.Inc()
				_ = c.ws.SetWriteDeadline(time.Now().Add(c.h.cfg.WriteTimeout))
				if err := c.ws.WritePreparedMessage(it.frame); err != nil {
					return err
				}
				continue
			}
			changes := map[string]json.RawMessage{it.name: it.value}
			version := it.version
			for i+1 < len(batch) && batch[i+1].kind == kindUpdate && batch[i+1].sub == it.sub {
				i++
				changes[batch[i].name] = batch[i].value
				version = batch[i].version
			}
			c.h.met.updates.Add(float64(len(changes)))
			frame = updateFrame{Op: OpUpdate, Ref: it.sub.ref, Version: version, Changes: changes}
		case kindSnapshot:
			c.h.met.snapshots.Inc()
			frame = snapshotFrame{Op: OpSnapshot, Ref: it.sub.ref, Version: it.version, Values: it.values}
		case kindResumed:
			frame = ackFrame{Op: OpResumed, Ref: it.sub.ref, Version: it.version}
		case kindUnsubscribed:
			frame = ackFrame{Op: OpUnsubscribed, Ref: it.sub.ref}
		case kindError:
			frame = it.err
		}
		b, err := json.Marshal(frame)
		if err != nil {
			return err
		}
		_ = c.ws.SetWriteDeadline(time.Now().Add(c.h.cfg.WriteTimeout))
		if err := c.ws.WriteMessage(websocket.TextMessage, b); err != nil {
			return err
		}
	}
	return nil
}

// expire ends s because its token ran out; false when s had already ended
// (expired before, unsubscribed or replaced by a new subscribe), so the
// client is told once. (Its error frame is queued behind this batch, which
// holds nothing more of s.)
func (c *conn) expire(s *sub) bool {
	c.subMu.Lock()
	defer c.subMu.Unlock()
	if c.subs[s.ref] != s {
		return false
	}
	c.drop(s)
	return true
}

// sendError queues an error frame and counts it as a refusal.
func (c *conn) sendError(ref *actor.Ref, code, msg string) {
	c.h.met.refusals.WithLabelValues(code).Inc()
	c.enqueue(item{kind: kindError, err: &errorFrame{Op: OpError, Ref: ref, Code: code, Message: msg}})
}

// read is the connection's read loop, on the handler's goroutine.
func (c *conn) read() {
	wait := c.h.cfg.PingInterval + c.h.cfg.PongWait
	_ = c.ws.SetReadDeadline(time.Now().Add(wait))
	c.ws.SetPongHandler(func(string) error { return c.ws.SetReadDeadline(time.Now().Add(wait)) })
	for c.ctx.Err() == nil {
		typ, data, err := c.ws.ReadMessage()
		if err != nil {
			if errors.Is(err, websocket.ErrReadLimit) {
				c.h.met.refusals.WithLabelValues(CodeFrameTooLarge).Inc()
				_ = c.ws.WriteControl(websocket.CloseMessage,
					websocket.FormatCloseMessage(websocket.CloseMessageTooBig, "frame_too_large: frames are limited to "+itoa(c.h.cfg.MaxFrameBytes)+" bytes"),
					time.Now().Add(time.Second))
			}
			return
		}
		_ = c.ws.SetReadDeadline(time.Now().Add(wait))
		if typ != websocket.TextMessage {
			c.h.met.malformed.Inc()
			c.sendError(nil, CodeBadFrame, "frames must be JSON text, not binary")
			continue
		}
		f, err := decodeFrame(data)
		if err != nil {
			var fe *frameError
			if !errors.As(err, &fe) {
				fe = &frameError{code: CodeBadFrame, msg: err.Error()}
			}
			c.h.met.malformed.Inc()
			c.sendError(fe.ref, fe.code, fe.msg)
			continue
		}
		switch f.Op {
		case OpSubscribe:
			c.subscribe(f)
		case OpUnsubscribe:
			c.unsubscribe(f.Ref)
		}
	}
}

func (c *conn) unsubscribe(ref actor.Ref) {
	c.subMu.Lock()
	defer c.subMu.Unlock()
	s := c.subs[ref]
	if s == nil {
		c.sendError(&ref, CodeNotSubscribed, "no subscription to "+ref.String()+" on this connection")
		return
	}
	c.drop(s)
	c.enqueue(item{kind: kindUnsubscribed, sub: s})
}

// drop ends s. Call with subMu held.
func (c *conn) drop(s *sub) {
	c.h.hub.remove(s)
	delete(c.subs, s.ref)
	c.h.met.subscriptions.Dec()
}

// close ends the connection and its subscriptions (idempotent).
func (c *conn) close() {
	c.qmu.Lock()
	already := c.closed
	c.closed = true
	c.queue = nil
	c.qmu.Unlock()
	if already {
		return
	}
	c.cancel()
	_ = c.ws.Close()
	c.subMu.Lock()
	for _, s := range c.subs {
		c.drop(s)
	}
	c.subMu.Unlock()
}

func itoa(n int64) string {
	b, _ := json.Marshal(n)
	return string(b)
}
