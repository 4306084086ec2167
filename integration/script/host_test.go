package script

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"strings"
	"sync"
	"testing"
	"time"
)

func TestResultKinds(t *testing.T) {
	h := newTestHost(t, Config{})
	loadJS(t, h, "kinds", `
function transform(msg, meta) { return "out:" + msg; }
function toNull() { return null; }
function toUndefined() {}
function filtered() { filter("not an inpatient"); }
function quarantined() { helper(); }
function helper() { quarantine("no MRN in PID-3"); }
function thrown() { const o = {}; return o.missing.field; }
function thrownString() { throw "plain string"; }
function transientCall() { transient("EMR lookup down"); }
function transientThrow() { throw transient("again"); }
async function asyncOut(msg) { await null; return "async:" + msg; }
async function asyncThrow() { await null; throw new TypeError("late"); }
async function asyncTransient() { await null; transient("later"); }
function neverSettles() { return new Promise(() => {}); }
function lookalike() { const e = new Error("TRANSIENT: looks like one"); e.name = "Transient"; e.reason = "x"; throw e; }
function objectForText() { return {a: 1}; }
function numberForText() { return 42; }
function catches() { try { quarantine("swallowed"); } catch (e) {} return "kept going"; }
const arrow = (msg) => "arrow:" + msg;
let later = function () { return "let"; };
exports.exported = () => "exported";
`)
	tests := []struct {
		fn        string
		kind      Kind
		output    string
		reason    string // substring
		stackHas  string
		stackNone bool
	}{
		{fn: "", kind: KindOutput, output: "out:hello"},
		{fn: "toNull", kind: KindFiltered, reason: "returned null"},
		{fn: "toUndefined", kind: KindFiltered, reason: "returned undefined"},
		{fn: "filtered", kind: KindFiltered, reason: "not an inpatient"},
		{fn: "quarantined", kind: KindQuarantined, reason: "no MRN in PID-3", stackHas: "kinds/transform.js:7"},
		{fn: "thrown", kind: KindQuarantined, reason: "TypeError: Cannot read properties of undefined", stackHas: "at thrown (kinds/transform.js:8"},
		{fn: "thrownString", kind: KindQuarantined, reason: "the transform threw plain string"},
		{fn: "transientCall", kind: KindTransient, reason: "EMR lookup down", stackNone: true},
		{fn: "transientThrow", kind: KindTransient, reason: "again"},
		{fn: "asyncOut", kind: KindOutput, output: "async:hello"},
		{fn: "asyncThrow", kind: KindQuarantined, reason: "TypeError: late"},
		{fn: "asyncTransient", kind: KindTransient, reason: "later"},
		{fn: "neverSettles", kind: KindQuarantined, reason: "never settled"},
		{fn: "lookalike", kind: KindQuarantined, reason: "Transient: TRANSIENT: looks like one"},
		{fn: "objectForText", kind: KindQuarantined, reason: "cannot write the result as text"},
		{fn: "numberForText", kind: KindOutput, output: "42"},
		{fn: "catches", kind: KindOutput, output: "kept going"},
		{fn: "arrow", kind: KindOutput, output: "arrow:hello"},
		{fn: "later", kind: KindOutput, output: "let"},
		{fn: "exported", kind: KindOutput, output: "exported"},
	}
	for _, tt := range tests {
		t.Run("fn="+tt.fn, func(t *testing.T) {
			res := mustCall(t, h, "kinds", tt.fn, text("hello"))
			if res.Kind != tt.kind {
				t.Fatalf("kind = %v (%q), want %v", res.Kind, res.Reason, tt.kind)
			}
			if tt.kind == KindOutput && string(res.Output) != tt.output {
				t.Errorf("output = %q, want %q", res.Output, tt.output)
			}
			if !strings.Contains(res.Reason, tt.reason) {
				t.Errorf("reason = %q, want it to contain %q", res.Reason, tt.reason)
			}
			if tt.stackHas != "" && !strings.Contains(res.Stack, tt.stackHas) {
				t.Errorf("stack = %q, want it to contain %q", res.Stack, tt.stackHas)
			}
			if strings.Contains(res.Stack, "ductus:") {
				t.Errorf("stack shows SDK frames: %q", res.Stack)
			}
			if tt.stackNone && res.Stack != "" {
				t.Errorf("stack = %q, want none", res.Stack)
			}
		})
	}
}

