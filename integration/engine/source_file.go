package engine

import (
	"context"
	"fmt"
	"os"

	"github.com/ductus/ductus/integration/config"
	"github.com/ductus/ductus/integration/files"
	"github.com/ductus/ductus/integration/format"
)

// fileSource watches an interface's folder: each batch of records is stored
// with the file's progress in one transaction, so a crash resumes exactly
// where the last commit ended, and the file moves only after its last
// record is stored.
type fileSource struct {
	e  *Engine
	ir *ifaceRuntime
	w  *files.Watcher
}

func stateKey(name string) string { return "file:" + name }

func (e *Engine) newFileSource(ir *ifaceRuntime) (source, error) {
	name := ir.cfg.Name
	cfg, err := files.ConfigFrom(ir.cfg.Source.File, format.Name(ir.cfg.Format))
	if err != nil {
		return nil, fmt.Errorf("interface %s: %w", name, err)
	}
	if err := os.MkdirAll(cfg.Dir, 0o755); err != nil {
		return nil, fmt.Errorf("interface %s: the watched folder: %w", name, err)
	}
	s := &fileSource{e: e, ir: ir}
	// A file in another set is cut as bytes and decoded in commit, record
	// by record, where a record that does not decode is rejected.
	cfg.NotUTF8 = ir.cfg.Charset != nil && !ir.cfg.Charset.IsUTF8()
	cfg.Logger = e.log.With("interface", name, "source", "file")
	cfg.Commit = s.commit
	cfg.Held = e.drain.gateClosed
	cfg.Progress = func(ctx context.Context, file string) (files.Progress, bool, error) {
		var p files.Progress
		ok, err := e.ms.State(ctx, name, stateKey(file), &p)
		return p, ok, err
	}
	cfg.Finished = func(ctx context.Context, file string) error { return e.ms.DeleteState(ctx, name, stateKey(file)) }
	if s.w, err = files.NewWatcher(cfg); err != nil {
		return nil, fmt.Errorf("interface %s: %w", name, err)
	}
	return s, nil
}

func (s *fileSource) name() string { return "file " + s.ir.cfg.Source.File.Path }

func (s *fileSource) run(ctx context.Context) error { return s.w.Run(ctx) }

func (s *fileSource) commit(ctx context.Context, b files.Batch) error {
	f := format.Name(s.ir.cfg.Format)
	split := s.ir.cfg.Source.File.Split == config.SplitRecords
	recs := make([]Record, 0, len(b.Records)+len(b.Rejected))
	for _, r := range b.Records {
		rec := Record{Payload: r.Data, Meta: map[string]any{"source": "file", "file": b.File.Name, "offset": r.Start}}
		// A record whose bytes are not text in its character set is stored
		// as rejected (with its bytes as they were, for audit) like any
		// other bad record, so the file still moves on.
		in, err := decodeIn(s.ir.cfg, r.Data, nil)
		if err != nil {
			rec.Reject = fmt.Sprintf("the record's characters cannot be read: %v", err)
			recs = append(recs, rec)
			continue
		}
		rec.Payload = in.text
		rec.Meta = withCharset(rec.Meta, in.cs)
		// A record from a split file was cut by the format's rules already;
		// a whole file is checked here.
		if !split {
			if err := format.Check(f, in.text); err != nil {
				rec.Reject = fmt.Sprintf("the file is not %s: %v", f, err)
			}
		} else if f == format.HL7v2 {
			if err := format.Check(f, in.text); err != nil {
				rec.Reject = fmt.Sprintf("the record is not HL7 v2: %v", err)
			}
		}
		recs = append(recs, rec)
	}
	for _, r := range b.Rejected {
		recs = append(recs, Record{Payload: r.Data, Reject: r.Reason,
			Meta: map[string]any{"source": "file", "file": b.File.Name, "offset": r.Start, "truncated": r.Truncated}})
	}
	_, err := s.e.Intake(ctx, s.ir.cfg.Name, recs, &StateWrite{Key: stateKey(b.File.Name), Value: b.Progress})
	return err
}
