package files

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
)

func TestWrite(t *testing.T) {
	for _, tc := range []struct {
		name string
		// before sets the folder up; the write goes to dir/out
		before    func(t *testing.T, dir string)
		file      string
		wantErr   string // "" = success
		permanent bool
	}{
		{name: "plain", file: "1001.hl7"},
		{name: "subfolders", file: "2026-03-01/adt/1001.hl7"},
		{name: "replaces a file", file: "census.csv", before: func(t *testing.T, dir string) { put(t, dir, "out/census.csv", "yesterday's", 0) }},
		{name: "in an existing subfolder", file: "a/b.txt", before: func(t *testing.T, dir string) { put(t, dir, "out/a/other.txt", "x", 0) }},
		{name: "climbs out", file: "../x", wantErr: "climbs out", permanent: true},
		{name: "climbs out further down", file: "a/../../x", wantErr: "climbs out", permanent: true},
		{name: "absolute", file: "/etc/x", wantErr: "absolute", permanent: true},
		{name: "empty", file: "", wantErr: "empty", permanent: true},
		{name: "dot-file", file: "a/.x", wantErr: "dot", permanent: true},
		{name: "empty part", file: "a//x", wantErr: "empty or . parts", permanent: true},
		{name: "dot part", file: "./x", wantErr: "empty or . parts", permanent: true},
		{name: "backslash", file: `a\..\x`, wantErr: "backslash", permanent: true},
		{name: "a folder has the name", file: "taken", wantErr: "a folder has the file's name", permanent: true,
			before: func(t *testing.T, dir string) { put(t, dir, "out/taken/inside", "x", 0) }},
		{name: "a file is in the way of a subfolder", file: "f/x", wantErr: "not a folder", permanent: true,
			before: func(t *testing.T, dir string) { put(t, dir, "out/f", "x", 0) }},
		{name: "destination folder missing", file: "x", wantErr: "no such file", permanent: false,
			before: func(t *testing.T, dir string) { os.Remove(filepath.Join(dir, "out")) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			root := t.TempDir()
			out := filepath.Join(root, "out")
			if err := os.Mkdir(out, 0o755); err != nil {
				t.Fatal(err)
			}
			if tc.before != nil {
				tc.before(t, root)
			}
			data := []byte("MSH|^~\\&|A\rPID|1\r")
			got, err := Write(t.Context(), out, tc.file, data)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("err %v, want one mentioning %q", err, tc.wantErr)
				}
				if Permanent(err) != tc.permanent {
					t.Fatalf("Permanent(%v) = %v, want %v", err, Permanent(err), tc.permanent)
				}
				if tc.permanent && strings.Contains(tc.wantErr, "climbs") && !errors.Is(err, ErrBadName) {
					t.Fatalf("%v does not match ErrBadName", err)
				}
				if leftovers := tempFiles(t, root); len(leftovers) > 0 {
					t.Fatalf("temporary files left after the error: %q", leftovers)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if want := filepath.Join(out, filepath.FromSlash(tc.file)); got != want {
				t.Fatalf("path %s, want %s", got, want)
			}
			b, err := os.ReadFile(got)
			if err != nil || !bytes.Equal(b, data) {
				t.Fatalf("file holds %q, %v", b, err)
			}
			fi, err := os.Stat(got)
			if err != nil || fi.Mode().Perm() != 0o644 {
				t.Fatalf("mode %v, %v", fi.Mode(), err)
			}
			if leftovers := tempFiles(t, root); len(leftovers) > 0 {
				t.Fatalf("temporary files left: %q", leftovers)
			}
		})
	}
}