func TestCallErrors(t *testing.T) {
	h := newTestHost(t, Config{})
	loadJS(t, h, "a", `function transform(m) { return m; }`)
	tests := []struct {
		name  string
		iface string
		fn    string
		in    Input
		want  error
	}{
		{"unknown interface", "nope", "", text("x"), ErrUnknownInterface},
		{"unknown function", "a", "toNowhere", text("x"), ErrUnknownFunction},
		{"builtin is not a transform", "a", "parseInt", text("x"), ErrUnknownFunction},
		{"SDK global is not a transform", "a", "quarantine", text("x"), ErrUnknownFunction},
		{"inherited is not a transform", "a", "toString", text("x"), ErrUnknownFunction},
		{"constructor is not a transform", "a", "constructor", text("x"), ErrUnknownFunction},
		{"a lexical built-in is not a transform", "a", "undefined", text("x"), ErrUnknownFunction},
		{"not an identifier", "a", "x-y", text("x"), ErrUnknownFunction},
		{"bad input format", "a", "", Input{Format: "xml", Payload: []byte("x")}, ErrBadInput},
		{"bad output format", "a", "", Input{Format: FormatText, OutputFormat: "pdf", Payload: []byte("x")}, ErrBadInput},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := h.Call(context.Background(), tt.iface, tt.fn, tt.in)
			if !errors.Is(err, tt.want) {
				t.Fatalf("err = %v, want %v", err, tt.want)
			}
		})
	}
	res := mustCall(t, h, "a", "", Input{Format: FormatText, Payload: []byte("ok\xff")})
	if res.Kind != KindQuarantined || !strings.Contains(res.Reason, "not valid UTF-8 (at byte 2)") {
		t.Errorf("invalid UTF-8: %+v", res)
	}
}

func TestMeta(t *testing.T) {
	h := newTestHost(t, Config{})
	loadJS(t, h, "meta", `function transform(msg, meta) {
  return JSON.stringify({id: meta.id, at: meta.receivedAt && meta.receivedAt.toISOString(), dest: meta.destination,
    origin: meta.origin, frozen: Object.isFrozen(meta)});
}`)
	at := time.Date(2024, 3, 5, 10, 11, 12, 345_000_000, time.UTC)
	tests := []struct {
		meta Meta
		want string
	}{
		{Meta{ID: "42", ReceivedAt: at, Destination: "emr", Origin: "7"}, `{"id":"42","at":"2024-03-05T10:11:12.345Z","dest":"emr","origin":"7","frozen":true}`},
		{Meta{ID: "43", Destination: "archive"}, `{"id":"43","at":null,"dest":"archive","origin":null,"frozen":true}`},
	}
	for _, tt := range tests {
		res := mustCall(t, h, "meta", "", Input{Format: FormatText, Payload: []byte("x"), Meta: tt.meta})
		if string(res.Output) != tt.want {
			t.Errorf("meta %+v: got %s, want %s", tt.meta, res.Output, tt.want)
		}
	}
}

