package files

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/ductus/ductus/integration/config"
	"github.com/ductus/ductus/integration/format"
)

func TestFileWrittenInPiecesIsReadOnlyWhenStable(t *testing.T) {
	dir := t.TempDir()
	e := newEngine()
	w, _ := newWatcher(t, dir, e, func(c *WatcherConfig) {
		c.Split, c.Kind = config.SplitRecords, format.SplitLines
	})
	p := filepath.Join(dir, "feed.txt")
	f, err := os.Create(p)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	steps := []string{"one\n", "two\n", "thr"}
	for i, s := range steps {
		if _, err := f.WriteString(s); err != nil {
			t.Fatal(err)
		}
		if err := polls(t, w, 1); err != nil {
			t.Fatal(err)
		}
		if recs, _, _ := e.snapshot(); len(recs) != 0 {
			t.Fatalf("after piece %d the growing file was read: %q", i+1, recs)
		}
	}
	// The same size with a new time is a change too.
	if _, err := f.WriteAt([]byte("xyz"), 8); err != nil {
		t.Fatal(err)
	}
	later := time.Now().Add(time.Hour)
	if err := os.Chtimes(p, later, later); err != nil {
		t.Fatal(err)
	}
	if err := polls(t, w, 1); err != nil {
		t.Fatal(err)
	}
	if recs, _, _ := e.snapshot(); len(recs) != 0 {
		t.Fatalf("a file whose time changed was read: %q", recs)
	}
	if _, err := f.WriteString("\n"); err != nil {
		t.Fatal(err)
	}
	if err := os.Chtimes(p, later.Add(time.Minute), later.Add(time.Minute)); err != nil {
		t.Fatal(err)
	}
	if err := polls(t, w, 2); err != nil {
		t.Fatal(err)
	}
	recs, _, fin := e.snapshot()
	if want := []string{"one", "two", "xyz"}; !slices.Equal(recs, want) {
		t.Fatalf("records %q, want %q", recs, want)
	}
	if !slices.Equal(fin, []string{"feed.txt"}) {
		t.Fatalf("finished %q", fin)
	}
}

func TestOldestFirstAndSkippedFiles(t *testing.T) {
	dir := t.TempDir()
	e := newEngine()
	w, _ := newWatcher(t, dir, e, func(c *WatcherConfig) { c.Pattern = "*.hl7" })
	put(t, dir, "c.hl7", "MSH|c\r", 1)
	put(t, dir, "a.hl7", "MSH|a\r", 3)
	put(t, dir, "b.hl7", "MSH|b\r", 2)
	put(t, dir, "b2.hl7", "MSH|b2\r", 2) // same time as b.hl7: by name
	put(t, dir, ".hidden.hl7", "MSH|hidden\r", 0)
	put(t, dir, ".tmp-123", "partial", 0)
	put(t, dir, "notes.txt", "not matching", 0)
	put(t, dir, "sub/deep.hl7", "MSH|deep\r", 0)
	if err := os.Symlink(filepath.Join(dir, "c.hl7"), filepath.Join(dir, "link.hl7")); err != nil {
		t.Fatal(err)
	}
	if err := polls(t, w, 2); err != nil {
		t.Fatal(err)
	}
	recs, _, fin := e.snapshot()
	if want := []string{"MSH|c\r", "MSH|b\r", "MSH|b2\r", "MSH|a\r"}; !slices.Equal(recs, want) {
		t.Fatalf("records %q, want %q", recs, want)
	}
	if want := []string{"c.hl7", "b.hl7", "b2.hl7", "a.hl7"}; !slices.Equal(fin, want) {
		t.Fatalf("finished %q, want %q", fin, want)
	}
	for _, name := range []string{".hidden.hl7", ".tmp-123", "notes.txt", "sub/deep.hl7", "link.hl7"} {
		if !exists(t, filepath.Join(dir, name)) {
			t.Errorf("%s was taken although it should be skipped", name)
		}
	}
	for _, name := range []string{"a.hl7", "b.hl7", "b2.hl7", "c.hl7"} {
		if !exists(t, filepath.Join(dir, "done", name)) {
			t.Errorf("%s is not in done/", name)
		}
	}
}

