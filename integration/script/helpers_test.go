package script

import (
	"context"
	"log/slog"
	"os"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	v8 "rogchap.com/v8go"
)

// TestMain gives test contexts gc(), so tests can tell kept memory from
// garbage.
func TestMain(m *testing.M) {
	v8.SetFlags("--expose-gc")
	os.Exit(m.Run())
}

// newTestHost starts a host that is closed when the test ends.
func newTestHost(t testing.TB, cfg Config) *Host {
	t.Helper()
	if cfg.Isolates == 0 {
		cfg.Isolates = 1
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	h, err := NewHost(cfg)
	if err != nil {
		t.Fatalf("NewHost: %v", err)
	}
	t.Cleanup(func() { h.Close() })
	return h
}

// current is the published version of an interface (nil when none).
func (h *Host) current(name string) *loaded {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.ifaces[name]
}

// files turns name/source pairs into an Interface's files, sorted.
func files(pairs map[string]string) []File {
	var out []File
	for name, src := range pairs {
		out = append(out, File{Name: name, Source: []byte(src)})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

func mustLoad(t testing.TB, h *Host, spec Interface) {
	t.Helper()
	if err := h.Load(context.Background(), spec); err != nil {
		t.Fatalf("Load %s: %v", spec.Name, err)
	}
}

// loadJS loads a one-file interface.
func loadJS(t testing.TB, h *Host, name, src string) {
	t.Helper()
	mustLoad(t, h, Interface{Name: name, Files: files(map[string]string{"transform.js": src})})
}

func mustCall(t testing.TB, h *Host, iface, fn string, in Input) Result {
	t.Helper()
	res, err := h.Call(context.Background(), iface, fn, in)
	if err != nil {
		t.Fatalf("Call %s.%s: %v", iface, fn, err)
	}
	return res
}

func text(payload string) Input {
	return Input{Format: FormatText, Payload: []byte(payload), Meta: Meta{ID: "m1", ReceivedAt: time.Unix(1700000000, 0), Destination: "d1"}}
}

// records is a slog handler that keeps what it is given.
type records struct {
	mu    sync.Mutex
	lines []recordLine
}

type recordLine struct {
	Level   slog.Level
	Message string
	Attrs   map[string]string
}

type recordHandler struct {
	r     *records
	attrs []slog.Attr
}

func (h recordHandler) Enabled(context.Context, slog.Level) bool { return true }

func (h recordHandler) Handle(_ context.Context, rec slog.Record) error {
	line := recordLine{Level: rec.Level, Message: rec.Message, Attrs: map[string]string{}}
	for _, a := range h.attrs {
		line.Attrs[a.Key] = a.Value.String()
	}
	rec.Attrs(func(a slog.Attr) bool {
		line.Attrs[a.Key] = a.Value.String()
		return true
	})
	h.r.mu.Lock()
	h.r.lines = append(h.r.lines, line)
	h.r.mu.Unlock()
	return nil
}

func (h recordHandler) WithAttrs(as []slog.Attr) slog.Handler {
	return recordHandler{r: h.r, attrs: append(append([]slog.Attr(nil), h.attrs...), as...)}
}

func (h recordHandler) WithGroup(string) slog.Handler { return h }

func (r *records) find(substr string) (recordLine, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, l := range r.lines {
		if strings.Contains(l.Message, substr) {
			return l, true
		}
	}
	return recordLine{}, false
}
