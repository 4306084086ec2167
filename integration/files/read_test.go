package files

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/ductus/ductus/integration/config"
	"github.com/ductus/ductus/integration/format"
)

// piece is a stretch of a test file: a record (data as the record carries
// it) or a gap (data "") that no record covers.
type piece struct{ raw, data string }

func TestSplitRecords(t *testing.T) {
	const csvHeader = "id,note\n"
	for _, tc := range []struct {
		name   string
		kind   format.SplitKind
		header string // written before the pieces, not a record
		pieces []piece
	}{
		{name: "hl7 LF", kind: format.SplitHL7, pieces: []piece{
			{"MSH|^~\\&|LAB|A\nPID|1||M1\n", "MSH|^~\\&|LAB|A\nPID|1||M1\n"},
			{"MSH|^~\\&|LAB|B\nPID|1||M2\nOBX|1\n", "MSH|^~\\&|LAB|B\nPID|1||M2\nOBX|1\n"},
		}},
		{name: "hl7 CR", kind: format.SplitHL7, pieces: []piece{
			{"MSH|^~\\&|LAB|A\rPID|1||M1\r", "MSH|^~\\&|LAB|A\rPID|1||M1\r"},
			{"MSH|^~\\&|LAB|B\rPID|1||M2\r", "MSH|^~\\&|LAB|B\rPID|1||M2\r"},
			{"MSH|^~\\&|LAB|C\rPID|1||M3", "MSH|^~\\&|LAB|C\rPID|1||M3"},
		}},
		{name: "hl7 CRLF in a batch envelope", kind: format.SplitHL7, pieces: []piece{
			{"FHS|^~\\&\r\nBHS|^~\\&\r\n", ""},
			{"MSH|^~\\&|LAB|A\r\nPID|1\r\n", "MSH|^~\\&|LAB|A\r\nPID|1\r\n"},
			{"MSH|^~\\&|LAB|B\r\nPID|2\r\n", "MSH|^~\\&|LAB|B\r\nPID|2\r\n"},
			{"BTS|2\r\nFTS|1\r\n", ""},
		}},
		{name: "csv with a quoted line end", kind: format.SplitCSV, header: csvHeader, pieces: []piece{
			{"1,\"two\nlines\"\n", csvHeader + "1,\"two\nlines\"\n"},
			{"2,\"a, b\"\r\n", csvHeader + "2,\"a, b\"\r\n"},
			{"\n", ""},
			{"3,last", csvHeader + "3,last"},
		}},
		{name: "lines", kind: format.SplitLines, pieces: []piece{
			{"{\"a\":1}\n", "{\"a\":1}"},
			{"\n  \n", ""},
			{"{\"a\":2}\r\n", "{\"a\":2}"},
			{"{\"a\":3}", "{\"a\":3}"},
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			var file strings.Builder
			file.WriteString(tc.header)
			type want struct {
				data       string
				start, end int64
			}
			var wants []want
			for _, p := range tc.pieces {
				start := int64(file.Len())
				file.WriteString(p.raw)
				if p.data != "" {
					wants = append(wants, want{p.data, start, int64(file.Len())})
				}
			}
			put(t, dir, "in.dat", file.String(), 1)
			e := newEngine()
			w, _ := newWatcher(t, dir, e, func(c *WatcherConfig) {
				c.Split, c.Kind = config.SplitRecords, tc.kind
				c.BufferSize = 16 // records across many reads
			})
			if err := polls(t, w, 2); err != nil {
				t.Fatal(err)
			}
			_, batches, _ := e.snapshot()
			if len(batches) != 1 || !batches[0].Progress.Done || len(batches[0].Rejected) != 0 {
				t.Fatalf("batches %+v", batches)
			}
			var got []want
			for _, r := range batches[0].Records {
				got = append(got, want{string(r.Data), r.Start, r.End})
			}
			if !slices.Equal(got, wants) {
				t.Fatalf("records\n got %+v\nwant %+v", got, wants)
			}
			p := batches[0].Progress
			if p.Records != int64(len(wants)) || p.Offset != wants[len(wants)-1].end {
				t.Fatalf("progress %+v", p)
			}
			if tc.kind == format.SplitCSV && string(p.Header) != csvHeader {
				t.Fatalf("progress header %q", p.Header)
			}
		})
	}
}