func TestFailingFileStopsThePoll(t *testing.T) {
	dir := t.TempDir()
	e := newEngine()
	e.refuse = func(n int, b Batch) (bool, error) {
		if b.File.Name == "first.txt" && n <= 2 {
			return false, errors.New("database down")
		}
		return false, nil
	}
	w, _ := newWatcher(t, dir, e, nil)
	put(t, dir, "first.txt", "1", 1)
	put(t, dir, "second.txt", "2", 2)
	if err := polls(t, w, 1); err != nil {
		t.Fatal(err)
	}
	for i := range 2 {
		if err := w.poll(t.Context()); err == nil || !strings.Contains(err.Error(), "database down") {
			t.Fatalf("poll %d: err %v, want the commit's", i, err)
		}
		if _, batches, _ := e.snapshot(); len(batches) != 0 {
			t.Fatalf("poll %d: a later file was committed while the first failed: %+v", i, batches)
		}
	}
	if err := polls(t, w, 1); err != nil {
		t.Fatal(err)
	}
	if recs, _, fin := e.snapshot(); !slices.Equal(recs, []string{"1", "2"}) || !slices.Equal(fin, []string{"first.txt", "second.txt"}) {
		t.Fatalf("records %q finished %q", recs, fin)
	}
}

func TestAfterMoveAndDelete(t *testing.T) {
	for _, tc := range []struct {
		name     string
		after    config.After
		moveTo   string
		existing []string // already in the move-to folder
		wantAt   string   // where the file ends, relative to dir; "" = gone
	}{
		{name: "move", after: config.AfterMove, wantAt: "done/lab.csv"},
		{name: "move with a collision", after: config.AfterMove, existing: []string{"lab.csv"}, wantAt: "done/lab-1.csv"},
		{name: "move with two collisions", after: config.AfterMove, existing: []string{"lab.csv", "lab-1.csv"}, wantAt: "done/lab-2.csv"},
		{name: "move to a named folder", after: config.AfterMove, moveTo: "archive/2026", wantAt: "archive/2026/lab.csv"},
		{name: "delete", after: config.AfterDelete},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			for _, name := range tc.existing {
				put(t, dir, filepath.Join("done", name), "older", 0)
			}
			e := newEngine()
			src := put(t, dir, "lab.csv", "a,b\n1,2\n", 1)
			var atFinish []bool
			e.onFinished = func(string) {
				atFinish = []bool{exists(t, src), tc.wantAt != "" && exists(t, filepath.Join(dir, tc.wantAt))}
			}
			w, _ := newWatcher(t, dir, e, func(c *WatcherConfig) {
				c.After, c.MoveTo = tc.after, tc.moveTo
				c.Split, c.Kind = config.SplitRecords, format.SplitCSV
			})
			if err := polls(t, w, 2); err != nil {
				t.Fatal(err)
			}
			recs, _, fin := e.snapshot()
			if !slices.Equal(recs, []string{"a,b\n1,2\n"}) || !slices.Equal(fin, []string{"lab.csv"}) {
				t.Fatalf("records %q finished %q", recs, fin)
			}
			if want := []bool{false, tc.wantAt != ""}; !slices.Equal(atFinish, want) {
				t.Fatalf("when Finished was called (source there, destination there) = %v, want %v", atFinish, want)
			}
			if tc.wantAt != "" {
				if b, err := os.ReadFile(filepath.Join(dir, tc.wantAt)); err != nil || string(b) != "a,b\n1,2\n" {
					t.Fatalf("moved file: %q, %v", b, err)
				}
			}
			for _, name := range tc.existing {
				if b, _ := os.ReadFile(filepath.Join(dir, "done", name)); string(b) != "older" {
					t.Fatalf("the earlier done/%s was overwritten: %q", name, b)
				}
			}
			if _, ok := e.progress["lab.csv"]; ok {
				t.Fatal("the progress row is still there after Finished")
			}
		})
	}
}

