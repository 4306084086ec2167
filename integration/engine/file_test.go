package engine

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/ductus/ductus/integration/ixstore"
	"github.com/ductus/ductus/internal/testutil"

	"github.com/ductus/ductus/integration/msgstore"
)

func listFiles(t *testing.T, dir string) []string {
	var out []string
	_ = filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() && !strings.HasPrefix(d.Name(), ".") {
			out = append(out, p)
		}
		return nil
	})
	sort.Strings(out)
	return out
}

func TestFileSourceSplitsCSVAndHL7ToFiles(t *testing.T) {
	forEachBackend(t, func(t *testing.T, be ixstore.Backend) {
		api := newReceiver(t)
		proj := project(t, map[string]string{
			"ductus.yaml": "script: { isolates: 1 }\napi: { listen: off }\n",
			"interfaces/lab/interface.yaml": `
format: csv
source: { type: file, path: inbox/lab, pattern: "*.csv", split: records, poll: 20ms }
ordering_key: $.mrn
partitions: 4
destinations:
  out: { type: file, path: out/lab, name: "{{.Key}}/{{.ID}}.json", format: json }
  copy: { type: http, url: "` + api.srv.URL + `", format: json }
`,
			"interfaces/lab/transform.js": `function transform(r, meta) { return { mrn: r.mrn, seq: Number(r.seq), test: r.test }; }`,
			"interfaces/adt/interface.yaml": `
format: hl7v2
source: { type: file, path: inbox/adt, split: none, poll: 20ms, after: delete }
destinations:
  archive: { type: file, path: out/adt, name: "{{.ID}}.hl7" }
`,
			"interfaces/adt/transform.js": `function transform(msg) { msg.set("MSH-6", "ARCHIVE"); return msg; }`,
		})
		e := running(t, proj, be)
		dir := proj.Dir

		var csv strings.Builder
		csv.WriteString("mrn,seq,test\n")
		for i := 0; i < 1200; i++ {
			fmt.Fprintf(&csv, "m%d,%d,\"glucose,\nfasting\"\n", i%5, i)
		}
		writeFile(t, filepath.Join(dir, "inbox/lab/results.csv"), csv.String())
		writeFile(t, filepath.Join(dir, "inbox/adt/a01.hl7"), "MSH|^~\\&|PAS|H|EMR|H|20261202||ADT^A01|C1|P|2.5\rPID|1||42^^^H^MR||Doe^Jane\r")
		writeFile(t, filepath.Join(dir, "inbox/adt/junk.hl7"), "this is not HL7\n")

		testutil.Eventually(t, 60*time.Second, "1200 lab records written", func() bool { return len(listFiles(t, filepath.Join(dir, "out/lab"))) == 1200 })
		testutil.Eventually(t, 10*time.Second, "the CSV file moved to done", func() bool {
			_, err := os.Stat(filepath.Join(dir, "inbox/lab/done/results.csv"))
			return err == nil
		})
		// Every key got all its records, stored in the file's order: file
		// names are message IDs, which are time-ordered (UUIDv7), so in
		// name order the seqs must rise.
		for k := 0; k < 5; k++ {
			var seqs []int
			for _, p := range listFiles(t, filepath.Join(dir, "out/lab", fmt.Sprintf("m%d", k))) {
				b, _ := os.ReadFile(p)
				var r struct{ Seq int }
				if err := json.Unmarshal(b, &r); err != nil {
					t.Fatal(err)
				}
				seqs = append(seqs, r.Seq)
			}
			if len(seqs) != 240 {
				t.Fatalf("key m%d: %d records", k, len(seqs))
			}
			if !sort.IntsAreSorted(seqs) {
				t.Fatalf("key m%d: records stored out of the file's order: %v", k, seqs)
			}
		}
		// And delivered in that order, per key.
		testutil.Eventually(t, 60*time.Second, "1200 lab records posted", func() bool { return api.count() == 1200 })
		last := map[string]int{}
		for _, r := range decodeAll[struct {
			MRN string
			Seq int
		}](t, api.bodies()) {
			if prev, ok := last[r.MRN]; ok && r.Seq <= prev {
				t.Fatalf("key %s: seq %d delivered after %d", r.MRN, r.Seq, prev)
			}
			last[r.MRN] = r.Seq
		}
		testutil.Eventually(t, 10*time.Second, "the HL7 file archived", func() bool { return len(listFiles(t, filepath.Join(dir, "out/adt"))) == 1 })
		got, _ := os.ReadFile(listFiles(t, filepath.Join(dir, "out/adt"))[0])
		if !strings.Contains(string(got), "|ARCHIVE|") {
			t.Fatalf("archived %q", got)
		}
		testutil.Eventually(t, 10*time.Second, "both HL7 files deleted", func() bool { return len(listFiles(t, filepath.Join(dir, "inbox/adt"))) == 0 })
		msgs, err := e.Store().List(context.Background(), "adt", "", 10)
		if err != nil {
			t.Fatal(err)
		}
		rejected := 0
		for _, m := range msgs {
			if m.Status == msgstore.StatusRejected {
				rejected++
				if !strings.Contains(fmt.Sprint(m.Meta["reason"]), "not hl7v2") {
					t.Fatalf("rejected reason %v", m.Meta["reason"])
				}
			}
		}
		if rejected != 1 || len(msgs) != 2 {
			t.Fatalf("adt messages: %d stored, %d rejected", len(msgs), rejected)
		}
	})
}

func writeFile(t *testing.T, path, body string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	tmp := filepath.Join(filepath.Dir(path), ".tmp-"+filepath.Base(path))
	if err := os.WriteFile(tmp, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, path); err != nil {
		t.Fatal(err)
	}
}
