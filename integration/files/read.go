package files

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/ductus/ductus/integration/config"
	"github.com/ductus/ductus/integration/format"
)

// process reads one ready file from where its progress says, commits it
// and finishes it.
func (w *Watcher) process(ctx context.Context, st fileStat) error {
	id := st.id()
	if w.cfg.Split == config.SplitNone && st.size > w.cfg.MaxFileBytes {
		if !w.oversized[st] {
			w.oversized[st] = true
			w.log.Error("file left in place: it is larger than the limit for a file read whole (max_file_bytes); split it or raise the limit",
				"file", st.name, "bytes", st.size, "limit", w.cfg.MaxFileBytes)
		}
		return nil
	}
	saved, ok, err := w.cfg.Progress(ctx, st.name)
	if err != nil {
		return fmt.Errorf("files: reading the progress of %s: %w", st.name, err)
	}
	from := Progress{Name: id.Name, Size: id.Size, ModTime: id.ModTime}
	if ok {
		switch {
		case !saved.ModTime.Equal(id.ModTime) || saved.Size != id.Size || saved.Offset > id.Size || saved.Offset < 0:
			w.log.Info("file changed since its progress was saved; reading it from the start",
				"file", st.name, "bytes", id.Size, "saved_bytes", saved.Size, "saved_time", saved.ModTime, "saved_offset", saved.Offset)
		case saved.Done:
			w.log.Info("file already committed; finishing it", "file", st.name, "records", saved.Records)
			return w.finish(ctx, id, saved)
		default:
			from = saved
			from.Name, from.ModTime = id.Name, id.ModTime
		}
	}
	path := filepath.Join(w.cfg.Dir, st.name)
	f, err := os.Open(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil // taken away since the listing: nothing to read
	} else if err != nil {
		return fmt.Errorf("files: %w", err)
	}
	defer f.Close()
	// The open file must be the version judged ready.
	if fi, err := f.Stat(); err != nil {
		return fmt.Errorf("files: %w", err)
	} else if fi.Size() != st.size || !fi.ModTime().Equal(st.mod) {
		w.seen[st.name] = fileStat{name: st.name, size: fi.Size(), mod: fi.ModTime()}
		return nil
	}
	w.log.Info("file started", "file", st.name, "bytes", id.Size, "offset", from.Offset, "records", from.Records)
	var done Progress
	if w.cfg.Split == config.SplitNone {
		done, err = w.readWhole(ctx, f, id)
	} else {
		done, err = w.readRecords(ctx, f, id, from)
	}
	if err != nil {
		return err
	}
	return w.finish(ctx, id, done)
}

// readWhole commits an unsplit file as one record.
func (w *Watcher) readWhole(ctx context.Context, f *os.File, id FileID) (Progress, error) {
	p := Progress{Name: id.Name, Size: id.Size, ModTime: id.ModTime, Offset: id.Size, Done: true}
	b := Batch{File: id}
	if id.Size == 0 {
		b.Rejected = []Rejected{{Reason: "the file is empty"}}
		p.Rejected = 1
	} else {
		data := make([]byte, id.Size)
		if _, err := io.ReadFull(io.NewSectionReader(f, 0, id.Size), data); err != nil {
			return Progress{}, fmt.Errorf("files: reading %s: %w", id.Name, err)
		}
		b.Records = []format.Record{{Data: data, Start: 0, End: id.Size}}
		p.Records = 1
	}
	b.Progress = p
	if err := w.commit(ctx, b); err != nil {
		return Progress{}, err
	}
	return p, nil
}

// batcher gathers records into batches and commits them.
type batcher struct {
	w     *Watcher
	batch Batch
	bytes int
	state Progress // the progress once the gathered records are stored
}

func (b *batcher) full(n int) bool {
	items := len(b.batch.Records) + len(b.batch.Rejected)
	return items >= b.w.cfg.BatchRecords || items > 0 && b.bytes+n > b.w.cfg.BatchBytes
}

// add gathers one record, first committing the batch when the record does
// not fit; the commit is then not the last, since this record follows.
func (b *batcher) add(ctx context.Context, rec *format.Record, rej *Rejected) error {
	var n int
	if rec != nil {
		n = len(rec.Data)
	} else {
		n = len(rej.Data)
	}
	if b.full(n) {
		if err := b.flush(ctx, false); err != nil {
			return err
		}
	}
	b.bytes += n
	if rec != nil {
		b.batch.Records = append(b.batch.Records, *rec)
		b.state.Records++
		b.state.Offset = rec.End
	} else {
		b.batch.Rejected = append(b.batch.Rejected, *rej)
		b.state.Rejected++
		b.state.Offset = rej.End
	}
	return nil
}