func TestBatching(t *testing.T) {
	for _, tc := range []struct {
		name       string
		records    int
		batchBytes int
		wantSizes  []int
	}{
		{name: "1200 records by 500", records: 1200, wantSizes: []int{500, 500, 200}},
		{name: "exactly 1000", records: 1000, wantSizes: []int{500, 500}},
		{name: "by bytes", records: 5, batchBytes: 20, wantSizes: []int{2, 2, 1}}, // 8 bytes each
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			var b strings.Builder
			for i := range tc.records {
				fmt.Fprintf(&b, "rec-%04d\n", i)
			}
			put(t, dir, "many.txt", b.String(), 1)
			e := newEngine()
			w, logs := newWatcher(t, dir, e, func(c *WatcherConfig) {
				c.Split, c.Kind, c.BatchBytes = config.SplitRecords, format.SplitLines, tc.batchBytes
			})
			if err := polls(t, w, 2); err != nil {
				t.Fatal(err)
			}
			recs, batches, _ := e.snapshot()
			var sizes []int
			next, total := 0, int64(0)
			for i, bt := range batches {
				sizes = append(sizes, len(bt.Records))
				for _, r := range bt.Records {
					if want := fmt.Sprintf("rec-%04d", next); string(r.Data) != want || r.Start != int64(9*next) || r.End != int64(9*next+9) {
						t.Fatalf("record %d = %q [%d-%d], want %q [%d-%d]", next, r.Data, r.Start, r.End, want, 9*next, 9*next+9)
					}
					next++
				}
				total += int64(len(bt.Records))
				p := bt.Progress
				if last := i == len(batches)-1; p.Done != last || p.Offset != int64(9*next) || p.Records != total {
					t.Fatalf("batch %d progress %+v (want done=%v offset=%d records=%d)", i, p, last, 9*next, total)
				}
			}
			if !slices.Equal(sizes, tc.wantSizes) || len(recs) != tc.records {
				t.Fatalf("batch sizes %v, want %v", sizes, tc.wantSizes)
			}
			if logs.Count("file batch committed") != len(tc.wantSizes) || logs.Count("file started") != 1 || logs.Count("file finished") != 1 {
				t.Fatal("the progress lines are not one per batch and one per file start and finish")
			}
		})
	}
}

// fileOf returns a file of n records of kind, and the data each record
// carries.
func fileOf(kind format.SplitKind, tag string, n int) (string, []string) {
	var b strings.Builder
	var want []string
	switch kind {
	case format.SplitCSV:
		b.WriteString("id,value\n")
	}
	for i := range n {
		switch kind {
		case format.SplitHL7:
			rec := fmt.Sprintf("MSH|^~\\&|%s|%d\rPID|1||M%d\r", tag, i, i)
			b.WriteString(rec)
			want = append(want, rec)
		case format.SplitCSV:
			row := fmt.Sprintf("%d,\"%s\n%d\"\n", i, tag, i)
			b.WriteString(row)
			want = append(want, "id,value\n"+row)
		default:
			fmt.Fprintf(&b, "{\"%s\":%d}\n", tag, i)
			want = append(want, fmt.Sprintf("{\"%s\":%d}", tag, i))
		}
	}
	return b.String(), want
}