func TestConsoleReachesSlog(t *testing.T) {
	rec := &records{}
	h := newTestHost(t, Config{Logger: slog.New(recordHandler{r: rec})})
	loadJS(t, h, "adt-feed", `
console.info("loaded");
function transform(msg, meta) {
  console.log("patient", {mrn: "123"}, 7);
  console.warn("careful");
  console.error(new Error("bad thing"));
  console.debug("details");
  return msg;
}`)
	if l, ok := rec.find("loaded"); !ok || l.Attrs["interface"] != "adt-feed" {
		t.Errorf("top-level console.info: %+v (found %v)", l, ok)
	}
	mustCall(t, h, "adt-feed", "", Input{Format: FormatText, Payload: []byte("x"), Meta: Meta{ID: "m-9", Destination: "emr"}})
	tests := []struct {
		substr string
		level  slog.Level
	}{
		{`patient {"mrn":"123"} 7`, slog.LevelInfo},
		{"careful", slog.LevelWarn},
		{"Error: bad thing", slog.LevelError},
		{"details", slog.LevelDebug},
	}
	for _, tt := range tests {
		l, ok := rec.find(tt.substr)
		if !ok {
			t.Errorf("no log line with %q", tt.substr)
			continue
		}
		if l.Level != tt.level || l.Attrs["interface"] != "adt-feed" || l.Attrs["message_id"] != "m-9" || l.Attrs["destination"] != "emr" {
			t.Errorf("line %q: level %v attrs %v", tt.substr, l.Level, l.Attrs)
		}
	}
}

func TestEnvAndSecret(t *testing.T) {
	h := newTestHost(t, Config{
		Env: func(iface, name string) (string, bool) {
			if name == "SITE" {
				return iface + "-site", true
			}
			return "", false
		},
		Secret: func(iface, name string) (string, bool) {
			if name == "TOKEN" {
				return "s3cret", true
			}
			return "", false
		},
	})
	loadJS(t, h, "envy", `
function site() { return env("SITE"); }
function fallback() { return env("MISSING", "default"); }
function missing() { return env("MISSING"); }
function token() { return secret("TOKEN"); }
function noSecret() { return secret("NOPE"); }
function repeated() { let s = ""; for (let i = 0; i < 1000; i++) s = env("SITE"); return s; }
`)
	tests := []struct {
		fn     string
		kind   Kind
		output string
		reason string
	}{
		{"site", KindOutput, "envy-site", ""},
		{"fallback", KindOutput, "default", ""},
		{"missing", KindQuarantined, "", "env: MISSING is not defined for this interface"},
		{"token", KindOutput, "s3cret", ""},
		{"noSecret", KindQuarantined, "", "secret: NOPE is not defined for this interface"},
		{"repeated", KindOutput, "envy-site", ""},
	}
	for _, tt := range tests {
		res := mustCall(t, h, "envy", tt.fn, text("x"))
		if res.Kind != tt.kind || string(res.Output) != tt.output || !strings.Contains(res.Reason, tt.reason) {
			t.Errorf("%s: %v %q %q, want %v %q %q", tt.fn, res.Kind, res.Output, res.Reason, tt.kind, tt.output, tt.reason)
		}
	}
}

func TestSandbox(t *testing.T) {
	h := newTestHost(t, Config{})
	loadJS(t, h, "box", `
function transform(name) {
  return String(eval("typeof " + name));
}
function requireFs() { return require("f" + "s"); }
function requireOut() { const p = "../other/x.js"; return require(p); }
`)
	for _, g := range []string{"fetch", "setTimeout", "setInterval", "XMLHttpRequest", "process", "SharedArrayBuffer", "Atomics", "WebAssembly", "__ductus_log", "__ductus_env", "Deno", "Bun"} {
		res := mustCall(t, h, "box", "", text(g))
		if res.Kind != KindOutput || string(res.Output) != "undefined" {
			t.Errorf("typeof %s = %q (%v %s), want undefined", g, res.Output, res.Kind, res.Reason)
		}
	}
	for _, g := range []string{"hl7", "csv", "env", "secret", "quarantine", "transient", "filter", "require", "console"} {
		res := mustCall(t, h, "box", "", text(g))
		if res.Kind != KindOutput || (string(res.Output) != "object" && string(res.Output) != "function") {
			t.Errorf("typeof %s = %q, want a value", g, res.Output)
		}
	}
	tests := []struct {
		fn, reason string
	}{
		{"requireFs", `require("fs"): only the interface's own files can be required`},
		{"requireOut", "leaves the interface folder"},
	}
	for _, tt := range tests {
		res := mustCall(t, h, "box", tt.fn, text("x"))
		if res.Kind != KindQuarantined || !strings.Contains(res.Reason, tt.reason) {
			t.Errorf("%s: %v %q", tt.fn, res.Kind, res.Reason)
		}
	}
}

