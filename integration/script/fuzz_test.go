package script

import (
	"context"
	"regexp"
	"strings"
	"testing"
	"time"
	"unicode/utf8"
)

// FuzzHL7 feeds arbitrary text to hl7.parse through real V8: parsing either
// fails with an error or gives a message that serialises to the input with
// its segment ends normalised; a value set anywhere reads back the same,
// also after serialising and parsing again; nothing hangs.
func FuzzHL7(f *testing.F) {
	for _, s := range []string{
		adtA01,
		oruMessage(3),
		"MSH|^~\\&|A\rPID|1||123^^^MRN~456\r",
		"MSH!@#$%!A\nPID!1!!a@b#c\r\n",
		"MSH|^~\\&#|A\rNTE|1||\\P\\\\X41\\\\.br\\\r",
		"MSH|^~\\&",
		"PID|1\r",
		"MSH|^~|A",
		"\ufeffMSH|^~\\&|A\r\r\rPID|1",
	} {
		f.Add(s)
	}
	h, err := NewHost(Config{Isolates: 1})
	if err != nil {
		f.Fatal(err)
	}
	f.Cleanup(func() { h.Close() })
	err = h.Load(context.Background(), Interface{Name: "fuzz", Timeout: 5 * time.Second, Files: files(map[string]string{"transform.js": `
function transform(text) {
  let msg;
  try { msg = hl7.parse(text); } catch (e) { return "E" + e.message; }
  const out = msg.toString();
  for (const p of ["MSH-9.1", "PID-3[2].1", "OBX[2]-5.1.2", "MSH-2", "MSH-1"]) msg.get(p);
  msg.segments().forEach((s) => { s.get("1"); s.count("2"); });
  const v = "a|b^c&d~e\\f\r\ng";
  const copy = hl7.parse(out);
  copy.set("ZZZ-3[2].2", v);
  if (copy.get("ZZZ-3[2].2") !== v) throw new Error("set/get gave " + JSON.stringify(copy.get("ZZZ-3[2].2")));
  const again = hl7.parse(copy.toString());
  if (again.get("ZZZ-3[2].2") !== v) throw new Error("reparse gave " + JSON.stringify(again.get("ZZZ-3[2].2")));
  if (again.count("ZZZ") !== copy.count("ZZZ")) throw new Error("segments changed");
  return "O" + out;
}`})})
	if err != nil {
		f.Fatal(err)
	}
	ends := regexp.MustCompile(`\r\n|\r|\n`)
	f.Fuzz(func(t *testing.T, s string) {
		if !utf8.ValidString(s) || strings.ContainsRune(s, utf8.RuneError) {
			t.Skip()
		}
		res, err := h.Call(context.Background(), "fuzz", "", Input{Format: FormatText, Payload: []byte(s)})
		if err != nil {
			t.Fatal(err)
		}
		if res.Kind != KindOutput {
			t.Fatalf("%v: %s\n%s", res.Kind, res.Reason, res.Stack)
		}
		out := string(res.Output)
		if out[0] == 'E' {
			return
		}
		// the input with its BOM dropped, blank lines dropped, CR ends
		norm := strings.TrimPrefix(s, "\ufeff")
		lines := ends.Split(norm, -1)
		var kept []string
		for _, l := range lines {
			if l != "" {
				kept = append(kept, l)
			}
		}
		want := strings.Join(kept, "\r")
		if lines[len(lines)-1] == "" {
			want += "\r"
		}
		if out[1:] != want {
			t.Fatalf("parse(%q).toString() = %q, want %q", s, out[1:], want)
		}
	})
}

// FuzzCSV feeds arbitrary text to the CSV decoder: it fails with an error
// or gives records that survive writing and reading again unchanged.
func FuzzCSV(f *testing.F) {
	for _, s := range []string{"a,b\r\n1,2\r\n", "id,note\n1,\"a, \"\"b\"\"\nc\"\n", "a\n\"x\n", "a,b\n1,2,3\n", "\ufeffx\n 1 \n", ""} {
		f.Add(s)
	}
	h, err := NewHost(Config{Isolates: 1})
	if err != nil {
		f.Fatal(err)
	}
	f.Cleanup(func() { h.Close() })
	err = h.Load(context.Background(), Interface{Name: "fuzz", Files: files(map[string]string{"transform.js": `
function transform(text) {
  let first;
  try { first = csv.decode(text); } catch (e) { return "E" + e.message; }
  const records = Array.isArray(first) ? first : [first];
  if (records.length === 0) return "Eempty";
  const again = csv.decode(csv.encode(records));
  const a = JSON.stringify(records), b = JSON.stringify(Array.isArray(again) ? again : [again]);
  if (a !== b) throw new Error("round trip changed " + a + " into " + b);
  return "O";
}`})})
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if !utf8.ValidString(s) {
			t.Skip()
		}
		res, err := h.Call(context.Background(), "fuzz", "", Input{Format: FormatText, Payload: []byte(s)})
		if err != nil {
			t.Fatal(err)
		}
		if res.Kind != KindOutput {
			t.Fatalf("%q: %v: %s\n%s", s, res.Kind, res.Reason, res.Stack)
		}
	})
}
