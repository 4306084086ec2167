package files

import (
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/ductus/ductus/internal/testutil"
)

// engine stands in for the integration engine's intake: it keeps what a
// Commit stores, in memory, with the same all-or-nothing rule.
type engine struct {
	mu       sync.Mutex
	progress map[string]Progress
	batches  []Batch
	records  []string // every stored record's data, in commit order
	rejected []Rejected
	finished []string
	calls    int // Commit calls, stored or not
	// refuse, when set, is asked before each Commit (n counts calls from
	// 1): an error refuses the batch; store stores it anyway before
	// failing, as a commit whose answer was lost does.
	refuse     func(n int, b Batch) (store bool, err error)
	onFinished func(name string)
}

func newEngine() *engine { return &engine{progress: map[string]Progress{}} }

func (e *engine) commit(_ context.Context, b Batch) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.calls++
	var err error
	store := true
	if e.refuse != nil {
		if s, rerr := e.refuse(e.calls, b); rerr != nil {
			store, err = s, rerr
		}
	}
	if !store {
		return err
	}
	e.batches = append(e.batches, b)
	for _, r := range b.Records {
		e.records = append(e.records, string(r.Data))
	}
	e.rejected = append(e.rejected, b.Rejected...)
	p := b.Progress
	p.Header = append([]byte(nil), p.Header...)
	// As a database column keeps it: microseconds, no zone or monotonic
	// reading.
	p.ModTime = time.UnixMicro(p.ModTime.UnixMicro())
	e.progress[b.File.Name] = p
	return err
}

func (e *engine) getProgress(_ context.Context, name string) (Progress, bool, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	p, ok := e.progress[name]
	return p, ok, nil
}

func (e *engine) finish(_ context.Context, name string) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.onFinished != nil {
		e.onFinished(name)
	}
	delete(e.progress, name)
	e.finished = append(e.finished, name)
	return nil
}

func (e *engine) snapshot() (records []string, batches []Batch, finished []string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	return append([]string(nil), e.records...), append([]Batch(nil), e.batches...), append([]string(nil), e.finished...)
}

// newWatcher makes a watcher on dir with a short poll wired to e; change
// adjusts the configuration first.
func newWatcher(t *testing.T, dir string, e *engine, change func(*WatcherConfig)) (*Watcher, *testutil.SyncBuffer) {
	t.Helper()
	logs := &testutil.SyncBuffer{}
	cfg := WatcherConfig{
		Dir: dir, Poll: 10 * time.Millisecond, RetryInitial: 10 * time.Millisecond, RetryMax: 20 * time.Millisecond,
		Logger:   slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug})),
		Commit:   e.commit,
		Progress: e.getProgress,
		Finished: e.finish,
	}
	if change != nil {
		change(&cfg)
	}
	w, err := NewWatcher(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return w, logs
}

// polls runs n polls of w and returns the last error.
func polls(t *testing.T, w *Watcher, n int) error {
	t.Helper()
	var err error
	for range n {
		err = w.poll(t.Context())
	}
	return err
}

// base is a fixed past time files are dated from, so tests set the order.
var base = time.Date(2026, 3, 1, 8, 0, 0, 0, time.UTC)

// put writes a file and dates it at base plus minutes.
func put(t *testing.T, dir, name, content string, minutes int) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	at := base.Add(time.Duration(minutes) * time.Minute)
	if err := os.Chtimes(p, at, at); err != nil {
		t.Fatal(err)
	}
	return p
}

func exists(t *testing.T, p string) bool {
	t.Helper()
	_, err := os.Lstat(p)
	if err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	return err == nil
}