func TestDoneSavedButNotMovedIsOnlyMoved(t *testing.T) {
	dir := t.TempDir()
	e := newEngine()
	src := put(t, dir, "adt.hl7", "MSH|1\rMSH|2\r", 1)
	fi, err := os.Stat(src)
	if err != nil {
		t.Fatal(err)
	}
	// A crash after the last commit, before the move.
	e.progress["adt.hl7"] = Progress{Name: "adt.hl7", Size: fi.Size(), ModTime: progressTime(fi.ModTime()), Offset: fi.Size(), Records: 2, Done: true}
	w, logs := newWatcher(t, dir, e, func(c *WatcherConfig) {
		c.Split, c.Kind = config.SplitRecords, format.SplitHL7
	})
	if err := polls(t, w, 2); err != nil {
		t.Fatal(err)
	}
	if e.calls != 0 {
		t.Fatalf("a committed file was read again: %d commits", e.calls)
	}
	if exists(t, src) || !exists(t, filepath.Join(dir, "done", "adt.hl7")) {
		t.Fatal("the file was not moved")
	}
	if _, _, fin := e.snapshot(); !slices.Equal(fin, []string{"adt.hl7"}) {
		t.Fatalf("finished %q", fin)
	}
	if logs.Count("file already committed") != 1 {
		t.Fatal("no log line says the file was only finished")
	}
}

func TestFinishedFailureIsRetriedFirst(t *testing.T) {
	dir := t.TempDir()
	e := newEngine()
	failures := 1
	w, _ := newWatcher(t, dir, e, func(c *WatcherConfig) {
		c.Finished = func(ctx context.Context, name string) error {
			if failures > 0 {
				failures--
				return errors.New("database down")
			}
			return e.finish(ctx, name)
		}
	})
	put(t, dir, "a.txt", "a", 1)
	put(t, dir, "b.txt", "b", 2)
	if err := polls(t, w, 2); err == nil {
		t.Fatal("a failed Finished was not reported")
	}
	if recs, _, _ := e.snapshot(); !slices.Equal(recs, []string{"a"}) {
		t.Fatalf("records %q: b was read although a's finish failed", recs)
	}
	if err := polls(t, w, 1); err != nil {
		t.Fatal(err)
	}
	if recs, _, fin := e.snapshot(); !slices.Equal(recs, []string{"a", "b"}) || !slices.Equal(fin, []string{"a.txt", "b.txt"}) {
		t.Fatalf("records %q finished %q", recs, fin)
	}
}