func (b *batcher) flush(ctx context.Context, done bool) error {
	b.state.Done = done
	b.batch.Progress = b.state
	if err := b.w.commit(ctx, b.batch); err != nil {
		return err
	}
	b.batch = Batch{File: b.batch.File}
	b.bytes = 0
	return nil
}

// readRecords streams a file from from.Offset and commits its records.
func (w *Watcher) readRecords(ctx context.Context, f *os.File, id FileID, from Progress) (Progress, error) {
	opts := format.SplitOptions{BufferSize: w.cfg.BufferSize, MaxRecord: w.cfg.MaxRecord, NotUTF8: w.cfg.NotUTF8}
	if w.cfg.Kind != format.SplitCSV || from.Offset == 0 {
		from.Header = nil
	} else {
		if len(from.Header) == 0 {
			h, err := format.ReadCSVHeader(io.NewSectionReader(f, 0, id.Size), opts)
			if err != nil {
				return Progress{}, fmt.Errorf("files: reading the header of %s to resume it: %w", id.Name, err)
			}
			from.Header = h
		}
		opts.Header = from.Header
	}
	sp, err := format.NewSplitter(io.NewSectionReader(f, from.Offset, id.Size-from.Offset), w.cfg.Kind, from.Offset, opts)
	if err != nil {
		return Progress{}, fmt.Errorf("files: %s: %w", id.Name, err)
	}
	b := &batcher{w: w, batch: Batch{File: id}, state: from}
	for {
		if err := ctx.Err(); err != nil {
			return Progress{}, err
		}
		rec, err := sp.Next()
		if w.cfg.Kind == format.SplitCSV && b.state.Header == nil {
			b.state.Header = sp.Header()
		}
		var re *format.RecordError
		var ce *format.CheckError
		switch {
		case err == nil:
			err = b.add(ctx, &rec, nil)
		case errors.Is(err, io.EOF):
			if err := b.flush(ctx, true); err != nil {
				return Progress{}, err
			}
			return b.state, nil
		case errors.As(err, &re):
			rej, rerr := w.rejected(f, re.Start, re.End, re.Reason, re.TooLarge)
			if rerr != nil {
				return Progress{}, rerr
			}
			err = b.add(ctx, nil, &rej)
		case errors.As(err, &ce):
			// The file as a whole is not of its format (a CSV file whose
			// header row is unusable): the rest of it is one rejected
			// record, so the folder is not blocked by it.
			rej, rerr := w.rejected(f, b.state.Offset, id.Size, err.Error(), false)
			if rerr != nil {
				return Progress{}, rerr
			}
			if err := b.add(ctx, nil, &rej); err != nil {
				return Progress{}, err
			}
			if err := b.flush(ctx, true); err != nil {
				return Progress{}, err
			}
			return b.state, nil
		default:
			return Progress{}, fmt.Errorf("files: reading %s: %w", id.Name, err)
		}
		if err != nil {
			return Progress{}, err
		}
	}
}

// rejected builds a rejected record with the file's bytes [start, end),
// or only their first PreviewBytes when they are over the record size
// limit too.
func (w *Watcher) rejected(f *os.File, start, end int64, reason string, tooLarge bool) (Rejected, error) {
	r := Rejected{Start: start, End: end, Reason: reason, TooLarge: tooLarge}
	n := end - start
	if n > int64(w.cfg.MaxRecord) && n > PreviewBytes {
		n, r.Truncated = PreviewBytes, true
	}
	r.Data = make([]byte, n)
	if _, err := f.ReadAt(r.Data, start); err != nil {
		return Rejected{}, fmt.Errorf("files: reading the rejected record at bytes %d-%d: %w", start, end, err)
	}
	return r, nil
}

// commit hands one batch to the engine.
func (w *Watcher) commit(ctx context.Context, b Batch) error {
	if err := w.cfg.Commit(ctx, b); err != nil {
		return fmt.Errorf("files: committing %s up to byte %d: %w", b.File.Name, b.Progress.Offset, err)
	}
	w.log.Debug("file batch committed", "file", b.File.Name, "records", len(b.Records), "rejected", len(b.Rejected),
		"offset", b.Progress.Offset, "total_records", b.Progress.Records, "done", b.Progress.Done)
	return nil
}