func TestMultiFileInterface(t *testing.T) {
	h := newTestHost(t, Config{})
	mustLoad(t, h, Interface{
		Name: "lab",
		Files: files(map[string]string{
			"transform.js": `
const { label } = require("./lib/names.js");
const codes = require("./codes.json");
exports.toJSON = function (msg) { return { code: msg, name: label(msg), unit: codes[msg].unit, again: require("./lib/names").calls() }; };
function transform(msg) { return label(msg); }
`,
			"lib/names.js": `
const codes = require("../codes.json");
let n = 0;
module.exports = { label: (c) => { n++; return codes[c] ? codes[c].name : "unknown"; }, calls: () => n };
`,
			"codes.json": `{"GLU": {"name": "Glucose", "unit": "mg/dL"}}`,
			"unused.js":  `throw new Error("never required, never run");`,
			"other/x.js": `module.exports = 1;`,
		}),
		Functions: []string{"transform", "toJSON"},
	})
	res := mustCall(t, h, "lab", "", text("GLU"))
	if string(res.Output) != "Glucose" {
		t.Errorf("transform = %v %q %q", res.Kind, res.Output, res.Reason)
	}
	res = mustCall(t, h, "lab", "toJSON", Input{Format: FormatText, OutputFormat: FormatJSON, Payload: []byte("GLU")})
	if want := `{"code":"GLU","name":"Glucose","unit":"mg/dL","again":2}`; string(res.Output) != want {
		t.Errorf("toJSON = %v %q %q, want %s", res.Kind, res.Output, res.Reason, want)
	}
}

func TestLoadErrors(t *testing.T) {
	h := newTestHost(t, Config{})
	tests := []struct {
		name  string
		spec  Interface
		file  string
		line  int
		inMsg string
	}{
		{"syntax error", Interface{Files: files(map[string]string{"transform.js": "function transform(m) {\n  return m +;\n}"})}, "transform.js", 2, "SyntaxError"},
		{"syntax error in a module", Interface{Files: files(map[string]string{"transform.js": "require('./lib.js');", "lib.js": "\n\nlet = = 1;"})}, "lib.js", 3, "SyntaxError"},
		{"throw at top level", Interface{Files: files(map[string]string{"transform.js": "\nconst x = null;\nx.y = 1;\nfunction transform() {}"})}, "transform.js", 3, "TypeError"},
		{"throw in a required module", Interface{Files: files(map[string]string{"transform.js": "const l = require('./lib.js');\nfunction transform() {}", "lib.js": "\n\n\nthrow new Error('lib is broken');"})}, "lib.js", 4, "lib is broken"},
		{"require a package", Interface{Files: files(map[string]string{"transform.js": "function transform() {}\n\nconst fs = require('fs');"})}, "transform.js", 3, `require("fs"): only the interface's own files`},
		{"require a missing file", Interface{Files: files(map[string]string{"transform.js": "const x = require(\"./helpers.js\");"})}, "transform.js", 1, "has no file helpers.js"},
		{"require outside the folder", Interface{Files: files(map[string]string{"transform.js": "\nrequire('../secrets.js');"})}, "transform.js", 2, "leaves the interface folder"},
		{"import statement", Interface{Files: files(map[string]string{"transform.js": "\nimport x from './lib.js';"})}, "transform.js", 2, "Cannot use import statement"},
		{"dynamic import", Interface{Files: files(map[string]string{"transform.js": "function transform() {\n  return import('./lib.js');\n}"})}, "transform.js", 2, "import() is not available"},
		{"missing function", Interface{Files: files(map[string]string{"transform.js": "function transform() {}\nfunction other() {}"}), Functions: []string{"transform", "toEMR"}}, "transform.js", 0, `function "toEMR" is not defined (the code defines other, transform)`},
		{"bad json", Interface{Files: files(map[string]string{"transform.js": "function transform() {}", "codes.json": "{\n\"a\": 1,\n}"})}, "codes.json", 3, "not valid JSON"},
		{"no entry file", Interface{Files: files(map[string]string{"a.js": "", "b.js": ""})}, "", 0, "no transform.js"},
		{"not utf-8", Interface{Files: files(map[string]string{"transform.js": "// ok\n// \xff"})}, "transform.js", 2, "not valid UTF-8"},
		{"bad file name", Interface{Files: files(map[string]string{"../x.js": ""})}, "../x.js", 0, "clean relative path"},
		{"bad timeout", Interface{Files: files(map[string]string{"transform.js": ""}), Timeout: time.Hour}, "", 0, "outside"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.spec.Name = "broken"
			err := h.Load(context.Background(), tt.spec)
			var le *LoadError
			if !errors.As(err, &le) || !errors.Is(err, ErrBadInterface) {
				t.Fatalf("err = %v (%T), want a *LoadError", err, err)
			}
			if le.File != tt.file || le.Line != tt.line || !strings.Contains(le.Message, tt.inMsg) {
				t.Errorf("got %s:%d %q, want %s:%d containing %q", le.File, le.Line, le.Message, tt.file, tt.line, tt.inMsg)
			}
			if _, ok := h.Status("broken"); ok {
				t.Errorf("a broken interface was published")
			}
		})
	}
	// commented-out requires are not scanned
	loadJS(t, h, "commented", "// const fs = require('fs');\n/* require('net') */\nconst s = \"// not a comment\"; function transform() { return s; }")
	if res := mustCall(t, h, "commented", "", text("x")); string(res.Output) != "// not a comment" {
		t.Errorf("commented: %+v", res)
	}
}

