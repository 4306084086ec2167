package config

import (
	"errors"
	"io/fs"
	"log/slog"
	"path/filepath"
	"reflect"
	"runtime"
	"strings"
	"testing"
	"time"
)

var exampleEnv = env(map[string]string{"EMR_HOST": "emr.example.org"})

// TestExampleProject loads testdata/example and checks the resolved values,
// defaults included.
func TestExampleProject(t *testing.T) {
	p, err := Load("testdata/example", exampleEnv)
	if err != nil {
		t.Fatal(err)
	}
	dir, _ := filepath.Abs("testdata/example")
	if p.Dir != dir {
		t.Errorf("Dir = %q, want %q", p.Dir, dir)
	}
	wantEngine := Engine{
		Database:    Database{Driver: DriverSQLite, DSN: filepath.Join(dir, ".ductus", "ductus.db"), Embedded: true},
		Partitions:  16,
		Durability:  DurabilityRelaxed,
		SecretsFile: filepath.Join(dir, "secrets", "dev.json"),
		Script:      ScriptLimits{Timeout: 2 * time.Second, HeapMB: 128, Isolates: 2},
		API:         API{Listen: "127.0.0.1:7701"},
		Log:         Log{Level: slog.LevelDebug, Format: LogJSON},
	}
	if !reflect.DeepEqual(p.Engine, wantEngine) {
		t.Errorf("Engine =\n%+v\nwant\n%+v", p.Engine, wantEngine)
	}
	if want := map[string]string{"LAB_TOKEN": "lab-secret-token", "EMR_PORT": "6661"}; !reflect.DeepEqual(p.Secrets, want) {
		t.Errorf("Secrets = %v", p.Secrets)
	}

	emr := p.Resources.Connections["emr"]
	if emr == nil || !reflect.DeepEqual(*emr.MLLP, MLLPConnection{Host: "emr.example.org", Port: 6661, AckTimeout: 20 * time.Second}) {
		t.Errorf("connection emr = %+v", emr)
	}

	var names []string
	for _, in := range p.Interfaces {
		names = append(names, in.Name)
	}
	if want := []string{"adt", "census", "lab", "notifications"}; !reflect.DeepEqual(names, want) {
		t.Fatalf("interfaces %v, want %v", names, want)
	}

	adt := p.Interface("adt")
	if adt.Format != FormatHL7v2 || adt.File != "interfaces/adt/interface.yaml" || adt.Dir != filepath.Join(dir, "interfaces", "adt") {
		t.Errorf("adt = %+v", adt)
	}
	if want := (MLLPSource{Listen: "127.0.0.1:2575", MaxMessageBytes: 2 << 20, IdleTimeout: 5 * time.Minute, ReadTimeout: 30 * time.Second}); !reflect.DeepEqual(*adt.Source.MLLP, want) {
		t.Errorf("adt source = %+v", *adt.Source.MLLP)
	}
	if *adt.OrderingKey != (Key{Path: "PID-3.1", Kind: KeyHL7}) || adt.Partitions != 16 {
		t.Errorf("adt key %+v partitions %d", adt.OrderingKey, adt.Partitions)
	}
	if *adt.Dedupe != (Dedupe{Key: Key{Path: "MSH-10", Kind: KeyHL7}, Window: 48 * time.Hour}) {
		t.Errorf("adt dedupe = %+v", adt.Dedupe)
	}
	if len(adt.Scripts) != 2 || adt.Scripts[0].Name != "transform.js" || adt.Scripts[1].Path != filepath.Join(adt.Dir, "lib.js") {
		t.Errorf("adt scripts = %+v", adt.Scripts)
	}
	if adt.Timeout != 2*time.Second {
		t.Errorf("adt timeout %s, want the engine's 2s", adt.Timeout)
	}
	var dests []string
	for _, d := range adt.Destinations {
		dests = append(dests, d.Name)
	}
	if want := []string{"archive", "emr", "notify"}; !reflect.DeepEqual(dests, want) {
		t.Errorf("adt destinations %v, want sorted %v", dests, want)
	}
	e := adt.Destination("emr")
	if e.Type != DestMLLP || e.Transform != "transform" || e.Format != FormatHL7v2 || e.SaveOutput {
		t.Errorf("emr = %+v", e)
	}
	if e.Retry != (Retry{Initial: 2 * time.Second, Max: 2 * time.Minute, MaxAttempts: 10}) || *e.RateLimit != (RateLimit{PerSecond: 50, Burst: 5}) {
		t.Errorf("emr retry %+v rate %+v", e.Retry, e.RateLimit)
	}
	if *e.MLLP != (MLLPDestination{Connection: "emr", Host: "emr.example.org", Port: 6661, AckTimeout: 20 * time.Second, KeepAlive: true, Connections: 1}) {
		t.Errorf("emr mllp = %+v", *e.MLLP)
	}
	if id := e.ActorID(7); id != "adt/emr/7" {
		t.Errorf("ActorID = %q", id)
	}
	a := adt.Destination("archive")
	if a.Retry != (Retry{Initial: time.Second, Max: time.Minute}) || a.RateLimit != nil || !a.SaveOutput {
		t.Errorf("archive defaults: retry %+v rate %+v save %v", a.Retry, a.RateLimit, a.SaveOutput)
	}
	if a.File.Path != filepath.Join(dir, "out", "archive") {
		t.Errorf("archive path %q", a.File.Path)
	}
	name, err := a.File.FileName(FileMessage{ID: "42", ReceivedAt: time.Date(2026, 3, 4, 5, 6, 7, 0, time.UTC), Key: "M/1"})
	if err != nil || name != "2026-03-04/42.hl7" {
		t.Errorf("FileName = %q, %v", name, err)
	}
	n := adt.Destination("notify")
	if n.Route == nil || n.Route.Interface != "notifications" || n.Format != FormatJSON || n.Transform != "toNotification" {
		t.Errorf("notify = %+v", n)
	}

	notif := p.Interface("notifications")
	if notif.Source.Type != SourceInternal || notif.Partitions != 16 || notif.OrderingKey.Kind != KeyJSON {
		t.Errorf("notifications = %+v", notif)
	}
	wh := notif.Destination("webhook").HTTP
	if want := (HTTPDestination{URL: "http://127.0.0.1:8099/notify", Method: "PUT", Headers: map[string]string{"X-Source": "ductus"}, Timeout: 30 * time.Second}); !reflect.DeepEqual(*wh, want) {
		t.Errorf("webhook = %+v", *wh)
	}

	lab := p.Interface("lab")
	wantFile := FileSource{Path: filepath.Join(dir, "inbox", "lab"), Pattern: "*.csv", Poll: 2 * time.Second, Split: SplitRecords, After: AfterMove, MoveTo: filepath.Join(dir, "inbox", "lab", "done")}
	if !reflect.DeepEqual(*lab.Source.File, wantFile) {
		t.Errorf("lab source =\n%+v\nwant\n%+v", *lab.Source.File, wantFile)
	}
	if lab.Partitions != 8 {
		t.Errorf("lab partitions %d, want its own 8", lab.Partitions)
	}
	res := lab.Destination("results").HTTP
	wantRes := HTTPDestination{Connection: "lab_api", URL: "https://lab.example.org/api/results", Method: "POST",
		Headers: map[string]string{"Authorization": "Bearer lab-secret-token", "Accept": "application/json"}, Timeout: 10 * time.Second}
	if !reflect.DeepEqual(*res, wantRes) {
		t.Errorf("results = %+v", *res)
	}

	census := p.Interface("census")
	s := census.Source.Schedule
	if census.Format != FormatJSON || census.Partitions != 1 || census.OrderingKey != nil || s.Cron != "0 2 * * *" || s.Location.String() != "Europe/London" {
		t.Errorf("census = %+v, schedule %+v", census, s)
	}
	// 02:00 London in summer is 01:00 UTC.
	next := s.Next(time.Date(2026, 7, 1, 12, 0, 0, 0, time.UTC))
	if !next.Equal(time.Date(2026, 7, 2, 1, 0, 0, 0, time.UTC)) {
		t.Errorf("census next run %s", next.UTC())
	}

	// census_file's name repeats within a day, as a schedule's file should:
	// no warning (see TestRepeatingFileNameWarning).
	if len(p.Warnings) != 0 {
		t.Errorf("warnings = %v", p.Warnings)
	}
}

