package engine

import (
	"context"
	"fmt"
	"os"

	"github.com/ductus/ductus/actor"
	"github.com/ductus/ductus/integration/config"
	"github.com/ductus/ductus/integration/files"
	"github.com/ductus/ductus/runtime/host"
)

// fileSender writes each output atomically (temporary name, fsync,
// rename) under the destination's folder by its name template.
type fileSender struct{ dest *config.Destination }

func newFileSender(d *config.Destination) (sender, error) {
	// The folder is made at start so a project's out/ folders work out of
	// the box; a folder that disappears later (an unmounted share) is a
	// transient failure, retried.
	if err := os.MkdirAll(d.File.Path, 0o755); err != nil {
		return nil, fmt.Errorf("the destination folder: %w", err)
	}
	return &fileSender{dest: d}, nil
}

func (f *fileSender) send(ctx context.Context, _ host.EffectContext, a sendArgs) error {
	name, err := f.dest.File.FileName(config.FileMessage{ID: a.M, ReceivedAt: a.ReceivedAt, Key: a.Key})
	if err != nil {
		return actor.Permanent(fmt.Errorf("the file name: %w", err))
	}
	if _, err := files.Write(ctx, f.dest.File.Path, name, a.Output); err != nil {
		if files.Permanent(err) {
			return actor.Permanent(err)
		}
		return err
	}
	return nil
}

func (f *fileSender) close() error { return nil }
