package realtime

import (
	"context"
	_ "embed"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/gorilla/websocket"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/ductus/ductus/actor"
	"github.com/ductus/ductus/runtime/host"
)

// Config configures a Handler. Zero fields take the documented defaults.
type Config struct {
	// Host is the runtime whose actors are observed (required).
	Host *host.Host
	// Keys verifies subscription tokens (required; see Keyring).
	Keys Keyring
	// Identify names the caller of a connection from its upgrade request:
	// key counts connections for MaxConnsPerCaller, caller is handed to
	// the subscription policy (actor.CallerFrom). An error refuses the
	// connection with 401. Default: the remote IP as key, no caller.
	Identify func(r *http.Request) (key string, caller any, err error)
	// AllowedOrigins lists the Origins (scheme://host[:port]) browsers may
	// connect from; "*" allows any. Default: the request's own host only.
	// Requests without an Origin (non-browser clients) are allowed.
	AllowedOrigins []string
	// MaxFrameBytes bounds one client frame (default 16 KiB); a larger one
	// closes the connection with 1009.
	MaxFrameBytes int64
	// MaxSubscriptions per connection (default 100).
	MaxSubscriptions int
	// MaxConnsPerCaller (default 50; -1 for no limit).
	MaxConnsPerCaller int
	// QueueSize bounds each connection's pending updates (default 256).
	QueueSize int
	// RetainUpdates and RetainFor bound the changes kept per actor for
	// clients that resume (defaults 100 and 5 minutes).
	RetainUpdates int
	RetainFor     time.Duration
	// PingInterval is how often the server pings; a connection that has
	// sent nothing, not even a pong, for PingInterval+PongWait is closed
	// (defaults 25s and 10s).
	PingInterval time.Duration
	PongWait     time.Duration
	// WriteTimeout bounds one frame's write and a snapshot's read
	// (default 10s).
	WriteTimeout time.Duration
	// Metrics receives the collectors (default: the host's registry).
	Metrics prometheus.Registerer
	Logger  *slog.Logger // default: discard
}