func TestOversizedUnsplitFileIsLeftAndReportedOnce(t *testing.T) {
	dir := t.TempDir()
	e := newEngine()
	w, logs := newWatcher(t, dir, e, func(c *WatcherConfig) { c.MaxFileBytes = 100 })
	big := put(t, dir, "big.json", `{"x":"`+strings.Repeat("x", 200)+`"}`, 1)
	put(t, dir, "small.json", `{"x":1}`, 2)
	put(t, dir, "exact.json", `{"x":"`+strings.Repeat("y", 92)+`"}`, 3) // 100 bytes: allowed
	put(t, dir, "empty.json", "", 4)
	if err := polls(t, w, 6); err != nil {
		t.Fatal(err)
	}
	recs, batches, fin := e.snapshot()
	if len(recs) != 2 || recs[0] != `{"x":1}` || len(recs[1]) != 100 {
		t.Fatalf("records %q", recs)
	}
	if !slices.Equal(fin, []string{"small.json", "exact.json", "empty.json"}) {
		t.Fatalf("finished %q", fin)
	}
	if !exists(t, big) {
		t.Fatal("the oversized file was not left in place")
	}
	if n := logs.Count("larger than the limit"); n != 1 {
		t.Fatalf("the oversized file was reported %d times over 6 polls, want once", n)
	}
	last := batches[len(batches)-1]
	if len(last.Rejected) != 1 || last.Rejected[0].Reason != "the file is empty" || !last.Progress.Done {
		t.Fatalf("the empty file's batch: %+v", last)
	}
	for _, b := range batches[:2] {
		if len(b.Records) != 1 || b.Records[0].Start != 0 || b.Records[0].End != b.File.Size || !b.Progress.Done || b.Progress.Offset != b.File.Size {
			t.Fatalf("an unsplit file's batch: %+v", b)
		}
	}
	// A changed oversized file is judged again: now it fits.
	if err := os.WriteFile(big, []byte(`{"x":2}`), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := polls(t, w, 2); err != nil {
		t.Fatal(err)
	}
	if recs, _, _ := e.snapshot(); recs[len(recs)-1] != `{"x":2}` {
		t.Fatalf("the shrunk file was not read: %q", recs)
	}
}

func TestRunRetriesAndStopsWithTheContext(t *testing.T) {
	dir := t.TempDir()
	e := newEngine()
	e.refuse = func(n int, _ Batch) (bool, error) {
		if n <= 2 {
			return false, errors.New("database down")
		}
		return false, nil
	}
	finished := make(chan string, 10)
	e.onFinished = func(name string) { finished <- name }
	w, logs := newWatcher(t, dir, e, func(c *WatcherConfig) {
		c.Split, c.Kind = config.SplitRecords, format.SplitLines
	})
	put(t, dir, "x.jsonl", "{\"a\":1}\n{\"a\":2}\n", 1)
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() { done <- w.Run(ctx) }()
	select {
	case name := <-finished:
		if name != "x.jsonl" {
			t.Fatalf("finished %q", name)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the file was never finished")
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("Run returned %v after the context ended", err)
	}
	if recs, _, _ := e.snapshot(); !slices.Equal(recs, []string{`{"a":1}`, `{"a":2}`}) {
		t.Fatalf("records %q", recs)
	}
	if n := logs.Count("file source failed"); n != 2 {
		t.Fatalf("%d failures logged, want 2", n)
	}
	if err := w.Run(t.Context()); err == nil {
		t.Fatal("a second Run was allowed")
	}
}

func TestNewWatcherRefusesBadConfig(t *testing.T) {
	dir := t.TempDir()
	e := newEngine()
	ok := WatcherConfig{Dir: dir, Commit: e.commit, Progress: e.getProgress, Finished: e.finish}
	for _, tc := range []struct {
		name   string
		change func(*WatcherConfig)
		want   string
	}{
		{"no folder", func(c *WatcherConfig) { c.Dir = "" }, "Dir"},
		{"missing folder", func(c *WatcherConfig) { c.Dir = filepath.Join(dir, "nope") }, "no such file"},
		{"bad pattern", func(c *WatcherConfig) { c.Pattern = "[" }, "pattern"},
		{"pattern with a folder", func(c *WatcherConfig) { c.Pattern = "a/*.hl7" }, "pattern"},
		{"records without a kind", func(c *WatcherConfig) { c.Split = config.SplitRecords }, "record kind"},
		{"unknown split", func(c *WatcherConfig) { c.Split = "lines" }, "unknown split"},
		{"unknown after", func(c *WatcherConfig) { c.After = "archive" }, "unknown after"},
		{"move into itself", func(c *WatcherConfig) { c.MoveTo = "." }, "would be read again"},
		{"no callbacks", func(c *WatcherConfig) { c.Commit = nil }, "callbacks"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := ok
			tc.change(&cfg)
			_, err := NewWatcher(cfg)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err %v, want one mentioning %q", err, tc.want)
			}
		})
	}
}

func TestConfigFrom(t *testing.T) {
	src := &config.FileSource{Path: "/in", Pattern: "*.csv", Poll: 2 * time.Second, Split: config.SplitRecords, After: config.AfterMove, MoveTo: "/in/done"}
	cfg, err := ConfigFrom(src, format.CSV)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Kind != format.SplitCSV || cfg.Dir != "/in" || cfg.MoveTo != "/in/done" || cfg.Poll != 2*time.Second || cfg.Pattern != "*.csv" {
		t.Fatalf("%+v", cfg)
	}
	if _, err := ConfigFrom(src, "xml"); err == nil {
		t.Fatal("an unknown format was accepted")
	}
}
