package files

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"

	"github.com/ductus/ductus/integration/config"
)

// finish moves or deletes a fully committed file, makes that durable and
// tells the engine. The folders are fsynced before Finished: were the
// engine to drop the progress and the move be lost in a crash, the file
// would come back without progress and be read twice.
func (w *Watcher) finish(ctx context.Context, id FileID, p Progress) error {
	src := filepath.Join(w.cfg.Dir, id.Name)
	attrs := []any{"file", id.Name, "records", p.Records, "rejected", p.Rejected, "bytes", id.Size}
	if w.cfg.After == config.AfterDelete {
		if err := os.Remove(src); err != nil && !errors.Is(err, os.ErrNotExist) {
			return fmt.Errorf("files: deleting the finished file: %w", err)
		}
		if err := syncDir(w.cfg.Dir); err != nil {
			return err
		}
		attrs = append(attrs, "deleted", true)
	} else {
		dst, err := w.move(src, id.Name)
		if err != nil {
			return err
		}
		attrs = append(attrs, "moved_to", dst)
	}
	w.log.Info("file finished", attrs...)
	delete(w.seen, id.Name)
	if err := w.cfg.Finished(ctx, id.Name); err != nil {
		w.unfinished = append(w.unfinished, id.Name)
		return fmt.Errorf("files: %s is moved or deleted, but recording that failed: %w", id.Name, err)
	}
	return nil
}

// move renames the file into the move-to folder under its name, or under
// the name with "-1", "-2", … before its extension when that is taken.
// Only this watcher puts files there, so checking before renaming is safe.
func (w *Watcher) move(src, name string) (string, error) {
	if err := os.MkdirAll(w.moveTo, 0o755); err != nil {
		return "", fmt.Errorf("files: creating the folder finished files move to: %w", err)
	}
	dst, err := freeName(w.moveTo, name)
	if err != nil {
		return "", err
	}
	if err := os.Rename(src, dst); err != nil {
		if errors.Is(err, syscall.EXDEV) {
			return "", fmt.Errorf("files: moving the finished file: %s is on another filesystem than the watched folder (move_to must be on the same one): %w", w.moveTo, err)
		}
		return "", fmt.Errorf("files: moving the finished file: %w", err)
	}
	if err := syncDir(w.moveTo); err != nil {
		return "", err
	}
	if err := syncDir(w.cfg.Dir); err != nil {
		return "", err
	}
	return dst, nil
}

// freeName returns a path in dir for name that no file has yet.
func freeName(dir, name string) (string, error) {
	ext := filepath.Ext(name)
	stem := strings.TrimSuffix(name, ext)
	if stem == "" { // a name such as "x." or one that is all extension
		stem, ext = name, ""
	}
	for i := 0; i < 100000; i++ {
		candidate := name
		if i > 0 {
			candidate = stem + "-" + strconv.Itoa(i) + ext
		}
		p := filepath.Join(dir, candidate)
		if _, err := os.Lstat(p); errors.Is(err, os.ErrNotExist) {
			return p, nil
		} else if err != nil {
			return "", fmt.Errorf("files: %w", err)
		}
	}
	return "", fmt.Errorf("files: no free name for %s in %s (100000 taken)", name, dir)
}

// syncDir makes the entries of a folder durable. Filesystems that cannot
// sync a folder (EINVAL) have nothing to make durable that way.
func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return fmt.Errorf("files: opening the folder to sync it: %w", err)
	}
	defer d.Close()
	if err := d.Sync(); err != nil && !errors.Is(err, syscall.EINVAL) && !errors.Is(err, syscall.ENOTSUP) {
		return fmt.Errorf("files: syncing the folder %s: %w", dir, err)
	}
	return nil
}