// TestRepeatingFileNameWarning: a file name without {{.ID}} is a warning,
// except for a schedule, whose one message per run makes it deliberate.
func TestRepeatingFileNameWarning(t *testing.T) {
	cases := []struct {
		name, source string
		warn         bool
	}{
		{"mllp source", "{ type: mllp, listen: \"127.0.0.1:0\" }", true},
		{"file source", "{ type: file, path: inbox }", true},
		{"schedule source", "{ type: schedule, cron: \"0 2 * * *\" }", false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			format := "hl7v2"
			if strings.Contains(c.source, "schedule") {
				format = "json"
			}
			dir := writeProject(t, map[string]string{
				"ductus.yaml": "",
				"interfaces/a/interface.yaml": "format: " + format + "\nsource: " + c.source +
					"\ndestinations:\n  out: { type: file, path: out, name: \"day-{{.Date}}.txt\" }\n",
				"interfaces/a/transform.js": "function transform(m) { return m; }",
			})
			p, err := Load(dir, env(nil))
			if err != nil {
				t.Fatal(err)
			}
			got := len(p.Warnings) == 1 && strings.Contains(p.Warnings[0].Message, "same file name")
			if got != c.warn || (!c.warn && len(p.Warnings) != 0) {
				t.Fatalf("warnings %v, want a repeating-name warning: %v", p.Warnings, c.warn)
			}
		})
	}
}

