package console

import (
	"bytes"
	"compress/gzip"
	"io/fs"
	"os"
	"regexp"
	"testing"
)

// firstLoadBudget is the most the first load (index.html and the scripts
// and styles it references) may weigh, gzipped.
const firstLoadBudget = 300 << 10

var assetRef = regexp.MustCompile(`(?:src|href)="/(assets/[^"]+\.(?:js|css))"`)

func gzipped(t *testing.T, b []byte) int {
	t.Helper()
	var buf bytes.Buffer
	zw, err := gzip.NewWriterLevel(&buf, gzip.BestCompression)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := zw.Write(b); err != nil {
		t.Fatal(err)
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Len()
}

// TestFirstLoadSize fails when the built console's first load is over
// 300 KB gzipped. Without a build it skips (and fails with CI=true, where
// make test has built it).
func TestFirstLoadSize(t *testing.T) {
	if !Built() {
		if os.Getenv("CI") == "true" {
			t.Fatal("the console is not built (run make console); CI requires the first-load size check")
		}
		t.Skip("the console is not built (placeholder only): run make console to check the first-load size")
	}
	files, err := fs.Sub(dist, "dist")
	if err != nil {
		t.Fatal(err)
	}
	index, err := fs.ReadFile(files, "index.html")
	if err != nil {
		t.Fatal(err)
	}
	total := gzipped(t, index)
	t.Logf("index.html: %d bytes gzipped", total)
	refs := assetRef.FindAllSubmatch(index, -1)
	if len(refs) == 0 {
		t.Fatalf("index.html references no script or style under /assets/:\n%s", index)
	}
	seen := map[string]bool{}
	for _, m := range refs {
		name := string(m[1])
		if seen[name] {
			continue
		}
		seen[name] = true
		b, err := fs.ReadFile(files, name)
		if err != nil {
			t.Fatalf("index.html references %s: %v", name, err)
		}
		n := gzipped(t, b)
		t.Logf("%s: %d bytes, %d gzipped", name, len(b), n)
		total += n
	}
	t.Logf("first load: %d bytes gzipped (budget %d)", total, firstLoadBudget)
	if total > firstLoadBudget {
		t.Fatalf("the first load is %d bytes gzipped, over the %d budget", total, firstLoadBudget)
	}
}

// TestNoInlineScriptOrStyle fails when the built index.html has an inline
// script or style, which the CSP would block.
func TestNoInlineScriptOrStyle(t *testing.T) {
	if !Built() {
		t.Skip("the console is not built (placeholder only)")
	}
	index, err := fs.ReadFile(dist, "dist/index.html")
	if err != nil {
		t.Fatal(err)
	}
	for _, re := range []*regexp.Regexp{
		regexp.MustCompile(`<script(?:\s[^>]*)?>\s*[^<\s]`), // a script with a body
		regexp.MustCompile(`<style`),
		regexp.MustCompile(`\sstyle=`),
		regexp.MustCompile(`\son[a-z]+=`),
		regexp.MustCompile(`(?:src|href)="(?:https?:)?//`), // another origin (a CDN)
	} {
		if loc := re.FindIndex(index); loc != nil {
			t.Errorf("index.html has %q (matched %s), which the CSP forbids", index[loc[0]:min(loc[1]+40, len(index))], re)
		}
	}
}
