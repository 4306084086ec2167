package files

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"time"

	"github.com/ductus/ductus/integration/config"
	"github.com/ductus/ductus/integration/format"
)

// Defaults of WatcherConfig.
const (
	DefaultPoll         = time.Second
	DefaultBatchRecords = 500
	DefaultBatchBytes   = 4 << 20
	DefaultMaxFileBytes = 256 << 20
	DefaultRetryInitial = time.Second
	DefaultRetryMax     = 60 * time.Second
	// PreviewBytes is how much of a rejected record too large to keep is
	// passed along, so an operator can tell what it was.
	PreviewBytes = 4 << 10
)

// FileID names one version of a file: the same name with another size or
// time is another file as far as progress goes.
type FileID struct {
	Name    string // the base name in the watched folder
	Size    int64
	ModTime time.Time // UTC, truncated to microseconds (see Progress)
}

// Progress is how far a file has been committed. The engine stores it with
// each batch and gives it back through WatcherConfig.Progress.
//
// ModTime is UTC and truncated to microseconds, the finest time every
// supported database keeps; the engine must store it at least that
// precisely, or an unchanged file would look changed and be read again.
type Progress struct {
	Name    string
	Size    int64
	ModTime time.Time
	// Offset is the byte offset just past the last record (or rejected
	// record) of the batch: reading resumes there.
	Offset int64
	// Records and Rejected count the file's records and rejected records
	// committed so far, over every run.
	Records  int64
	Rejected int64
	// Done is set with the file's last batch: the file is fully stored and
	// only its move or delete remains.
	Done bool
	// Header is a CSV file's header row, which every record carries and a
	// resumed read needs; nil for other formats.
	Header []byte
}

// Batch is what one Commit stores: records and the file's progress, in one
// transaction.
type Batch struct {
	File    FileID
	Records []format.Record
	// Rejected are the records of this stretch of the file that could not
	// be used, in file order (merge with Records by Start for the file's
	// order). The engine stores them as quarantined.
	Rejected []Rejected
	Progress Progress
}

// Rejected is a record the watcher could not pass on as a message.
type Rejected struct {
	// Start and End are the record's byte offsets in the file.
	Start, End int64
	// Reason says what is wrong, for the operator.
	Reason string
	// TooLarge is set when the record is over the record size limit.
	TooLarge bool
	// Data is the record's bytes [Start, End) as they are in the file (for
	// CSV without the header); of a record over the record size limit and
	// PreviewBytes, only its first PreviewBytes, with Truncated set.
	Data      []byte
	Truncated bool
}

// WatcherConfig says which folder to watch, how to cut its files and where
// the records go.
type WatcherConfig struct {
	// Dir is the watched folder.
	Dir string
	// Pattern is a filepath.Match pattern on the file's base name (default
	// "*").
	Pattern string
	// Poll is the interval between two looks at the folder (default 1 s); a
	// file must look the same in two of them to be read.
	Poll time.Duration
	// Split is config.SplitNone (a file is one record) or
	// config.SplitRecords (default none).
	Split config.Split
	// Kind is how records are cut with SplitRecords (format.SplitKindOf
	// the interface's format).
	Kind format.SplitKind
	// After is config.AfterMove (default) or config.AfterDelete.
	After config.After
	// MoveTo is the folder finished files are moved to, relative to Dir or
	// absolute (default "done"); it must be on Dir's filesystem.
	MoveTo string
	// MaxFileBytes caps files read whole with SplitNone (default 256 MiB):
	// a bigger file is left in place and reported once.
	MaxFileBytes int64
	// BatchRecords and BatchBytes bound a batch (default 500 records,
	// 4 MiB); a single record bigger than BatchBytes makes a batch alone.
	BatchRecords int
	BatchBytes   int
	// BufferSize and MaxRecord tune the splitter (format.SplitOptions).
	BufferSize int
	MaxRecord  int
	// NotUTF8: the files are in another character set, decoded record by
	// record by Commit (format.SplitOptions.NotUTF8).
	NotUTF8 bool
	// RetryInitial and RetryMax bound the back-off after a failure (default
	// 1 s doubling to 60 s).
	RetryInitial time.Duration
	RetryMax     time.Duration
	// Logger gets one line per file started and finished, a Debug line per
	// batch and the failures (default: discarded).
	Logger *slog.Logger

	// Held, when set and true, holds the watcher: it looks at nothing
	// until Held is false again (checked at each poll). The engine's
	// drain holds its file sources this way.
	Held func() bool
	// Commit stores the batch's records and progress in one transaction. An
	// error means the batch may or may not be stored: the watcher backs off
	// and resumes from the saved progress.
	Commit func(ctx context.Context, b Batch) error
	// Progress returns the last committed progress of the file name, false
	// when there is none.
	Progress func(ctx context.Context, name string) (Progress, bool, error)
	// Finished is called once the file has been moved or deleted, for the
	// engine to delete its progress.
	Finished func(ctx context.Context, name string) error
}