// TestDefaults loads the smallest project and checks every default.
func TestDefaults(t *testing.T) {
	dir := writeProject(t, map[string]string{"ductus.yaml": ""})
	p, err := Load(dir, env(nil))
	if err != nil {
		t.Fatal(err)
	}
	wantEngine := Engine{
		Database:   Database{Driver: DriverSQLite, DSN: filepath.Join(dir, ".ductus", "ductus.db"), Embedded: true},
		Partitions: 64,
		Durability: DurabilityStrict,
		Script:     ScriptLimits{Timeout: 5 * time.Second, HeapMB: 256, Isolates: runtime.NumCPU()},
		API:        API{Listen: "127.0.0.1:7700"},
		Log:        Log{Level: slog.LevelInfo, Format: LogText},
	}
	if !reflect.DeepEqual(p.Engine, wantEngine) {
		t.Errorf("Engine =\n%+v\nwant\n%+v", p.Engine, wantEngine)
	}
	in := p.Interface("adt")
	if in.Format != FormatHL7v2 || in.Partitions != 1 || in.OrderingKey != nil || in.Dedupe != nil || in.Timeout != 5*time.Second {
		t.Errorf("interface = %+v", in)
	}
	if want := (MLLPSource{Listen: "127.0.0.1:2575", MaxMessageBytes: 1 << 20, IdleTimeout: 5 * time.Minute, ReadTimeout: 30 * time.Second}); *in.Source.MLLP != want {
		t.Errorf("source = %+v", *in.Source.MLLP)
	}
	if len(in.Scripts) != 1 || in.Scripts[0].Name != "transform.js" {
		t.Errorf("scripts = %+v (want every *.js)", in.Scripts)
	}
	d := in.Destination("emr")
	want := Destination{Name: "emr", Interface: "adt", Type: DestMLLP, Transform: "transform", Format: FormatHL7v2,
		Retry: Retry{Initial: time.Second, Max: time.Minute}, Line: 5,
		MLLP: &MLLPDestination{Host: "emr.local", Port: 6661, AckTimeout: 30 * time.Second, KeepAlive: true, Connections: 1}}
	if !reflect.DeepEqual(*d, want) {
		t.Errorf("destination =\n%+v\nwant\n%+v", *d, want)
	}
	if len(p.Warnings) != 0 {
		t.Errorf("warnings = %v", p.Warnings)
	}
}

