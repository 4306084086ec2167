package postgres

import (
	"context"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/ductus/ductus/runtime/store"
)

// Cross-process wake-ups. A signal is never delivered before the rows it
// announces are visible: writers NOTIFY inside their own transaction
// (pg_notify, pipelined before the implicit commit), delivered only if it
// commits, or on their own once the work has committed (Notify). The
// payload is "w" for new work (MailboxEnqueueParams.Signal, Notify) or
// "d:<id>,<id>,..." for finished messages someone asked for
// (TurnCommitParams.SignalDone).
//
// NOTIFY is kept off the hot commit path: a transaction that notifies
// takes PostgreSQL's global notification-queue lock at commit and holds it
// until its commit record is flushed, which serialises every notifying
// commit of the cluster behind one another's fsync. So the adapter sends
// nothing unless asked: the runtime sets Signal only for an Ask that no
// local worker can take, SignalDone only for messages an Ask in another
// process is waiting for, and sends every other work signal through
// Notify, debounced (one per burst of enqueues), when no local worker can
// take the work or another process holds the actor's lease. Identical
// notifications of one transaction are folded into one by the server.
//
// Each Backend keeps one listening connection, opened when the first
// Listen starts and shared by every Listen of the backend. When it breaks
// it reconnects with back-off (100ms doubling to 5s), and after every
// (re)connect it delivers a Work signal, since notifications sent while it
// was down are lost: the runtime polls once and is back in step. Polling
// remains the safety net throughout.

// Listen implements store.Signaler: fn is called for every signal until
// ctx ends; Listen returns nil then.
func (b *Backend) Listen(ctx context.Context, fn func(store.Signal)) error {
	id := b.hub.add(fn)
	defer b.hub.remove(id)
	<-ctx.Done()
	return nil
}

// hub is the backend's one listener connection and its subscribers.
type hub struct {
	b      *Backend
	mu     sync.Mutex
	subs   map[int]func(store.Signal)
	next   int
	cancel context.CancelFunc // stops the listener goroutine
	done   chan struct{}
	closed bool
	lost   bool // the listener's connection failed and is not back yet (run's goroutine only)
}

func newHub(b *Backend) *hub { return &hub{b: b, subs: map[int]func(store.Signal){}} }

func (h *hub) add(fn func(store.Signal)) int {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.next++
	h.subs[h.next] = fn
	if h.cancel == nil && !h.closed {
		ctx, cancel := context.WithCancel(context.Background())
		h.cancel, h.done = cancel, make(chan struct{})
		go h.run(ctx, h.done)
	}
	return h.next
}

func (h *hub) remove(id int) {
	h.mu.Lock()
	delete(h.subs, id)
	var stop context.CancelFunc
	var done chan struct{}
	if len(h.subs) == 0 && h.cancel != nil {
		stop, done = h.cancel, h.done
		h.cancel, h.done = nil, nil
	}
	h.mu.Unlock()
	if stop != nil {
		stop()
		<-done
	}
}

func (h *hub) close() {
	h.mu.Lock()
	h.closed = true
	stop, done := h.cancel, h.done
	h.cancel, h.done = nil, nil
	h.mu.Unlock()
	if stop != nil {
		stop()
		<-done
	}
}

func (h *hub) deliver(s store.Signal) {
	h.mu.Lock()
	fns := make([]func(store.Signal), 0, len(h.subs))
	for _, fn := range h.subs {
		fns = append(fns, fn)
	}
	h.mu.Unlock()
	for _, fn := range fns {
		fn(s)
	}
}

// run keeps a LISTEN connection open until ctx ends.
func (h *hub) run(ctx context.Context, done chan struct{}) {
	defer close(done)
	backoff := 100 * time.Millisecond
	for ctx.Err() == nil {
		err := h.listen(ctx, func() { backoff = 100 * time.Millisecond })
		if ctx.Err() != nil {
			return
		}
		// The runtime polls meanwhile, so work is found late, not lost.
		if !h.lost {
			h.b.log.Warn("postgres: the LISTEN connection failed; wake-ups from other processes wait for the poll until it is back", "err", err)
			h.lost = true
		}
		t := time.NewTimer(backoff)
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-t.C:
		}
		backoff = min(backoff*2, 5*time.Second)
	}
}

// listen runs one connection's life: connect, LISTEN, deliver.
func (h *hub) listen(ctx context.Context, connected func()) error {
	cfg := h.b.connCfg.Copy()
	cfg.RuntimeParams["application_name"] = "ductus-listen:" + h.b.schema
	conn, err := pgx.ConnectConfig(ctx, cfg)
	if err != nil {
		return err
	}
	defer conn.Close(context.Background())
	if _, err := conn.Exec(ctx, "LISTEN "+pgx.Identifier{h.b.channel}.Sanitize()); err != nil {
		return err
	}
	connected()
	if h.lost {
		h.b.log.Info("postgres: the LISTEN connection is back")
		h.lost = false
	}
	h.deliver(store.Signal{Work: true}) // whatever was sent while no one listened
	for {
		n, err := conn.WaitForNotification(ctx)
		if err != nil {
			return err
		}
		if s, ok := parseSignal(n.Payload); ok {
			h.deliver(s)
		}
	}
}

// parseSignal reads a payload written by the adapter.
func parseSignal(payload string) (store.Signal, bool) {
	if payload == "w" {
		return store.Signal{Work: true}, true
	}
	if payload == "b" {
		return store.Signal{Broadcast: true}, true
	}
	if pk, ok := strings.CutPrefix(payload, "w:"); ok {
		n, err := strconv.ParseInt(pk, 10, 64)
		if err != nil {
			return store.Signal{}, false
		}
		return store.Signal{Work: true, PKs: []int64{n}}, true
	}
	rest, ok := strings.CutPrefix(payload, "d:")
	if !ok {
		return store.Signal{}, false
	}
	var s store.Signal
	for _, f := range strings.Split(rest, ",") {
		id, err := strconv.ParseInt(f, 10, 64)
		if err != nil {
			return store.Signal{}, false
		}
		s.Done = append(s.Done, id)
	}
	return s, len(s.Done) > 0
}

// Notify implements store.Notifier: a work signal sent in its own
// statement, outside any transaction of the caller.
func (b *Backend) Notify(ctx context.Context, s store.Signal) error {
	if s.Work {
		if _, err := b.pool.Exec(ctx, sqlNotify, b.channel, "w"); err != nil {
			return classify("notify other processes", err)
		}
	}
	if s.Broadcast {
		if _, err := b.pool.Exec(ctx, sqlNotify, b.channel, "b"); err != nil {
			return classify("notify other processes", err)
		}
	}
	for _, payload := range donePayloads(s.Done) {
		if _, err := b.pool.Exec(ctx, sqlNotify, b.channel, payload); err != nil {
			return classify("notify other processes", err)
		}
	}
	return nil
}