// ConfigFrom turns a resolved file source of an interface reading f into a
// WatcherConfig; the caller adds the callbacks and the logger.
func ConfigFrom(src *config.FileSource, f format.Name) (WatcherConfig, error) {
	if src == nil {
		return WatcherConfig{}, errors.New("files: no file source given")
	}
	cfg := WatcherConfig{
		Dir: src.Path, Pattern: src.Pattern, Poll: src.Poll, Split: src.Split,
		After: src.After, MoveTo: src.MoveTo, MaxFileBytes: src.MaxFileBytes,
	}
	if src.Split == config.SplitRecords {
		kind, err := format.SplitKindOf(f)
		if err != nil {
			return WatcherConfig{}, fmt.Errorf("files: %w", err)
		}
		cfg.Kind = kind
	}
	return cfg, nil
}

// Watcher polls one folder and feeds its files to the engine. It keeps
// only the last listing in memory; everything that must survive a crash is
// in the engine's progress.
type Watcher struct {
	cfg    WatcherConfig
	moveTo string // absolute, "" with AfterDelete
	log    *slog.Logger

	running atomic.Bool
	// seen is the previous poll's listing, for readiness.
	seen map[string]fileStat
	// oversized holds the unsplit files already reported as too big, so
	// each is reported once.
	oversized map[fileStat]bool
	// unfinished are files moved or deleted whose Finished call failed; it
	// is retried before anything else is read.
	unfinished []string
}

type fileStat struct {
	name string
	size int64
	mod  time.Time
}

func (s fileStat) id() FileID {
	return FileID{Name: s.name, Size: s.size, ModTime: progressTime(s.mod)}
}

// progressTime is a modification time as progress keeps it.
func progressTime(t time.Time) time.Time { return t.UTC().Truncate(time.Microsecond) }