func TestSourceAndDestinationDefaults(t *testing.T) {
	dir := writeProject(t, map[string]string{
		"interfaces/adt/interface.yaml": `format: hl7v2
source: { type: file, path: /data/in }
destinations:
  out: { type: file, path: out }
  api: { type: http, url: "https://h.example/x" }
`,
		"interfaces/web/interface.yaml": `format: json
source: { type: http, listen: "127.0.0.1:8080" }
ordering_key: $.patient["mrn"]
destinations:
  out: { type: file, path: out/web }
`,
		"interfaces/web/transform.js": "function transform(m) { return m; }\n",
		"interfaces/tick/interface.yaml": `source: { type: schedule, every: 15m }
destinations:
  out: { type: file, path: out/tick }
`,
		"interfaces/tick/transform.js": "function transform(m) { return m; }\n",
	})
	p, err := Load(dir, env(nil))
	if err != nil {
		t.Fatal(err)
	}
	adt := p.Interface("adt")
	wantFile := FileSource{Path: "/data/in", Pattern: "*", Poll: time.Second, Split: SplitNone, After: AfterMove, MoveTo: "/data/in/done", MaxFileBytes: 256 << 20}
	if *adt.Source.File != wantFile {
		t.Errorf("file source = %+v", *adt.Source.File)
	}
	if f := adt.Destination("out").File; f.Name != DefaultFileName {
		t.Errorf("file name = %q", f.Name)
	}
	if h := adt.Destination("api").HTTP; h.Method != "POST" || h.Timeout != 30*time.Second || h.Headers != nil || h.URL != "https://h.example/x" {
		t.Errorf("http destination = %+v", h)
	}
	web := p.Interface("web")
	if *web.Source.HTTP != (HTTPSource{Listen: "127.0.0.1:8080", Path: "/", MaxBodyBytes: 10 << 20}) {
		t.Errorf("http source = %+v", *web.Source.HTTP)
	}
	if web.Partitions != 64 || web.OrderingKey.Path != `$.patient["mrn"]` {
		t.Errorf("web partitions %d key %+v", web.Partitions, web.OrderingKey)
	}
	tick := p.Interface("tick")
	s := tick.Source.Schedule
	if tick.Format != FormatJSON || s.Every != 15*time.Minute || s.Cron != "" || s.Location != time.Local {
		t.Errorf("schedule = %+v format %s", s, tick.Format)
	}
	at := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	if got := s.Next(at); !got.Equal(at.Add(15 * time.Minute)) {
		t.Errorf("Next = %s", got)
	}
}

func TestDatabaseURLs(t *testing.T) {
	cases := []struct {
		value string
		want  Database
	}{
		{"sqlite:data/d.db", Database{Driver: DriverSQLite, DSN: "<dir>/data/d.db"}},
		{"sqlite:///var/lib/ductus.db", Database{Driver: DriverSQLite, DSN: "/var/lib/ductus.db"}},
		{"sqlite::memory:", Database{Driver: DriverSQLite, DSN: ":memory:"}},
		{"postgres://u:p@db:5432/ductus?sslmode=disable", Database{Driver: DriverPostgres, DSN: "postgres://u:p@db:5432/ductus?sslmode=disable"}},
		{"mysql://root:@tcp(127.0.0.1:3306)/ductus?parseTime=true", Database{Driver: DriverMySQL, DSN: "root:@tcp(127.0.0.1:3306)/ductus?parseTime=true"}},
		{"mysql://u:p@db/ductus", Database{Driver: DriverMySQL, DSN: "u:p@tcp(db:3306)/ductus"}},
		{"postgres://u:${env:PW}@db/ductus", Database{Driver: DriverPostgres, DSN: "postgres://u:s3cret@db/ductus"}},
	}
	for _, tc := range cases {
		t.Run(tc.value, func(t *testing.T) {
			dir := writeProject(t, map[string]string{"ductus.yaml": "database: \"" + tc.value + "\"\n"})
			p, err := Load(dir, env(map[string]string{"PW": "s3cret"}))
			if err != nil {
				t.Fatal(err)
			}
			want := tc.want
			want.DSN = strings.Replace(want.DSN, "<dir>", dir, 1)
			if p.Engine.Database != want {
				t.Errorf("database = %+v, want %+v", p.Engine.Database, want)
			}
		})
	}
}

func TestSubstitution(t *testing.T) {
	dir := writeProject(t, map[string]string{
		"ductus.yaml":         "secrets: ${env:SECRETS}\napi:\n  listen: ${env:API}\n",
		"config/secrets.json": `{"EMR_HOST": "emr.internal", "TOKEN": "t0k"}`,
		"resources.yaml": `connections:
  emr: { type: mllp, host: "${secret:EMR_HOST}", port: "${env:EMR_PORT}" }
  api:
    type: http
    url: https://${env:API_HOST}/v1
    headers: { Authorization: "Bearer ${secret:TOKEN}", X-Literal: "$${env:NOT_ME}" }
`,
		"interfaces/adt/interface.yaml": `description: "${env:SITE} feed, costs $5"
source: { type: mllp, listen: "${env:LISTEN}" }
destinations:
  emr: { type: mllp, connection: emr }
  api: { type: http, connection: api, path: /adt }
`,
	})
	p, err := Load(dir, env(map[string]string{
		"SECRETS": "config/secrets.json", "API": "127.0.0.1:7799", "EMR_PORT": "2600",
		"API_HOST": "api.example", "SITE": "North", "LISTEN": "127.0.0.1:2576",
	}))
	if err != nil {
		t.Fatal(err)
	}
	if p.Engine.API.Listen != "127.0.0.1:7799" || p.Engine.SecretsFile != filepath.Join(dir, "config", "secrets.json") {
		t.Errorf("engine = %+v", p.Engine)
	}
	in := p.Interface("adt")
	if in.Description != "North feed, costs $5" || in.Source.MLLP.Listen != "127.0.0.1:2576" {
		t.Errorf("interface = %+v", in)
	}
	if m := in.Destination("emr").MLLP; m.Host != "emr.internal" || m.Port != 2600 {
		t.Errorf("emr = %+v", m)
	}
	h := in.Destination("api").HTTP
	if h.URL != "https://api.example/v1/adt" || h.Headers["Authorization"] != "Bearer t0k" || h.Headers["X-Literal"] != "${env:NOT_ME}" {
		t.Errorf("api = %+v", h)
	}
}

