package main

import (
	"bufio"
	"bytes"
	"context"
	"crypto/rand"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/gorilla/websocket"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/ductus/ductus/actor"
	"github.com/ductus/ductus/realtime"
	"github.com/ductus/ductus/runtime/host"
)

// The realtime scenarios: a realtime.Handler over a bench host on a
// loopback listener, with WebSocket clients subscribed to one counter
// actor's "n".

// rtServer is a realtime handler served on 127.0.0.1.
type rtServer struct {
	rt   *realtime.Handler
	srv  *http.Server
	addr string
	keys realtime.Keyring
}

func startRealtime(ctx context.Context, h *host.Host) (*rtServer, error) {
	key := make([]byte, 32)
	_, _ = rand.Read(key)
	keys := realtime.Keyring{Current: "b", Keys: map[string][]byte{"b": key}}
	rt, err := realtime.New(ctx, realtime.Config{Host: h, Keys: keys, MaxConnsPerCaller: -1, Metrics: prometheus.NewRegistry()})
	if err != nil {
		return nil, err
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		rt.Close()
		return nil, err
	}
	s := &rtServer{rt: rt, srv: &http.Server{Handler: rt}, addr: ln.Addr().String(), keys: keys}
	go func() { _ = s.srv.Serve(ln) }()
	return s, nil
}

func (s *rtServer) close() {
	s.rt.Close()
	s.srv.Close()
}

// subscriber is one client; got[v] is when it received n = v.
type subscriber struct {
	ws  *websocket.Conn
	got []atomic.Int64
}

// subscribe opens n clients subscribed to ref's "n", each recording when
// it received every value up to max, and counting update frames.
func (s *rtServer) subscribe(ctx context.Context, ref actor.Ref, n, max int, frames *atomic.Int64) ([]*subscriber, error) {
	tok, err := s.keys.Sign(realtime.Claims{Ref: ref, Observables: []string{"n"}, Expires: time.Now().Add(time.Hour)})
	if err != nil {
		return nil, err
	}
	subs := make([]*subscriber, n)
	var ready sync.WaitGroup
	for i := range subs {
		ws, _, err := websocket.DefaultDialer.DialContext(ctx, "ws://"+s.addr+"/", nil)
		if err != nil {
			return nil, fmt.Errorf("client %d: %w", i, err)
		}
		sub := &subscriber{ws: ws, got: make([]atomic.Int64, max+1)}
		subs[i] = sub
		if err := ws.WriteJSON(map[string]any{"op": "subscribe", "ref": ref, "token": tok}); err != nil {
			return nil, err
		}
		ready.Add(1)
		go func() {
			first := true
			for {
				_, msg, err := ws.ReadMessage()
				if err != nil {
					if first {
						ready.Done()
					}
					return
				}
				at := time.Now().UnixNano()
				if bytes.HasPrefix(msg, []byte(`{"op":"update"`)) {
					frames.Add(1)
				}
				// The client's own cost stays small (it shares the
				// machine with the server): find "n": rather than decode.
				if v, ok := valueOfN(msg); ok && v >= 0 && v <= max {
					sub.got[v].CompareAndSwap(0, at)
				}
				if first {
					first = false
					ready.Done()
				}
			}
		}()
	}
	ready.Wait()
	return subs, nil
}

// valueOfN reads the integer after "n": in a snapshot or update frame.
func valueOfN(msg []byte) (int, bool) {
	i := bytes.Index(msg, []byte(`"n":`))
	if i < 0 {
		return 0, false
	}
	rest := msg[i+4:]
	j := 0
	for j < len(rest) && rest[j] >= '0' && rest[j] <= '9' {
		j++
	}
	v, err := strconv.Atoi(string(rest[:j]))
	return v, err == nil
}

func closeAll(subs []*subscriber) {
	for _, s := range subs {
		if s != nil {
			s.ws.Close()
		}
	}
}