func TestResumeAfterAFailedCommit(t *testing.T) {
	kinds := []format.SplitKind{format.SplitLines, format.SplitCSV, format.SplitHL7}
	for _, tc := range []struct {
		name string
		// stored: the failing commit stored the batch (its answer was lost)
		stored bool
		// cancel: the context ends during the commit, ending Run
		cancel bool
		// noHeader: the engine lost the CSV header from the progress
		noHeader bool
	}{
		{name: "refused"},
		{name: "stored but reported failed", stored: true},
		{name: "context cancelled", cancel: true},
		{name: "header not saved", noHeader: true},
	} {
		for _, kind := range kinds {
			if tc.noHeader && kind != format.SplitCSV {
				continue
			}
			t.Run(tc.name+"/"+string(kind), func(t *testing.T) {
				dir := t.TempDir()
				content, want := fileOf(kind, "v", 10)
				p := put(t, dir, "feed", content, 1)
				// A time with nanoseconds, which the engine keeps only to
				// the microsecond.
				at := base.Add(123456789)
				if err := os.Chtimes(p, at, at); err != nil {
					t.Fatal(err)
				}
				e := newEngine()
				ctx, cancel := context.WithCancel(t.Context())
				defer cancel()
				e.refuse = func(n int, _ Batch) (bool, error) {
					if n != 2 {
						return false, nil
					}
					if tc.cancel {
						cancel()
						return false, context.Canceled
					}
					return tc.stored, errors.New("connection lost")
				}
				batch3 := func(c *WatcherConfig) { c.Split, c.Kind, c.BatchRecords = config.SplitRecords, kind, 3 }
				w, _ := newWatcher(t, dir, e, batch3)
				if tc.cancel {
					if err := w.Run(ctx); err != nil {
						t.Fatal(err)
					}
				} else if err := polls(t, w, 2); err == nil {
					t.Fatal("the failed commit was not reported")
				}
				saved := e.progress["feed"]
				if saved.Done || saved.Records == 0 {
					t.Fatalf("after the failure the progress is %+v", saved)
				}
				if tc.noHeader {
					saved.Header = nil
					e.progress["feed"] = saved
				}
				// A restart: a new watcher, the engine's progress kept.
				e.refuse = nil
				w2, logs := newWatcher(t, dir, e, batch3)
				if err := polls(t, w2, 2); err != nil {
					t.Fatal(err)
				}
				recs, batches, fin := e.snapshot()
				if !slices.Equal(recs, want) {
					t.Fatalf("records over both runs\n got %q\nwant %q", recs, want)
				}
				if !slices.Equal(fin, []string{"feed"}) {
					t.Fatalf("finished %q", fin)
				}
				// The resumed run began exactly at the saved offset.
				var resumed *Batch
				for i := range batches {
					if batches[i].Records[0].Start == saved.Offset {
						resumed = &batches[i]
					}
				}
				if resumed == nil {
					t.Fatalf("no batch starts at the saved offset %d", saved.Offset)
				}
				if logs.Count("changed") != 0 {
					t.Fatal("the unchanged file was taken as changed")
				}
			})
		}
	}
}

func TestFileChangedBetweenRunsIsReadFromTheStart(t *testing.T) {
	dir := t.TempDir()
	content, oldRecs := fileOf(format.SplitLines, "old", 10)
	put(t, dir, "feed", content, 1)
	e := newEngine()
	e.refuse = func(n int, _ Batch) (bool, error) {
		if n == 2 {
			return false, errors.New("connection lost")
		}
		return false, nil
	}
	batch3 := func(c *WatcherConfig) { c.Split, c.Kind, c.BatchRecords = config.SplitRecords, format.SplitLines, 3 }
	w, _ := newWatcher(t, dir, e, batch3)
	if err := polls(t, w, 2); err == nil {
		t.Fatal("the failed commit was not reported")
	}
	content, newRecs := fileOf(format.SplitLines, "new", 12)
	put(t, dir, "feed", content, 2)
	e.refuse = nil
	w2, logs := newWatcher(t, dir, e, batch3)
	if err := polls(t, w2, 2); err != nil {
		t.Fatal(err)
	}
	recs, _, _ := e.snapshot()
	if want := append(oldRecs[:3:3], newRecs...); !slices.Equal(recs, want) {
		t.Fatalf("records\n got %q\nwant %q", recs, want)
	}
	if logs.Count("file changed since its progress was saved") != 1 {
		t.Fatal("the change was not logged")
	}
}