func (c Config) withDefaults() (Config, error) {
	if c.Host == nil {
		return c, errors.New("realtime: Config.Host is required")
	}
	if err := c.Keys.Validate(); err != nil {
		return c, err
	}
	for _, o := range c.AllowedOrigins {
		if o == "*" {
			continue
		}
		if u, err := url.Parse(o); err != nil || u.Scheme == "" || u.Host == "" || (u.Path != "" && u.Path != "/") {
			return c, fmt.Errorf("realtime: allowed origin %q must be scheme://host[:port] or *", o)
		}
	}
	def := func(v *int, d int) {
		if *v == 0 {
			*v = d
		}
	}
	defD := func(v *time.Duration, d time.Duration) {
		if *v == 0 {
			*v = d
		}
	}
	if c.MaxFrameBytes == 0 {
		c.MaxFrameBytes = 16 << 10
	}
	def(&c.MaxSubscriptions, 100)
	def(&c.MaxConnsPerCaller, 50)
	def(&c.QueueSize, 256)
	def(&c.RetainUpdates, 100)
	defD(&c.RetainFor, 5*time.Minute)
	defD(&c.PingInterval, 25*time.Second)
	defD(&c.PongWait, 10*time.Second)
	defD(&c.WriteTimeout, 10*time.Second)
	switch {
	case c.MaxFrameBytes < 512:
		return c, fmt.Errorf("realtime: MaxFrameBytes %d is below 512 (a subscribe frame with its token needs room)", c.MaxFrameBytes)
	case c.MaxSubscriptions < 0 || c.QueueSize < 0 || c.RetainUpdates < 0:
		return c, errors.New("realtime: MaxSubscriptions, QueueSize and RetainUpdates must be positive")
	case c.MaxConnsPerCaller < -1:
		return c, errors.New("realtime: MaxConnsPerCaller must be positive, or -1 for no limit")
	case c.RetainFor < 0 || c.PingInterval < 0 || c.PongWait < 0 || c.WriteTimeout < 0:
		return c, errors.New("realtime: durations must be positive")
	}
	if c.Metrics == nil {
		c.Metrics = c.Host.Metrics()
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	return c, nil
}

// ClientPath is the path suffix under which the handler serves its
// browser client (any GET whose path ends with it).
const ClientPath = "/ductus-realtime.js"

//go:embed client.js
var clientJS []byte

// Handler is the realtime http.Handler: a WebSocket upgrade opens a
// connection; a GET of a path ending in ClientPath returns the browser
// client. Close it before shutting the host down.
type Handler struct {
	cfg      Config
	host     *host.Host
	hub      *hub
	met      *metrics
	upgrader websocket.Upgrader
	log      *slog.Logger

	ctx    context.Context
	cancel context.CancelFunc
	unsub  func()
	wg     sync.WaitGroup

	mu        sync.Mutex
	closed    bool
	conns     map[*conn]struct{}
	perCaller map[string]int
}

// New makes a Handler and starts following the host's broadcasts. The host
// must be started.
func New(ctx context.Context, cfg Config) (*Handler, error) {
	cfg, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	met, err := newMetrics(cfg.Metrics)
	if err != nil {
		return nil, err
	}
	h := &Handler{cfg: cfg, host: cfg.Host, met: met, log: cfg.Logger, conns: map[*conn]struct{}{}, perCaller: map[string]int{}}
	h.ctx, h.cancel = context.WithCancel(context.Background())
	h.upgrader = websocket.Upgrader{
		ReadBufferSize:  1024,         // frames are small; larger ones read in several calls
		WriteBufferPool: &sync.Pool{}, // an idle connection holds no write buffer
		CheckOrigin:     h.checkOrigin,
		Error: func(w http.ResponseWriter, r *http.Request, status int, reason error) {
			http.Error(w, "realtime: "+reason.Error(), status)
		},
	}
	// Subscribe before reading the cursor: every broadcast above it then
	// reaches the hub, so resumes from there on are exact.
	var pending []host.Broadcast
	var pmu sync.Mutex
	started := false
	h.unsub = cfg.Host.SubscribeAll(func(b host.Broadcast) {
		pmu.Lock()
		if !started {
			pending = append(pending, b)
			pmu.Unlock()
			return
		}
		pmu.Unlock()
		h.hub.publish(b)
	})
	cursor, err := cfg.Host.Backend().BroadcastLatestID(ctx)
	if err != nil {
		h.unsub()
		return nil, fmt.Errorf("realtime: read the broadcast cursor: %w", err)
	}
	h.hub = newHub(cursor, cfg.RetainUpdates, cfg.RetainFor)
	pmu.Lock()
	for _, b := range pending {
		h.hub.publish(b)
	}
	started = true
	pmu.Unlock()
	h.wg.Add(2)
	go h.sweepLoop()
	go h.pingLoop()
	return h, nil
}

// Close refuses new connections, closes the open ones (1001 going away,
// so clients reconnect and resume elsewhere) and stops following
// broadcasts.
func (h *Handler) Close() error {
	h.mu.Lock()
	if h.closed {
		h.mu.Unlock()
		return nil
	}
	h.closed = true
	conns := make([]*conn, 0, len(h.conns))
	for c := range h.conns {
		conns = append(conns, c)
	}
	h.mu.Unlock()
	h.unsub()
	h.cancel()
	for _, c := range conns {
		_ = c.ws.WriteControl(websocket.CloseMessage, websocket.FormatCloseMessage(websocket.CloseGoingAway, "server closing"), time.Now().Add(time.Second))
		c.close()
	}
	h.wg.Wait()
	return nil
}

// ServeHTTP implements http.Handler.
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if !websocket.IsWebSocketUpgrade(r) {
		if r.Method == http.MethodGet && strings.HasSuffix(r.URL.Path, ClientPath) {
			w.Header().Set("Content-Type", "text/javascript; charset=utf-8")
			w.Header().Set("Cache-Control", "no-cache")
			_, _ = w.Write(clientJS)
			return
		}
		http.Error(w, "realtime: this endpoint takes WebSocket upgrades (and GET …"+ClientPath+" for the browser client)", http.StatusBadRequest)
		return
	}
	key, caller, err := h.identify(r)
	if err != nil {
		h.met.refusals.WithLabelValues(CodeUnauthenticated).Inc()
		http.Error(w, "realtime: "+err.Error(), http.StatusUnauthorized)
		return
	}
	if !h.admit(key) {
		h.met.refusals.WithLabelValues(CodeTooManyConns).Inc()
		http.Error(w, fmt.Sprintf("realtime: %s: at most %d connections per caller", CodeTooManyConns, h.cfg.MaxConnsPerCaller), http.StatusTooManyRequests)
		return
	}
	ws, err := h.upgrader.Upgrade(w, r, nil)
	if err != nil {
		h.release(key, nil) // Upgrade answered the client
		return
	}
	ws.SetReadLimit(h.cfg.MaxFrameBytes)
	c := &conn{h: h, ws: ws, key: key, caller: caller, subs: map[actor.Ref]*sub{}}
	c.ctx, c.cancel = context.WithCancel(h.ctx)
	h.mu.Lock()
	if h.closed {
		h.mu.Unlock()
		h.release(key, nil)
		_ = ws.Close()
		return
	}
	h.conns[c] = struct{}{}
	h.mu.Unlock()
	h.met.connections.Inc()
	defer func() {
		c.close()
		h.release(key, c)
		h.met.connections.Dec()
	}()
	c.read()
}