func TestInterfacesAreIsolated(t *testing.T) {
	h := newTestHost(t, Config{Isolates: 1}) // one isolate: both contexts live in it
	loadJS(t, h, "a", `var shared = "from a"; Array.prototype.polluted = "a"; function transform() { return shared; } function onlyA() {}`)
	loadJS(t, h, "b", `function transform() { return [typeof shared, typeof onlyA, typeof [].polluted].join(","); }`)
	if res := mustCall(t, h, "a", "", text("x")); string(res.Output) != "from a" {
		t.Fatalf("a: %+v", res)
	}
	if res := mustCall(t, h, "b", "", text("x")); string(res.Output) != "undefined,undefined,undefined" {
		t.Errorf("b sees a's globals: %s", res.Output)
	}
	if _, err := h.Call(context.Background(), "b", "onlyA", text("x")); !errors.Is(err, ErrUnknownFunction) {
		t.Errorf("b.onlyA: %v", err)
	}
}

func TestReloadAndUnload(t *testing.T) {
	h := newTestHost(t, Config{Isolates: 2})
	loadJS(t, h, "r", `var calls = 0; function transform() { return "v1:" + (++calls); }`)
	mustCall(t, h, "r", "", text("x"))
	loadJS(t, h, "r", `function transform() { return "v2"; }`)
	for i := 0; i < 4; i++ {
		if res := mustCall(t, h, "r", "", text("x")); string(res.Output) != "v2" {
			t.Fatalf("after reload: %s", res.Output)
		}
	}
	if err := h.Unload("r"); err != nil {
		t.Fatal(err)
	}
	if _, err := h.Call(context.Background(), "r", "", text("x")); !errors.Is(err, ErrUnknownInterface) {
		t.Errorf("after unload: %v", err)
	}
}