// realtimeLatency: one actor with 1,000 subscribers; each update is told
// after every subscriber has the previous one, and its latency is from
// before the Tell (so it includes the turn: wake-up, claim, run, commit)
// to each client's receipt.
func realtimeLatency(ctx context.Context, r *runner) error {
	clients, updates := r.n(1000, 10), r.n(100, 5)
	return r.fresh(ctx, nil, func(be backend, _ string) error {
		w := &world{}
		h, err := w.newHost(ctx, be, func(c *host.Config) { c.BatchSize = 1 })
		if err != nil {
			return err
		}
		defer h.Shutdown(ctx)
		s, err := startRealtime(ctx, h)
		if err != nil {
			return err
		}
		defer s.close()
		ref := actor.Ref{Type: counterType, ID: "rt-latency"}
		var frames atomic.Int64
		subs, err := s.subscribe(ctx, ref, clients, updates, &frames)
		defer closeAll(subs)
		if err != nil {
			return err
		}
		var lat, firsts []time.Duration
		for v := 1; v <= updates; v++ {
			t0 := time.Now()
			if _, err := h.Tell(ctx, ref, "noop", nil); err != nil {
				return err
			}
			err := waitFor(ctx, fmt.Sprintf("update %d reaching every client", v), clients, func() int {
				n := 0
				for _, s := range subs {
					if s.got[v].Load() != 0 {
						n++
					}
				}
				return n
			})
			if err != nil {
				return err
			}
			fastest := time.Duration(1 << 62)
			for _, s := range subs {
				d := time.Duration(s.got[v].Load() - t0.UnixNano())
				lat = append(lat, d)
				fastest = min(fastest, d)
			}
			firsts = append(firsts, fastest)
		}
		sortDurations(firsts)
		// The first client's receipt is the turn and the broadcast read;
		// the rest of the spread is the fan-out to every connection.
		fmt.Fprintf(os.Stderr, "    first client's receipt: p50 %v\n", firsts[len(firsts)/2].Round(time.Microsecond))
		sortDurations(lat)
		r.print("realtime_update_latency_p50_ms", msAt(lat, 0.50), "ms", len(lat))
		r.print("realtime_update_latency_p99_ms", msAt(lat, 0.99), "ms", len(lat))
		return nil
	})
}

// realtimeThroughput: one actor updated as fast as it can (a backlog of
// messages, one commit and one change each) with 100 subscribers; the
// figure is updates per second from the first Tell until the last update
// reached every subscriber.
func realtimeThroughput(ctx context.Context, r *runner) error {
	clients, updates := r.n(100, 5), r.n(2000, 20)
	return r.fresh(ctx, nil, func(be backend, _ string) error {
		w := &world{}
		h, err := w.newHost(ctx, be, func(c *host.Config) { c.BatchSize = 1 })
		if err != nil {
			return err
		}
		defer h.Shutdown(ctx)
		s, err := startRealtime(ctx, h)
		if err != nil {
			return err
		}
		defer s.close()
		ref := actor.Ref{Type: counterType, ID: "rt-throughput"}
		var frames atomic.Int64
		subs, err := s.subscribe(ctx, ref, clients, updates, &frames)
		defer closeAll(subs)
		if err != nil {
			return err
		}
		batch := make([]actor.Envelope, updates)
		for i := range batch {
			batch[i] = actor.Envelope{Ref: ref, Message: "noop"}
		}
		start := time.Now()
		if _, err := h.TellBatch(ctx, batch); err != nil {
			return err
		}
		err = waitFor(ctx, "the last update reaching every client", clients, func() int {
			n := 0
			for _, s := range subs {
				if s.got[updates].Load() != 0 {
					n++
				}
			}
			return n
		})
		if err != nil {
			return err
		}
		elapsed := time.Since(start)
		// The figure is the actor's updates per second, each reaching
		// all clients. A client that falls behind gets adjacent updates
		// merged into one frame (or, past its queue, a snapshot), so the
		// values a client sees are noted apart.
		seen := 0
		for _, s := range subs {
			for v := 1; v <= updates; v++ {
				if s.got[v].Load() != 0 {
					seen++
				}
			}
		}
		fmt.Fprintf(os.Stderr, "    %d update frames to %d clients; %d of %d values seen by them\n", frames.Load(), clients, seen, clients*updates)
		r.print("realtime_updates_per_s", float64(updates)/elapsed.Seconds(), "updates/s", updates)
		return nil
	})
}

func sortDurations(d []time.Duration) { slices.Sort(d) }