// identify runs Config.Identify, or keys the caller by remote IP.
func (h *Handler) identify(r *http.Request) (string, any, error) {
	if h.cfg.Identify != nil {
		return h.cfg.Identify(r)
	}
	ip, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		ip = r.RemoteAddr
	}
	return ip, nil, nil
}

// admit counts a connection for key, refusing past MaxConnsPerCaller.
func (h *Handler) admit(key string) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.closed {
		return false
	}
	if h.cfg.MaxConnsPerCaller >= 0 && h.perCaller[key] >= h.cfg.MaxConnsPerCaller {
		return false
	}
	h.perCaller[key]++
	return true
}

// release uncounts a connection (and forgets c).
func (h *Handler) release(key string, c *conn) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.perCaller[key]--; h.perCaller[key] <= 0 {
		delete(h.perCaller, key)
	}
	if c != nil {
		delete(h.conns, c)
	}
}

// checkOrigin allows requests without an Origin (not from a browser), the
// request's own host by default, or AllowedOrigins.
func (h *Handler) checkOrigin(r *http.Request) bool {
	origin := r.Header.Get("Origin")
	if origin == "" {
		return true
	}
	ok := false
	if len(h.cfg.AllowedOrigins) == 0 {
		u, err := url.Parse(origin)
		ok = err == nil && strings.EqualFold(u.Host, r.Host)
	} else {
		ok = slices.Contains(h.cfg.AllowedOrigins, "*") || slices.ContainsFunc(h.cfg.AllowedOrigins, func(o string) bool {
			return strings.EqualFold(strings.TrimSuffix(o, "/"), origin)
		})
	}
	if !ok {
		h.met.refusals.WithLabelValues(CodeOrigin).Inc()
	}
	return ok
}

// sweepLoop trims retained changes and forgets idle actors.
func (h *Handler) sweepLoop() {
	defer h.wg.Done()
	t := time.NewTicker(min(h.cfg.RetainFor, time.Minute))
	defer t.Stop()
	for {
		select {
		case <-h.ctx.Done():
			return
		case now := <-t.C:
			h.hub.sweep(now)
		}
	}
}

// pingLoop pings every connection each PingInterval from one goroutine
// (a ticker per connection would cost each idle one a timer and a
// goroutine); a connection whose write blocks is closed by its deadline.
func (h *Handler) pingLoop() {
	defer h.wg.Done()
	t := time.NewTicker(h.cfg.PingInterval)
	defer t.Stop()
	for {
		select {
		case <-h.ctx.Done():
			return
		case <-t.C:
		}
		h.mu.Lock()
		conns := make([]*conn, 0, len(h.conns))
		for c := range h.conns {
			conns = append(conns, c)
		}
		h.mu.Unlock()
		deadline := time.Now().Add(h.cfg.WriteTimeout)
		for _, c := range conns {
			go func() {
				if err := c.ws.WriteControl(websocket.PingMessage, nil, deadline); err != nil {
					c.close()
				}
			}()
		}
	}
}
