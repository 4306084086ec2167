package realtime

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/gorilla/websocket"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/ductus/ductus/actor"
	"github.com/ductus/ductus/internal/testutil"
	"github.com/ductus/ductus/runtime/host"
	"github.com/ductus/ductus/runtime/store"
)

const tallyType = "rt.tally"

// tally is the test actor: a number and a label, both observable.
type tally struct {
	N     int    `json:"n"`
	Label string `json:"label"`
}

func testRegistry() *actor.Registry {
	reg := actor.NewRegistry()
	reg.MustRegister(&actor.Type[tally]{Name: tallyType, Messages: map[string]actor.Handler[tally]{
		"add": actor.Message(func(c *actor.Context, s *tally, n int) (int, error) {
			s.N += n
			return s.N, nil
		}),
		"label": actor.Message(func(c *actor.Context, s *tally, l string) (any, error) {
			s.Label = l
			return nil, nil
		}),
	}, Observables: map[string]func(*tally) any{
		"n":     func(s *tally) any { return s.N },
		"label": func(s *tally) any { return s.Label },
	}})
	return reg
}

// secretPolicy refuses subscriptions to actors whose ID starts with
// "secret" unless the caller is "admin".
func secretPolicy(ctx context.Context, req actor.Request) error {
	if strings.HasPrefix(req.Ref.ID, "secret") && req.Caller != "admin" {
		return errors.New("only admin may watch secrets")
	}
	return nil
}

var testKeys = Keyring{Current: "k2", Keys: map[string][]byte{
	"k1": []byte("0123456789abcdef0123456789abcdef-one"),
	"k2": []byte("0123456789abcdef0123456789abcdef-two"),
}}

// startHost starts a host over be with the test registry.
func startHost(t *testing.T, be store.Backend, mod ...func(*host.Config)) *host.Host {
	t.Helper()
	cfg := host.Config{Backend: be, Registry: testRegistry(), Workers: 2, PollInterval: 50 * time.Millisecond,
		Policies: actor.Policies{Subscription: secretPolicy}, Logger: testutil.Logger(), Metrics: prometheus.NewRegistry()}
	for _, m := range mod {
		m(&cfg)
	}
	h, err := host.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := h.Start(testutil.Context(t)); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = h.Shutdown(context.Background()) })
	return h
}

// server is a realtime handler on a loopback HTTP server.
type server struct {
	h   *Handler
	srv *httptest.Server
	reg *prometheus.Registry
	url string // ws://…/rt
}

// startServer serves a Handler for h at /rt; mod adjusts its config.
func startServer(t *testing.T, h *host.Host, mod ...func(*Config)) *server {
	t.Helper()
	reg := prometheus.NewRegistry()
	cfg := Config{Host: h, Keys: testKeys, Metrics: reg, Logger: testutil.Logger(),
		Identify: func(r *http.Request) (string, any, error) {
			if u := r.URL.Query().Get("user"); u == "blocked" {
				return "", nil, errors.New("this user may not connect")
			} else if u != "" {
				return u, u, nil
			}
			return "anonymous", nil, nil
		}}
	for _, m := range mod {
		m(&cfg)
	}
	rt, err := New(testutil.Context(t), cfg)
	if err != nil {
		t.Fatal(err)
	}
	mux := http.NewServeMux()
	mux.Handle("/rt", rt)
	mux.Handle("/rt/", rt)
	srv := httptest.NewServer(mux)
	t.Cleanup(func() {
		_ = rt.Close()
		srv.Close()
	})
	return &server{h: rt, srv: srv, reg: reg, url: "ws" + strings.TrimPrefix(srv.URL, "http") + "/rt"}
}

// metric reads a counter or gauge (with an optional code label).
func (s *server) metric(t *testing.T, name, code string) float64 {
	t.Helper()
	mfs, err := s.reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
		for _, m := range mf.GetMetric() {
			if code != "" && (len(m.GetLabel()) == 0 || m.GetLabel()[0].GetValue() != code) {
				continue
			}
			if g := m.GetGauge(); g != nil {
				return g.GetValue()
			}
			return m.GetCounter().GetValue()
		}
	}
	return 0
}

// frame is any server frame, decoded loosely for assertions.
type frame struct {
	Op      string                     `json:"op"`
	Ref     *actor.Ref                 `json:"ref"`
	Version int64                      `json:"version"`
	Values  map[string]json.RawMessage `json:"values"`
	Changes map[string]json.RawMessage `json:"changes"`
	Code    string                     `json:"code"`
	Message string                     `json:"message"`
}