func TestRejectedRecordsAreBatched(t *testing.T) {
	long := strings.Repeat("z", 5000)
	for _, tc := range []struct {
		name       string
		kind       format.SplitKind
		content    string
		wantRecs   []string
		wantRej    []Rejected // Data compared as given; Reason by substring
		wantOffset int64
	}{
		{
			name: "a line over the record limit", kind: format.SplitLines,
			content:  "first\n" + long + "\nlast\n",
			wantRecs: []string{"first", "last"},
			wantRej:  []Rejected{{Start: 6, End: 5007, Reason: "longer than the limit", TooLarge: true, Data: []byte(long[:PreviewBytes]), Truncated: true}},
		},
		{
			name: "a csv row with too many fields", kind: format.SplitCSV,
			content:  "a,b\n1,2\n1,2,3\n4,5\n",
			wantRecs: []string{"a,b\n1,2\n", "a,b\n4,5\n"},
			wantRej:  []Rejected{{Start: 8, End: 14, Reason: "3 fields", Data: []byte("1,2,3\n")}},
		},
		{
			name: "hl7 lines outside a message", kind: format.SplitHL7,
			content:  "junk\rPID|1\rMSH|^~\\&|A\rPID|1\r",
			wantRecs: []string{"MSH|^~\\&|A\rPID|1\r"},
			wantRej:  []Rejected{{Start: 0, End: 11, Reason: "outside any message", Data: []byte("junk\rPID|1\r")}},
		},
		{
			name: "a csv file whose header is unusable", kind: format.SplitCSV,
			content: "\"id,b\n1,2\n",
			wantRej: []Rejected{{Start: 0, End: 10, Reason: "header row", Data: []byte("\"id,b\n1,2\n")}},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			put(t, dir, "in", tc.content, 1)
			e := newEngine()
			w, _ := newWatcher(t, dir, e, func(c *WatcherConfig) {
				c.Split, c.Kind, c.MaxRecord = config.SplitRecords, tc.kind, 1024
			})
			if err := polls(t, w, 2); err != nil {
				t.Fatal(err)
			}
			recs, batches, fin := e.snapshot()
			if !slices.Equal(recs, tc.wantRecs) || len(fin) != 1 {
				t.Fatalf("records %q finished %q", recs, fin)
			}
			got := batches[len(batches)-1]
			if len(got.Rejected) != len(tc.wantRej) {
				t.Fatalf("rejected %+v", got.Rejected)
			}
			for i, r := range got.Rejected {
				want := tc.wantRej[i]
				if r.Start != want.Start || r.End != want.End || r.TooLarge != want.TooLarge || r.Truncated != want.Truncated ||
					string(r.Data) != string(want.Data) || !strings.Contains(r.Reason, want.Reason) {
					t.Errorf("rejected %d = %+v (data %q), want %+v", i, r, r.Data, want)
				}
			}
			if p := got.Progress; p.Rejected != int64(len(tc.wantRej)) || p.Records != int64(len(tc.wantRecs)) || !p.Done {
				t.Fatalf("progress %+v", p)
			}
			if exists(t, filepath.Join(dir, "in")) {
				t.Fatal("the file with rejected records was not moved")
			}
		})
	}
}

func TestUnsplitFileIsOneRecord(t *testing.T) {
	dir := t.TempDir()
	body := "MSH|^~\\&|A\rPID|1\rMSH|^~\\&|B\r" // two messages, but not split
	put(t, dir, "one.hl7", body, 1)
	e := newEngine()
	w, _ := newWatcher(t, dir, e, func(c *WatcherConfig) { c.After = config.AfterDelete })
	if err := polls(t, w, 2); err != nil {
		t.Fatal(err)
	}
	recs, _, fin := e.snapshot()
	if !slices.Equal(recs, []string{body}) || !slices.Equal(fin, []string{"one.hl7"}) {
		t.Fatalf("records %q finished %q", recs, fin)
	}
	if _, err := os.Stat(filepath.Join(dir, "one.hl7")); !os.IsNotExist(err) {
		t.Fatalf("the file was not deleted: %v", err)
	}
}