func TestExpand(t *testing.T) {
	s := &substituter{
		lookupEnv:   func(k string) (string, bool) { v, ok := map[string]string{"A": "1", "EMPTY": ""}[k]; return v, ok },
		secrets:     map[string]string{"S": "x"},
		secretsFile: "s.json",
	}
	cases := []struct {
		in, out string
		secret  bool
		errs    []string
	}{
		{in: "plain $ text", out: "plain $ text"},
		{in: "${env:A}${env:A}", out: "11"},
		{in: "[${env:EMPTY}]", out: "[]"},
		{in: "$${env:A}", out: "${env:A}"},
		{in: "a${secret:S}b", out: "axb", secret: true},
		{in: "${env:NOPE}", errs: []string{"environment variable NOPE is not set"}},
		{in: "${secret:NOPE}", secret: true, errs: []string{"secret NOPE is not in the secrets file s.json"}},
		{in: "${env:}", errs: []string{`bad substitution "${env:}"`}},
		{in: "${A}", errs: []string{`bad substitution "${A}"`}},
		{in: "x ${env:A", errs: []string{`unterminated "${env:A"`}},
		{in: "${env:A:-9}", out: "1"},
		{in: "${env:NOPE:-127.0.0.1}:${env:NOPE:-}", out: "127.0.0.1:"},
		{in: "${env:EMPTY:-x}", out: ""},
		{in: "${secret:S:-x}", errs: []string{"a secret has no default"}},
		{in: "${env:-x}", errs: []string{`bad substitution "${env:-x}"`}},
	}
	for _, tc := range cases {
		x := s.expand(tc.in)
		if len(tc.errs) == 0 && (x.value != tc.out || len(x.errs) > 0) {
			t.Errorf("expand(%q) = %q, %v; want %q", tc.in, x.value, x.errs, tc.out)
		}
		if x.secret != tc.secret {
			t.Errorf("expand(%q) secret = %v", tc.in, x.secret)
		}
		if len(x.errs) != len(tc.errs) {
			t.Errorf("expand(%q) errs = %v, want %v", tc.in, x.errs, tc.errs)
			continue
		}
		for i := range tc.errs {
			if !strings.Contains(x.errs[i], tc.errs[i]) {
				t.Errorf("expand(%q) err %q, want …%s…", tc.in, x.errs[i], tc.errs[i])
			}
		}
	}
}

// TestAllProblemsAtOnce checks that problems in several files come back
// together, sorted, one line each.
func TestAllProblemsAtOnce(t *testing.T) {
	dir := writeProject(t, map[string]string{
		"ductus.yaml":    "partitions: 0\ndurability: fast\n",
		"resources.yaml": "connections:\n  emr: { type: mllp, host: emr }\n",
		"interfaces/adt/interface.yaml": `source:
  type: mllp
  listen: 127.0.0.1:2575
destinations:
  emr:
    type: mllp
    connection: emr
    retry: { max: soon }
`,
		"interfaces/b/interface.yaml": "format: json\nsource: { type: http, listen: 127.0.0.1:2575 }\ndestinations: {}\n",
	})
	_, err := Load(dir, env(nil))
	var ve *ValidationError
	if !errors.As(err, &ve) {
		t.Fatalf("err = %v", err)
	}
	want := strings.Join([]string{
		"ductus.yaml:1: partitions: want a number from 1 to 1024, got 0",
		"ductus.yaml:2: durability: want one of strict, relaxed, got \"fast\"",
		"resources.yaml:2: connections.emr.port: missing required key",
		"interfaces/adt/interface.yaml:8: destinations.emr.retry.max: want a duration like 1m, got \"soon\"",
		"interfaces/b/interface.yaml:2: source.listen: listen address 127.0.0.1:2575 clashes with 127.0.0.1:2575 at interfaces/adt/interface.yaml:3 (source.listen)",
		"interfaces/b/interface.yaml:3: destinations: want at least one destination",
	}, "\n")
	if err.Error() != want {
		t.Errorf("error =\n%s\nwant\n%s", err, want)
	}
}