func (f frame) String() string {
	b, _ := json.Marshal(f)
	return string(b)
}

// client is a test WebSocket client.
type client struct {
	t  *testing.T
	ws *websocket.Conn
}

func dial(t *testing.T, url string, header http.Header) *client {
	t.Helper()
	ws, resp, err := websocket.DefaultDialer.Dial(url, header)
	if err != nil {
		status := 0
		if resp != nil {
			status = resp.StatusCode
		}
		t.Fatalf("dial %s: %v (HTTP %d)", url, err, status)
	}
	t.Cleanup(func() { ws.Close() })
	return &client{t: t, ws: ws}
}

func (c *client) send(v any) {
	c.t.Helper()
	if err := c.ws.WriteJSON(v); err != nil {
		c.t.Fatal(err)
	}
}

func (c *client) sendRaw(typ int, b []byte) {
	c.t.Helper()
	if err := c.ws.WriteMessage(typ, b); err != nil {
		c.t.Fatal(err)
	}
}

// next reads one frame, failing after 30 s (generous: the machine the
// suites run on is shared, and a worker process may take seconds to start).
func (c *client) next() frame {
	c.t.Helper()
	_ = c.ws.SetReadDeadline(time.Now().Add(30 * time.Second))
	var f frame
	if err := c.ws.ReadJSON(&f); err != nil {
		c.t.Fatalf("reading a frame: %v", err)
	}
	return f
}

// expect reads one frame and checks its op (and code, for errors).
func (c *client) expect(op, code string) frame {
	c.t.Helper()
	f := c.next()
	if f.Op != op || f.Code != code {
		c.t.Fatalf("got %s, want op %q code %q", f, op, code)
	}
	return f
}

// quiet checks that no frame arrives for d.
func (c *client) quiet(d time.Duration) {
	c.t.Helper()
	_ = c.ws.SetReadDeadline(time.Now().Add(d))
	var f frame
	if err := c.ws.ReadJSON(&f); err == nil {
		c.t.Fatalf("unexpected frame %s", f)
	}
}

func subscribeFrame(ref actor.Ref, token string, since *int64, obs ...string) map[string]any {
	m := map[string]any{"op": "subscribe", "ref": ref, "token": token}
	if since != nil {
		m["since"] = *since
	}
	if len(obs) > 0 {
		m["observables"] = obs
	}
	return m
}

// token signs a token for ref's n and label, valid for a minute.
func token(t *testing.T, ref actor.Ref, obs ...string) string {
	t.Helper()
	if len(obs) == 0 {
		obs = []string{"n", "label"}
	}
	tok, err := testKeys.Sign(Claims{Ref: ref, Observables: obs, Expires: time.Now().Add(time.Minute)})
	if err != nil {
		t.Fatal(err)
	}
	return tok
}

// intValue decodes an observable's JSON number.
func intValue(t *testing.T, raw json.RawMessage) int {
	t.Helper()
	var n int
	if err := json.Unmarshal(raw, &n); err != nil {
		t.Fatalf("value %s is not a number: %v", raw, err)
	}
	return n
}

// untilValue reads updates until observable name (a counter that only
// grows) reaches at least want, and returns that frame and the value:
// adjacent updates may be merged, so a value in between can be skipped.
func (c *client) untilValue(name string, want int) (frame, int) {
	c.t.Helper()
	for i := 0; i < 1000; i++ {
		f := c.next()
		if f.Op != OpUpdate && f.Op != OpSnapshot {
			c.t.Fatalf("waiting for %s=%d got %s", name, want, f)
		}
		vals := f.Changes
		if f.Op == OpSnapshot {
			vals = f.Values
		}
		if v, ok := vals[name]; ok {
			if n := intValue(c.t, v); n >= want {
				return f, n
			}
		}
	}
	c.t.Fatalf("%s never reached %d", name, want)
	return frame{}, 0
}

func ask(t *testing.T, h *host.Host, ref actor.Ref, msg string, args any) {
	t.Helper()
	if _, err := h.Ask(testutil.Context(t), ref, msg, args); err != nil {
		t.Fatal(fmt.Errorf("ask %s %s: %w", ref, msg, err))
	}
}