func TestConcurrentCallsOnTwoIsolates(t *testing.T) {
	h := newTestHost(t, Config{Isolates: 2})
	loadJS(t, h, "echo", `var n = 0; function transform(msg, meta) { n++; let s = 0; for (let i = 0; i < 1000; i++) s += i; return meta.id + ":" + msg + ":" + s; }`)
	loadJS(t, h, "upper", `function transform(msg) { return msg.toUpperCase(); }`)
	const goroutines, calls = 8, 40
	var wg sync.WaitGroup
	errs := make(chan error, goroutines*calls)
	for g := 0; g < goroutines; g++ {
		wg.Add(1)
		go func(g int) {
			defer wg.Done()
			for i := 0; i < calls; i++ {
				id := fmt.Sprintf("g%d-%d", g, i)
				iface, want := "echo", id+":p"+id+":499500"
				if i%3 == 0 {
					iface, want = "upper", strings.ToUpper("p"+id)
				}
				res, err := h.Call(context.Background(), iface, "", Input{Format: FormatText, Payload: []byte("p" + id), Meta: Meta{ID: id}})
				if err != nil {
					errs <- err
					continue
				}
				if string(res.Output) != want {
					errs <- fmt.Errorf("%s: got %q, want %q", id, res.Output, want)
				}
			}
		}(g)
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}

// Every value v8go hands out stays alive until it is released (or its
// context closed); a call that forgot one would keep each payload alive.
func TestValuesDoNotAccumulate(t *testing.T) {
	h := newTestHost(t, Config{Isolates: 1})
	loadJS(t, h, "v", `function transform(m) { console.log("x"); return env("A", "b") + m.length; } function collect() { gc(); return ""; }`)
	in := text(strings.Repeat("x", 64<<10))
	heap := func() uint64 {
		mustCall(t, h, "v", "collect", text(""))
		return h.workers[0].iso.GetHeapStatistics().UsedHeapSize // idle: nothing runs in the isolate
	}
	for i := 0; i < 20; i++ {
		mustCall(t, h, "v", "", in)
	}
	before, values := heap(), h.workers[0].bindings["v"].ctx.RetainedValueCount()
	for i := 0; i < 500; i++ {
		mustCall(t, h, "v", "", in)
	}
	if after := heap(); after > before+8<<20 {
		t.Errorf("the heap grew from %d to %d bytes over 500 calls with a 64 KiB payload", before, after)
	}
	if after := h.workers[0].bindings["v"].ctx.RetainedValueCount(); after > values+2 {
		t.Errorf("values retained by the context grew from %d to %d over 500 calls", values, after)
	}
}

func TestFormats(t *testing.T) {
	h := newTestHost(t, Config{})
	loadJS(t, h, "f", `
function transform(msg) { return msg; }
function describe(msg) { return JSON.stringify(msg); }
function record(msg) { return { id: msg.id, name: msg.name.toUpperCase(), note: "has, comma" }; }
function records() { return [{ a: 1, b: "x\"y" }, { a: 2, b: null }]; }
function hl7ToJSON(msg) { return { mrn: msg.get("PID-3.1"), type: msg.type }; }
function hl7Out(msg) { msg.set("PID-5.1", "ROE"); return msg; }
function objectForHL7() { return { a: 1 }; }
function messageForCSV(msg) { return hl7.parse("MSH|^~\\&|A\r"); }
function fn() { return function () {}; }
`)
	const adt = "MSH|^~\\&|SEND|FAC|RECV|FAC|20240101120000||ADT^A01|MSG1|P|2.5.1\rPID|1||123^^^MRN||DOE^JOHN\r"
	tests := []struct {
		name    string
		fn      string
		in, out Format
		payload string
		kind    Kind
		want    string
	}{
		{"text passes through", "", FormatText, "", "plain text\n", KindOutput, "plain text\n"},
		{"json decodes", "describe", FormatJSON, FormatText, `{"a": [1, 2], "b": "c"}`, KindOutput, `{"a":[1,2],"b":"c"}`},
		{"json object stringified", "", FormatJSON, "", `{"a": [1, 2]}`, KindOutput, `{"a":[1,2]}`},
		{"json string passes through", "", FormatText, FormatJSON, `not json at all`, KindOutput, `not json at all`},
		{"bad json quarantined", "", FormatJSON, "", `{"a":`, KindQuarantined, "the payload is not valid json"},
		{"csv record", "describe", FormatCSV, FormatText, "id,name\r\n7,Ann\r\n", KindOutput, `{"id":"7","name":"Ann"}`},
		{"csv quoted", "describe", FormatCSV, FormatText, "id,note\n1,\"a, \"\"b\"\"\nc\"\n", KindOutput, `{"id":"1","note":"a, \"b\"\nc"}`},
		{"csv several rows", "describe", FormatCSV, FormatText, "a,b\n1,2\n3\n", KindOutput, `[{"a":"1","b":"2"},{"a":"3","b":""}]`},
		{"csv too many values", "describe", FormatCSV, FormatText, "a,b\n1,2,3\n", KindQuarantined, "row 1 has 3 values but the header has 2"},
		{"csv unclosed quote", "describe", FormatCSV, FormatText, "a\n\"x\n", KindQuarantined, "not closed"},
		{"csv out from object", "record", FormatCSV, "", "id,name\n7,Ann\n", KindOutput, "id,name,note\r\n7,ANN,\"has, comma\"\r\n"},
		{"csv out from array", "records", FormatText, FormatCSV, "x", KindOutput, "a,b\r\n1,\"x\"\"y\"\r\n2,\r\n"},
		{"hl7 to json", "hl7ToJSON", FormatHL7v2, FormatJSON, adt, KindOutput, `{"mrn":"123","type":"ADT^A01"}`},
		{"hl7 out", "hl7Out", FormatHL7v2, "", adt, KindOutput, strings.Replace(adt, "DOE", "ROE", 1)},
		{"hl7 unchanged", "", FormatHL7v2, "", adt, KindOutput, adt},
		{"not hl7 quarantined", "", FormatHL7v2, "", "hello", KindQuarantined, "the payload is not valid hl7v2: hl7: parse: a message must start with an MSH segment"},
		{"object for hl7", "objectForHL7", FormatHL7v2, "", adt, KindQuarantined, "return a message (hl7.parse or hl7.create) or a string, not an object"},
		{"message for csv", "messageForCSV", FormatHL7v2, FormatCSV, adt, KindQuarantined, "not an HL7 message"},
		{"function for json", "fn", FormatText, FormatJSON, "x", KindQuarantined, "a function has no JSON form"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res := mustCall(t, h, "f", tt.fn, Input{Format: tt.in, OutputFormat: tt.out, Payload: []byte(tt.payload)})
			if res.Kind != tt.kind {
				t.Fatalf("kind = %v (%q), want %v", res.Kind, res.Reason, tt.kind)
			}
			got := string(res.Output)
			if tt.kind != KindOutput {
				got = res.Reason
				if !strings.Contains(got, tt.want) {
					t.Errorf("reason = %q, want it to contain %q", got, tt.want)
				}
				return
			}
			if got != tt.want {
				t.Errorf("output = %q, want %q", got, tt.want)
			}
		})
	}
}

