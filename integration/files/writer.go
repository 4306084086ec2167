package files

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
)

// ErrBadName is matched (errors.Is) by the error for a file name Write
// refuses: empty, absolute, climbing out of the folder, a dot-file.
var ErrBadName = errors.New("files: bad file name")

// WriteError is a failed Write.
type WriteError struct {
	Path string // the file's final path, or its name when the name is refused
	Op   string // what failed: "check the name", "create the folder", "write", "rename", …
	Err  error
	// Permanent is set when retrying cannot help: the name is refused, too
	// long, or taken by a folder. Out of space, I/O errors, permissions
	// and a missing destination folder are not permanent: an operator can
	// fix them and the delivery retried.
	Permanent bool
}

func (e *WriteError) Error() string {
	return fmt.Sprintf("files: writing %s: %s: %v", e.Path, e.Op, e.Err)
}

func (e *WriteError) Unwrap() error { return e.Err }

// Permanent reports whether err, from Write, will fail the same way however
// often it is retried: the engine quarantines the message rather than
// retrying it. Any other error is transient.
func Permanent(err error) bool {
	var we *WriteError
	if errors.As(err, &we) {
		return we.Permanent
	}
	return errors.Is(err, ErrBadName)
}

// permanentErrno is true for the errors a retry cannot cure.
func permanentErrno(err error) bool {
	for _, e := range []syscall.Errno{syscall.ENAMETOOLONG, syscall.EISDIR, syscall.ENOTDIR, syscall.EINVAL} {
		if errors.Is(err, e) {
			return true
		}
	}
	return false
}

// CheckName reports what is wrong with a file name relative to a
// destination folder, as an error matching ErrBadName, or nil. Names use
// "/" for subfolders.
func CheckName(name string) error {
	why := ""
	switch {
	case name == "":
		why = "the name is empty"
	case strings.ContainsAny(name, "\\\x00"):
		why = "the name contains a backslash or a NUL byte"
	case strings.HasPrefix(name, "/") || filepath.IsAbs(name):
		why = "the name is absolute; it must be relative to the destination folder"
	case slices.Contains(strings.Split(name, "/"), ".."):
		why = "the name climbs out of the destination folder with .."
	case path.Clean(name) != name:
		why = "the name has empty or . parts"
	case strings.HasPrefix(path.Base(name), "."):
		why = "the name starts with a dot (dot-files are temporary files, skipped by file sources)"
	}
	if why == "" {
		return nil
	}
	return fmt.Errorf("%w %q: %s", ErrBadName, name, why)
}

// Write puts data in the file name (a "/" makes subfolders, created as
// needed) under the folder dir, atomically: it writes a temporary file
// ".tmp-<random>" next to the final one, fsyncs it, renames it to the final
// name and fsyncs the folder, so a reader sees the old file or the whole
// new one, never a part. A file already there is replaced: a message
// delivered again after a crash writes the same file again, and a name
// without the message ID (a daily census) wants the latest. The temporary
// file is removed when anything fails. It returns the final path.
//
// dir itself must exist (a missing destination folder is often an
// unmounted share, not something to create); the error is transient.
func Write(ctx context.Context, dir, name string, data []byte) (string, error) {
	if err := CheckName(name); err != nil {
		return "", &WriteError{Path: name, Op: "check the name", Err: err, Permanent: true}
	}
	if dir == "" {
		return "", &WriteError{Path: name, Op: "check the folder", Err: errors.New("the destination folder is not given"), Permanent: true}
	}
	final := filepath.Join(dir, filepath.FromSlash(name))
	fail := func(op string, err error) (string, error) {
		return "", &WriteError{Path: final, Op: op, Err: err, Permanent: permanentErrno(err)}
	}
	if err := ctx.Err(); err != nil {
		return fail("start", err)
	}
	if fi, err := os.Stat(dir); err != nil {
		return fail("open the destination folder", err)
	} else if !fi.IsDir() {
		return "", &WriteError{Path: final, Op: "open the destination folder", Err: fmt.Errorf("%s is not a folder", dir)}
	}
	parent := filepath.Dir(final)
	if err := mkdirs(dir, parent); err != nil {
		return fail("create the folder", err)
	}
	if fi, err := os.Lstat(final); err == nil && fi.IsDir() {
		return "", &WriteError{Path: final, Op: "check the name", Err: fmt.Errorf("a folder has the file's name: %w", syscall.EISDIR), Permanent: true}
	}
	tmp, err := os.CreateTemp(parent, ".tmp-*")
	if err != nil {
		return fail("create a temporary file", err)
	}
	tmpName := tmp.Name()
	renamed := false
	defer func() {
		if !renamed {
			tmp.Close()
			os.Remove(tmpName)
		}
	}()
	if _, err := tmp.Write(data); err != nil {
		return fail("write", err)
	}
	if err := tmp.Chmod(0o644); err != nil {
		return fail("set the permissions", err)
	}
	if err := tmp.Sync(); err != nil {
		return fail("fsync", err)
	}
	if err := tmp.Close(); err != nil {
		return fail("close", err)
	}
	if err := ctx.Err(); err != nil {
		return fail("rename", err)
	}
	if err := os.Rename(tmpName, final); err != nil {
		return fail("rename", err)
	}
	renamed = true
	if err := syncDir(parent); err != nil {
		// The file is in place; only its durability is in doubt, and a
		// retry writes it again.
		return fail("fsync the folder", err)
	}
	return final, nil
}

// mkdirs creates the folders from root (which exists) down to leaf,
// fsyncing each new folder's parent so the new entry survives a crash.
func mkdirs(root, leaf string) error {
	rel, err := filepath.Rel(root, leaf)
	if err != nil || rel == "." {
		return err
	}
	cur := root
	for _, part := range strings.Split(rel, string(filepath.Separator)) {
		next := filepath.Join(cur, part)
		err := os.Mkdir(next, 0o755)
		switch {
		case err == nil:
			if err := syncDir(cur); err != nil {
				return err
			}
		case errors.Is(err, os.ErrExist):
			if fi, serr := os.Stat(next); serr != nil {
				return serr
			} else if !fi.IsDir() {
				return fmt.Errorf("%s is a file, not a folder: %w", next, syscall.ENOTDIR)
			}
		default:
			return err
		}
		cur = next
	}
	return nil
}
