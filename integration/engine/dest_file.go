package engine

import (
	"context"
	"errors"
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

func newFileSender(d *config.Destination) sender { return &fileSender{dest: d} }

// makeFolders makes every file destination's folder (Engine.New, beside
// loading the scripts), so a project's out/ folders work out of the box.
// A folder that disappears later (an unmounted share) is a transient
// failure of the send, retried.
func makeFolders(ifaces []*config.Interface) error {
	var errs []error
	for _, in := range ifaces {
		for _, d := range in.Destinations {
			if d.Type != config.DestFile {
				continue
			}
			if err := os.MkdirAll(d.File.Path, 0o755); err != nil {
				errs = append(errs, fmt.Errorf("interface %s destination %s: the destination folder: %w", in.Name, d.Name, err))
			}
		}
	}
	return errors.Join(errs...)
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