// idleClientEnv makes the bench binary a client process for
// realtime_idle_connection_kb (checked in init, before flags: the
// scenario starts it as a child): it opens the given number of WebSocket
// connections to the address, prints READY, and holds them until stdin
// closes. The clients live in their own process so the server's memory is
// measured alone and neither process needs 20,000 descriptors.
const idleClientEnv = "BENCH_RT_IDLE_CLIENT"

func init() {
	if v := os.Getenv(idleClientEnv); v != "" {
		if err := idleClient(v); err != nil {
			fmt.Fprintln(os.Stderr, "bench idle client:", err)
			os.Exit(1)
		}
		os.Exit(0)
	}
}

// raiseFileLimit lifts the open-files soft limit to the hard one.
func raiseFileLimit() error {
	var l syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &l); err != nil {
		return err
	}
	l.Cur = l.Max
	return syscall.Setrlimit(syscall.RLIMIT_NOFILE, &l)
}

// idleClient holds n raw WebSocket connections (a handshake, then
// nothing: no goroutine or buffer per connection on this side).
func idleClient(spec string) error {
	addr, nStr, _ := strings.Cut(spec, ",")
	n, err := strconv.Atoi(nStr)
	if err != nil {
		return fmt.Errorf("%s=%q: want addr,count", idleClientEnv, spec)
	}
	if err := raiseFileLimit(); err != nil {
		return err
	}
	conns := make([]net.Conn, 0, n)
	buf := make([]byte, 1024)
	for i := 0; i < n; i++ {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			return fmt.Errorf("connection %d: %w", i, err)
		}
		fmt.Fprintf(c, "GET / HTTP/1.1\r\nHost: %s\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n", addr)
		resp := ""
		for !strings.Contains(resp, "\r\n\r\n") && len(resp) < 4096 {
			k, err := c.Read(buf)
			if err != nil {
				return fmt.Errorf("connection %d handshake: %w", i, err)
			}
			resp += string(buf[:k])
		}
		if !strings.HasPrefix(resp, "HTTP/1.1 101") {
			return fmt.Errorf("connection %d: %q", i, strings.SplitN(resp, "\r\n", 2)[0])
		}
		conns = append(conns, c)
	}
	fmt.Println("READY")
	_, _ = bufio.NewReader(os.Stdin).ReadString('\n')
	for _, c := range conns {
		c.Close()
	}
	return nil
}

// realtimeIdle: the server's memory per idle connection (Go heap in use
// plus goroutine stacks, after a GC, with and without the connections),
// with 10,000 connections held by a child process.
func realtimeIdle(ctx context.Context, r *runner) error {
	n := r.n(10_000, 50)
	if err := raiseFileLimit(); err != nil {
		return err
	}
	return r.fresh(ctx, nil, func(be backend, _ string) error {
		w := &world{}
		h, err := w.newHost(ctx, be, nil)
		if err != nil {
			return err
		}
		defer h.Shutdown(ctx)
		s, err := startRealtime(ctx, h)
		if err != nil {
			return err
		}
		defer s.close()
		before := liveBytes()
		self, err := os.Executable()
		if err != nil {
			return err
		}
		cmd := exec.CommandContext(ctx, self)
		cmd.Env = append(os.Environ(), fmt.Sprintf("%s=%s,%d", idleClientEnv, s.addr, n))
		cmd.Stderr = os.Stderr
		cmd.SysProcAttr = workerAttr()
		stdin, err := cmd.StdinPipe()
		if err != nil {
			return err
		}
		out, err := cmd.StdoutPipe()
		if err != nil {
			return err
		}
		if err := cmd.Start(); err != nil {
			return err
		}
		defer func() { stdin.Close(); _ = cmd.Wait() }()
		line, err := bufio.NewReader(out).ReadString('\n')
		if err != nil || strings.TrimSpace(line) != "READY" {
			return fmt.Errorf("idle client process: %q %v", line, err)
		}
		time.Sleep(500 * time.Millisecond) // the last upgrades finish their bookkeeping
		after := liveBytes()
		r.print("realtime_idle_connection_kb", float64(after-before)/float64(n)/1024, "KB", n)
		return nil
	})
}

// liveBytes is the Go heap in use plus goroutine stacks, after a GC.
func liveBytes() int64 {
	runtime.GC()
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return int64(m.HeapInuse + m.StackInuse)
}