func TestLoadErrors(t *testing.T) {
	_, err := Load(filepath.Join(t.TempDir(), "nope"), env(nil))
	var ve *ValidationError
	if !errors.Is(err, fs.ErrNotExist) || errors.As(err, &ve) {
		t.Errorf("missing folder: err = %v, want fs.ErrNotExist and no ValidationError", err)
	}
	dir := writeProject(t, nil)
	if _, err := Load(filepath.Join(dir, "ductus.yaml"), env(nil)); err == nil || !strings.Contains(err.Error(), "not a folder") {
		t.Errorf("file as folder: err = %v", err)
	}
}

func TestAnchorsAndMergeKeys(t *testing.T) {
	dir := writeProject(t, map[string]string{
		"interfaces/adt/interface.yaml": `x-retry: &retry { initial: 5s, max: 5m }
source: { type: mllp, listen: 127.0.0.1:2575 }
destinations:
  base: &base
    type: mllp
    host: emr.local
    port: 6661
    retry: *retry
  second:
    <<: *base
    port: 6662
`,
	})
	p, err := Load(dir, env(nil))
	if err != nil {
		t.Fatalf("x- keys hold anchors and are not unknown keys: %v", err)
	}
	if s := p.Interface("adt").Destination("second"); s.MLLP.Port != 6662 || s.MLLP.Host != "emr.local" || s.Retry.Max != 5*time.Minute {
		t.Errorf("merged destination = %+v %+v", s.MLLP, s.Retry)
	}

	dir = writeProject(t, map[string]string{
		"interfaces/adt/interface.yaml": `source: { type: mllp, listen: 127.0.0.1:2575 }
destinations:
  base: &base
    type: mllp
    host: emr.local
    port: 6661
    retry: &retry { initial: 5s, max: 5m }
  second:
    <<: *base
    port: 6662
  third:
    type: file
    path: out
    retry: *retry
`,
	})
	p, err = Load(dir, env(nil))
	if err != nil {
		t.Fatal(err)
	}
	in := p.Interface("adt")
	s := in.Destination("second")
	if s.MLLP.Host != "emr.local" || s.MLLP.Port != 6662 || s.Retry.Initial != 5*time.Second {
		t.Errorf("merged destination = %+v %+v", s.MLLP, s.Retry)
	}
	if in.Destination("third").Retry.Max != 5*time.Minute {
		t.Errorf("aliased retry = %+v", in.Destination("third").Retry)
	}
}

func TestWarnings(t *testing.T) {
	dir := writeProject(t, map[string]string{
		"ductus.yaml":                     "api: { listen: 0.0.0.0:7700 }\n",
		"interfaces/idle/interface.yaml":  "format: json\nsource:\n  type: internal\ndestinations:\n  out: { type: file, path: out }\n",
		"interfaces/idle/transform.js":    "function transform(m) { return m; }\n",
		"interfaces/other/interface.yaml": "format: json\nsource: { type: internal }\ndestinations:\n  out: { type: file, path: out/o }\n",
		"interfaces/other/transform.js":   "function transform(m) { return m; }\n",
		"interfaces/adt/interface.yaml":   baseFiles["interfaces/adt/interface.yaml"] + "  to_other: { type: interface, interface: other, format: json }\n",
	})
	p, err := Load(dir, env(nil))
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, w := range p.Warnings {
		got = append(got, w.String())
	}
	want := []string{
		"ductus.yaml:1: api.listen: the API listens on 0.0.0.0:7700, beyond this machine, without TLS",
		"interfaces/idle/interface.yaml:3: source.type: interface idle has source internal but no route sends to it",
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("warnings =\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

func TestAPIOff(t *testing.T) {
	dir := writeProject(t, map[string]string{"ductus.yaml": "api: { listen: off }\n"})
	p, err := Load(dir, env(nil))
	if err != nil {
		t.Fatal(err)
	}
	if p.Engine.API.Listen != "" {
		t.Errorf("api listen = %q, want off", p.Engine.API.Listen)
	}
}
