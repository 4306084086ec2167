package api

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"sync"
	"time"
)

// GET /events streams the engine's State (every interface with its counts,
// and the drain) as Server-Sent Events. One hub serves every subscriber:
// it looks at the engine every eventsPoll while at least one is
// subscribed, sends a State only when it differs from the last one, and
// stops looking when the last subscriber leaves, so an engine nobody
// watches reads nothing for it.
//
// Ordering: a subscriber gets the latest State at once, then each change
// in the order the hub saw them; a subscriber too slow for two changes in
// a row skips to the latest (it never gets an old State after a newer).

// eventsPoll is how often the hub looks while anyone is subscribed.
const eventsPoll = time.Second

// eventsHeartbeat keeps proxies from closing an idle stream.
const eventsHeartbeat = 15 * time.Second

// hub is the subscribers of GET /events and the one poller they share.
type hub struct {
	eng   Engine
	log   *slog.Logger
	every time.Duration

	mu     sync.Mutex
	subs   map[chan []byte]struct{}
	last   []byte
	cancel context.CancelFunc
}

// subscribe adds a subscriber; the channel gets each new State (the latest
// only, if it falls behind). The first subscriber starts the poller.
func (h *hub) subscribe() (ch chan []byte, last []byte, unsubscribe func()) {
	ch = make(chan []byte, 1)
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.subs == nil {
		h.subs = map[chan []byte]struct{}{}
	}
	h.subs[ch] = struct{}{}
	if h.cancel == nil {
		ctx, cancel := context.WithCancel(context.Background())
		h.cancel = cancel
		go h.poll(ctx)
	}
	return ch, h.last, func() {
		h.mu.Lock()
		defer h.mu.Unlock()
		delete(h.subs, ch)
		if len(h.subs) == 0 && h.cancel != nil {
			h.cancel()
			h.cancel, h.last = nil, nil
		}
	}
}

// poll looks at the engine until ctx ends, broadcasting each change.
func (h *hub) poll(ctx context.Context) {
	t := time.NewTicker(h.every)
	defer t.Stop()
	for {
		if b, err := h.state(ctx); err != nil {
			if ctx.Err() == nil {
				h.log.Warn("api: events: reading the engine's state", "err", err)
			}
		} else {
			h.broadcast(b)
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

func (h *hub) state(ctx context.Context) ([]byte, error) {
	st, err := h.eng.State(ctx)
	if err != nil {
		return nil, err
	}
	return json.Marshal(st)
}

func (h *hub) broadcast(b []byte) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if bytes.Equal(b, h.last) {
		return
	}
	h.last = b
	for ch := range h.subs {
		select {
		case ch <- b:
		default: // behind: replace what it has not read with the latest
			select {
			case <-ch:
			default:
			}
			ch <- b
		}
	}
}

// eventStream is GET /events' answer: it streams until the caller leaves
// or the server shuts down (done).
type eventStream struct {
	ctx  context.Context
	done <-chan struct{}
	hub  *hub
}

func (s eventStream) VisitGetEventsResponse(w http.ResponseWriter) error {
	rc := http.NewResponseController(w)
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-cache")
	h.Set("X-Accel-Buffering", "no") // nginx: do not buffer the stream
	w.WriteHeader(http.StatusOK)
	ch, last, unsubscribe := s.hub.subscribe()
	defer unsubscribe()
	send := func(b []byte) error {
		if _, err := fmt.Fprintf(w, "event: state\ndata: %s\n\n", b); err != nil {
			return err
		}
		return rc.Flush()
	}
	if last != nil {
		if err := send(last); err != nil {
			return nil // the caller left
		}
	} else if err := rc.Flush(); err != nil {
		return nil
	}
	beat := time.NewTicker(eventsHeartbeat)
	defer beat.Stop()
	for {
		var err error
		select {
		case <-s.ctx.Done():
			return nil
		case <-s.done:
			return nil
		case b := <-ch:
			err = send(b)
		case <-beat.C:
			if _, err = fmt.Fprint(w, ": keep-alive\n\n"); err == nil {
				err = rc.Flush()
			}
		}
		if err != nil {
			return nil // the caller left
		}
	}
}

func (s *server) GetEvents(ctx context.Context, _ GetEventsRequestObject) (GetEventsResponseObject, error) {
	return eventStream{ctx: ctx, done: s.streamsDone, hub: s.events}, nil
}