// NewWatcher checks cfg, fills in its defaults and returns a watcher. The
// folder must exist.
func NewWatcher(cfg WatcherConfig) (*Watcher, error) {
	if cfg.Dir == "" {
		return nil, errors.New("files: the watched folder (Dir) is missing")
	}
	dir, err := filepath.Abs(cfg.Dir)
	if err != nil {
		return nil, fmt.Errorf("files: the watched folder %q: %w", cfg.Dir, err)
	}
	cfg.Dir = dir
	if fi, err := os.Stat(dir); err != nil {
		return nil, fmt.Errorf("files: the watched folder: %w", err)
	} else if !fi.IsDir() {
		return nil, fmt.Errorf("files: the watched folder %s is not a folder", dir)
	}
	if cfg.Pattern == "" {
		cfg.Pattern = "*"
	}
	if _, err := filepath.Match(cfg.Pattern, "x"); err != nil || strings.ContainsAny(cfg.Pattern, `/\`) {
		return nil, fmt.Errorf("files: bad file name pattern %q (want a filepath.Match pattern on the name, such as *.hl7)", cfg.Pattern)
	}
	cfg.Poll = orDefault(cfg.Poll, DefaultPoll)
	cfg.RetryInitial = orDefault(cfg.RetryInitial, DefaultRetryInitial)
	cfg.RetryMax = max(orDefault(cfg.RetryMax, DefaultRetryMax), cfg.RetryInitial)
	cfg.BatchRecords = orDefault(cfg.BatchRecords, DefaultBatchRecords)
	cfg.BatchBytes = orDefault(cfg.BatchBytes, DefaultBatchBytes)
	cfg.MaxFileBytes = orDefault(cfg.MaxFileBytes, DefaultMaxFileBytes)
	cfg.BufferSize = orDefault(cfg.BufferSize, format.DefaultSplitBuffer)
	cfg.MaxRecord = orDefault(cfg.MaxRecord, format.DefaultMaxRecord)
	switch cfg.Split {
	case "":
		cfg.Split = config.SplitNone
	case config.SplitNone:
	case config.SplitRecords:
		switch cfg.Kind {
		case format.SplitHL7, format.SplitCSV, format.SplitLines:
		default:
			return nil, fmt.Errorf("files: split records needs a record kind (hl7, csv or lines), got %q", cfg.Kind)
		}
	default:
		return nil, fmt.Errorf("files: unknown split %q (want none or records)", cfg.Split)
	}
	w := &Watcher{seen: map[string]fileStat{}, oversized: map[fileStat]bool{}}
	switch cfg.After {
	case "", config.AfterMove:
		cfg.After = config.AfterMove
		to := cfg.MoveTo
		if to == "" {
			to = config.DefaultMoveTo
		}
		if !filepath.IsAbs(to) {
			to = filepath.Join(dir, to)
		}
		w.moveTo = filepath.Clean(to)
		if w.moveTo == dir {
			return nil, fmt.Errorf("files: the folder finished files move to (%s) is the watched folder: they would be read again", w.moveTo)
		}
	case config.AfterDelete:
	default:
		return nil, fmt.Errorf("files: unknown after %q (want move or delete)", cfg.After)
	}
	if cfg.Commit == nil || cfg.Progress == nil || cfg.Finished == nil {
		return nil, errors.New("files: the Commit, Progress and Finished callbacks are all required")
	}
	w.log = cfg.Logger
	if w.log == nil {
		w.log = slog.New(slog.DiscardHandler)
	}
	w.log = w.log.With("folder", dir)
	w.cfg = cfg
	return w, nil
}

func orDefault[T int | int64 | time.Duration](v, def T) T {
	if v <= 0 {
		return def
	}
	return v
}

// Run polls the folder until ctx ends, then returns nil. A failure (a
// commit refused, the folder unreadable, a move that fails) is logged and
// retried after a back-off, the failing file first. Run may be called once.
func (w *Watcher) Run(ctx context.Context) error {
	if !w.running.CompareAndSwap(false, true) {
		return errors.New("files: the watcher is already running")
	}
	failures := 0
	wait := time.Duration(0)
	timer := time.NewTimer(0)
	defer timer.Stop()
	for {
		timer.Reset(wait)
		select {
		case <-ctx.Done():
			return nil
		case <-timer.C:
		}
		if w.cfg.Held != nil && w.cfg.Held() {
			wait = w.cfg.Poll
			continue
		}
		err := w.poll(ctx)
		if ctx.Err() != nil {
			return nil
		}
		if err == nil {
			failures, wait = 0, w.cfg.Poll
			continue
		}
		failures++
		wait = max(w.backoff(failures), w.cfg.Poll)
		w.log.Error("file source failed; later files wait", "err", err, "attempt", failures, "retry_in", wait)
	}
}

func (w *Watcher) backoff(failures int) time.Duration {
	d := w.cfg.RetryInitial
	for i := 1; i < failures && d < w.cfg.RetryMax; i++ {
		d *= 2
	}
	return min(d, w.cfg.RetryMax)
}

// poll looks at the folder once and reads the files that are ready, oldest
// first, stopping at the first failure.
func (w *Watcher) poll(ctx context.Context) error {
	for len(w.unfinished) > 0 {
		name := w.unfinished[0]
		if err := w.cfg.Finished(ctx, name); err != nil {
			return fmt.Errorf("files: %s is moved or deleted, but recording that failed: %w", name, err)
		}
		w.unfinished = w.unfinished[1:]
	}
	listing, err := w.list()
	if err != nil {
		return err
	}
	var ready []fileStat
	for name, st := range listing {
		if prev, ok := w.seen[name]; ok && prev.size == st.size && prev.mod.Equal(st.mod) {
			ready = append(ready, st)
		}
	}
	w.seen = listing
	for st := range w.oversized {
		if cur, ok := listing[st.name]; !ok || cur != st {
			delete(w.oversized, st)
		}
	}
	slices.SortFunc(ready, func(a, b fileStat) int {
		return cmp.Or(a.mod.Compare(b.mod), cmp.Compare(a.name, b.name))
	})
	for _, st := range ready {
		if err := ctx.Err(); err != nil {
			return err
		}
		// The file may have changed while earlier files were read.
		cur, err := w.stat(st.name)
		if errors.Is(err, os.ErrNotExist) {
			delete(w.seen, st.name)
			continue
		} else if err != nil {
			return err
		}
		if cur.size != st.size || !cur.mod.Equal(st.mod) {
			w.seen[st.name] = cur
			continue
		}
		if err := w.process(ctx, st); err != nil {
			return err
		}
	}
	return nil
}

// list returns the folder's candidate files by name.
func (w *Watcher) list() (map[string]fileStat, error) {
	entries, err := os.ReadDir(w.cfg.Dir)
	if err != nil {
		return nil, fmt.Errorf("files: listing the watched folder: %w", err)
	}
	out := make(map[string]fileStat, len(entries))
	for _, e := range entries {
		name := e.Name()
		if strings.HasPrefix(name, ".") || !e.Type().IsRegular() {
			continue
		}
		if ok, _ := filepath.Match(w.cfg.Pattern, name); !ok {
			continue
		}
		fi, err := e.Info()
		if errors.Is(err, os.ErrNotExist) {
			continue // removed since the listing
		} else if err != nil {
			return nil, fmt.Errorf("files: %s: %w", name, err)
		}
		if fi.Mode().IsRegular() {
			out[name] = fileStat{name: name, size: fi.Size(), mod: fi.ModTime()}
		}
	}
	return out, nil
}

func (w *Watcher) stat(name string) (fileStat, error) {
	fi, err := os.Lstat(filepath.Join(w.cfg.Dir, name))
	if err != nil {
		return fileStat{}, fmt.Errorf("files: %s: %w", name, err)
	}
	return fileStat{name: name, size: fi.Size(), mod: fi.ModTime()}, nil
}
