package engine

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/ductus/ductus/integration/ixstore"
	"github.com/ductus/ductus/integration/msgstore"
	"github.com/ductus/ductus/internal/testutil"
)

func TestFileSourceCharsets(t *testing.T) {
	latin1 := charsetMsg("F1", "8859/1", "M\xDCLLER^J\xD6RG")
	notASCII := charsetMsg("F2", "ASCII", "M\xDCLLER")
	cases := []struct {
		iface, yaml, file, content string
		js, dest                   string   // the transform ("" returns its input) and extra destination keys
		accepted                   []string // UTF-8 text each stored record holds, in order
		rejected                   []string // the reasons of the records refused, in order
		out                        []string // the bytes the file destination writes, sorted
	}{
		{
			iface: "lines", yaml: "format: json\nsource: { type: file, path: inbox/lines, split: records, poll: 20ms }\n",
			file: "a.json", content: "{\"n\":\"A\"}\n{\"n\":\"M\xDCLLER\"}\n{\"n\":\"Ö\"}\n",
			accepted: []string{`"A"`, `"Ö"`}, rejected: []string{"byte 0xDC at offset 7 is not valid UNICODE UTF-8"},
			out: []string{`{"n":"A"}`, `{"n":"Ö"}`},
		},
		{
			iface: "adt", yaml: "format: hl7v2\nsource: { type: file, path: inbox/adt, split: records, poll: 20ms }\n",
			file: "a.hl7", content: string(latin1) + string(notASCII) + string(charsetMsg("F3", "KLINGON", "DOE")),
			accepted: []string{"MÜLLER^JÖRG"},
			rejected: []string{"is not valid ASCII", `MSH-18: unsupported character set: "KLINGON"`},
			out:      []string{string(latin1)}, // byte for byte as it came
		},
		{
			iface: "notes", yaml: "format: text\ncharset: windows-1252\nsource: { type: file, path: inbox/notes, poll: 20ms }\n",
			file: "n.txt", content: "\x80 5 \x93note\x94",
			accepted: []string{"€ 5 “note”"}, out: []string{"\x80 5 \x93note\x94"},
		},
		{
			// A Latin-1 CSV file cut into rows (header and rows not UTF-8),
			// sent on as JSON, which is UTF-8 whatever the file was.
			iface: "lab", yaml: "format: csv\ncharset: 8859/1\nsource: { type: file, path: inbox/lab, split: records, poll: 20ms }\n",
			file: "r.csv", content: "mrn,stra\xDFe\n1,M\xDCller\n2,G\xE4rtner\n",
			js: "function transform(r) { return { mrn: r.mrn, street: r[\"stra\u00dfe\"] }; }", dest: ", format: json",
			accepted: []string{"straße\n1,MÜller", "straße\n2,Gärtner"},
			out:      []string{`{"mrn":"1","street":"MÜller"}`, `{"mrn":"2","street":"Gärtner"}`},
		},
	}
	forEachBackend(t, func(t *testing.T, be ixstore.Backend) {
		files := map[string]string{"ductus.yaml": "script: { isolates: 1 }\napi: { listen: off }\n"}
		for _, c := range cases {
			files["interfaces/"+c.iface+"/interface.yaml"] = c.yaml + "destinations:\n  out: { type: file, path: out/" + c.iface + c.dest + " }\n"
			if c.js == "" {
				c.js = "function transform(m) { return m; }"
			}
			files["interfaces/"+c.iface+"/transform.js"] = c.js + "\n"
		}
		proj := project(t, files)
		e := running(t, proj, be)
		for _, c := range cases {
			t.Run(c.iface, func(t *testing.T) {
				writeFile(t, filepath.Join(proj.Dir, "inbox", c.iface, c.file), c.content)
				outDir := filepath.Join(proj.Dir, "out", c.iface)
				testutil.Eventually(t, 20*time.Second, "the records written", func() bool { return len(listFiles(t, outDir)) == len(c.out) })
				var accepted, rejected []string
				msgs, err := e.Store().List(context.Background(), c.iface, "", 100)
				if err != nil {
					t.Fatal(err)
				}
				sort.Slice(msgs, func(i, j int) bool { return msgs[i].ID < msgs[j].ID }) // UUIDv7: stored order
				for _, m := range msgs {
					if m.Status == msgstore.StatusRejected {
						reason, _ := m.Meta["reason"].(string)
						rejected = append(rejected, reason)
						continue
					}
					accepted = append(accepted, string(m.Payload))
				}
				if len(accepted) != len(c.accepted) || len(rejected) != len(c.rejected) {
					t.Fatalf("stored %q, rejected %q; want %d and %d", accepted, rejected, len(c.accepted), len(c.rejected))
				}
				for i, want := range c.accepted {
					if !strings.Contains(accepted[i], want) {
						t.Errorf("record %d stored as %q, want it to hold %q", i, accepted[i], want)
					}
				}
				for i, want := range c.rejected {
					if !strings.Contains(rejected[i], "cannot be read") || !strings.Contains(rejected[i], want) {
						t.Errorf("rejection %d: %q, want it to name %q", i, rejected[i], want)
					}
				}
				var got []string
				for _, p := range listFiles(t, outDir) {
					b, err := os.ReadFile(p)
					if err != nil {
						t.Fatal(err)
					}
					got = append(got, string(bytes.TrimRight(b, "\n")))
				}
				sort.Strings(got)
				for i := range got {
					if got[i] != c.out[i] {
						t.Fatalf("written %q, want %q", got, c.out)
					}
				}
			})
		}
	})
}