func TestReadInterfaceDir(t *testing.T) {
	dir := t.TempDir()
	write := func(name, src string) {
		t.Helper()
		p := dir + "/" + name
		if i := strings.LastIndex(p, "/"); i > 0 {
			if err := os.MkdirAll(p[:i], 0o755); err != nil {
				t.Fatal(err)
			}
		}
		if err := os.WriteFile(p, []byte(src), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("transform.js", `const m = require("./lib/map.js"); function transform(x) { return m(x); }`)
	write("lib/map.js", `module.exports = (x) => x + "!";`)
	write("interface.yaml", "name: x")
	write(".hidden.js", "syntax error here (")
	write("node_modules/pkg/index.js", "syntax error here (")
	spec, err := ReadInterfaceDir("dir", dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, f := range spec.Files {
		names = append(names, f.Name)
	}
	if got := strings.Join(names, ","); got != "lib/map.js,transform.js" {
		t.Errorf("files = %s", got)
	}
	h := newTestHost(t, Config{})
	mustLoad(t, h, spec)
	if res := mustCall(t, h, "dir", "", text("hi")); string(res.Output) != "hi!" {
		t.Errorf("got %+v", res)
	}
	if _, err := ReadInterfaceDir("missing", dir+"/nope"); err == nil {
		t.Error("a missing folder gave no error")
	}
}