func tempFiles(t *testing.T, root string) []string {
	t.Helper()
	var out []string
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if strings.HasPrefix(d.Name(), ".tmp-") {
			out = append(out, p)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// TestWriteIsAtomic overwrites one file again and again with two bodies
// while another goroutine reads it: every read must see one whole body.
// A write in place (truncate, then write) fails this quickly.
func TestWriteIsAtomic(t *testing.T) {
	dir := t.TempDir()
	bodies := [][]byte{bytes.Repeat([]byte("A"), 1<<20), bytes.Repeat([]byte("B"), 1<<20+4096)}
	if _, err := Write(t.Context(), dir, "f.dat", bodies[0]); err != nil {
		t.Fatal(err)
	}
	stop := make(chan struct{})
	var wg sync.WaitGroup
	var bad []string
	var reads int
	wg.Go(func() {
		for {
			select {
			case <-stop:
				return
			default:
			}
			b, err := os.ReadFile(filepath.Join(dir, "f.dat"))
			reads++
			if err != nil {
				bad = append(bad, err.Error())
			} else if !bytes.Equal(b, bodies[0]) && !bytes.Equal(b, bodies[1]) {
				bad = append(bad, fmt.Sprintf("a read of %d bytes that is neither body", len(b)))
			}
		}
	})
	for i := range 40 {
		if _, err := Write(t.Context(), dir, "f.dat", bodies[i%2]); err != nil {
			t.Fatal(err)
		}
	}
	close(stop)
	wg.Wait()
	if len(bad) > 0 {
		t.Fatalf("%d of %d reads saw a partial file, e.g. %s", len(bad), reads, bad[0])
	}
	if leftovers := tempFiles(t, dir); len(leftovers) > 0 {
		t.Fatalf("temporary files left: %q", leftovers)
	}
}

func TestWriteHonoursTheContext(t *testing.T) {
	dir := t.TempDir()
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	if _, err := Write(ctx, dir, "x", []byte("x")); !errors.Is(err, context.Canceled) || Permanent(err) {
		t.Fatalf("err %v", err)
	}
	if exists(t, filepath.Join(dir, "x")) {
		t.Fatal("written although the context had ended")
	}
}

func TestPermanentClassification(t *testing.T) {
	for _, tc := range []struct {
		err  error
		want bool
	}{
		{&WriteError{Op: "write", Err: &fs.PathError{Op: "write", Path: "x", Err: syscall.ENOSPC}}, false},
		{&WriteError{Op: "fsync", Err: &fs.PathError{Op: "sync", Path: "x", Err: syscall.EIO}}, false},
		{&WriteError{Op: "create", Err: &fs.PathError{Op: "open", Path: "x", Err: syscall.EACCES}}, false},
		{&WriteError{Op: "create", Err: &fs.PathError{Op: "open", Path: "x", Err: syscall.EROFS}}, false},
		{fmt.Errorf("lane: %w", CheckName("../x")), true},
		{errors.New("something else"), false},
	} {
		if got := Permanent(tc.err); got != tc.want {
			t.Errorf("Permanent(%v) = %v, want %v", tc.err, got, tc.want)
		}
	}
	// The classification Write applies to the errors the system returns.
	for _, errno := range []syscall.Errno{syscall.ENOSPC, syscall.EIO, syscall.EACCES, syscall.EPERM, syscall.EDQUOT, syscall.ENOENT} {
		if permanentErrno(&fs.PathError{Op: "write", Path: "x", Err: errno}) {
			t.Errorf("%v is classed permanent", errno)
		}
	}
	for _, errno := range []syscall.Errno{syscall.ENAMETOOLONG, syscall.EISDIR, syscall.ENOTDIR} {
		if !permanentErrno(&fs.PathError{Op: "write", Path: "x", Err: errno}) {
			t.Errorf("%v is classed transient", errno)
		}
	}
}

func TestWriteNameTooLongIsPermanent(t *testing.T) {
	_, err := Write(t.Context(), t.TempDir(), strings.Repeat("n", 300), []byte("x"))
	if err == nil || !Permanent(err) {
		t.Fatalf("err %v, Permanent %v", err, Permanent(err))
	}
}
