package config

import (
	"errors"
	"testing"
)

const ifFile = "interfaces/adt/interface.yaml"

// mllpIface returns the base interface with extra top-level YAML appended
// (it starts at line 9) and the emr destination's keys extended by destExtra
// (starting at line 9 when given, before extra).
func mllpIface(destExtra, extra string) string {
	return baseFiles[ifFile] + destExtra + extra
}

func TestProblems(t *testing.T) {
	cases := []struct {
		name  string
		files map[string]string
		env   map[string]string
		want  []want
	}{
		{
			name:  "yaml syntax error",
			files: map[string]string{ifFile: "source:\n  type: mllp\n listen: 127.0.0.1:2575\n"},
			want:  []want{{ifFile, 3, "", "YAML syntax error"}},
		},
		{
			name:  "tab indentation is a syntax error with a line",
			files: map[string]string{"ductus.yaml": "api:\n\tlisten: 127.0.0.1:7700\n"},
			want:  []want{{"ductus.yaml", 2, "", "YAML syntax error"}},
		},
		{
			name:  "two yaml documents",
			files: map[string]string{"ductus.yaml": "partitions: 4\n---\npartitions: 8\n"},
			want:  []want{{"ductus.yaml", 2, "", "a second YAML document"}},
		},
		{
			name:  "top level not a mapping",
			files: map[string]string{"ductus.yaml": "- partitions\n"},
			want:  []want{{"ductus.yaml", 1, "", "want a mapping of keys at the top level, got a list"}},
		},
		{
			name:  "unknown key with a near miss",
			files: map[string]string{ifFile: mllpIface("    retrys: { max: 5s }\n", "")},
			want:  []want{{ifFile, 9, "destinations.emr.retrys", `unknown key (did you mean "retry"?)`}},
		},
		{
			name:  "unknown key at the top of ductus.yaml",
			files: map[string]string{"ductus.yaml": "partitons: 4\n"},
			want:  []want{{"ductus.yaml", 1, "partitons", `unknown key (did you mean "partitions"?)`}},
		},
		{
			name:  "unknown key without a near miss",
			files: map[string]string{ifFile: mllpIface("", "colour: blue\n")},
			want:  []want{{ifFile, 9, "colour", "unknown key"}},
		},
		{
			name:  "key of another destination type",
			files: map[string]string{ifFile: mllpIface("    url: http://x/\n", "")},
			want:  []want{{ifFile, 9, "destinations.emr.url", "unknown key here: it applies to http destinations, not mllp"}},
		},
		{
			name:  "key of another source type",
			files: map[string]string{ifFile: "source:\n  type: mllp\n  listen: 127.0.0.1:2575\n  poll: 1s\n" + baseFiles[ifFile][len("source:\n  type: mllp\n  listen: 127.0.0.1:2575\n"):]},
			want:  []want{{ifFile, 4, "source.poll", "it applies to file sources, not mllp"}},
		},
		{
			name:  "duplicate key",
			files: map[string]string{ifFile: mllpIface("    port: 6662\n", "")},
			want:  []want{{ifFile, 9, "destinations.emr.port", "duplicate key (first at line 8)"}},
		},
		{
			name:  "wrong type: a word for a number",
			files: map[string]string{"ductus.yaml": "partitions: many\n"},
			want:  []want{{"ductus.yaml", 1, "partitions", `want a whole number, got "many"`}},
		},
		{
			name:  "wrong type: a scalar for a mapping",
			files: map[string]string{ifFile: mllpIface("    retry: soon\n", "")},
			want:  []want{{ifFile, 9, "destinations.emr.retry", `want a mapping of keys, got "soon"`}},
		},
		{
			name:  "wrong type: a list for a string",
			files: map[string]string{ifFile: mllpIface("", "description: [a, b]\n")},
			want:  []want{{ifFile, 9, "description", "want a single value, got a list"}},
		},
		{
			name:  "wrong type: not a boolean",
			files: map[string]string{ifFile: mllpIface("    save_output: sometimes\n", "")},
			want:  []want{{ifFile, 9, "destinations.emr.save_output", `want true or false, got "sometimes"`}},
		},
		{
			name:  "number out of range",
			files: map[string]string{"ductus.yaml": "partitions: 5000\n"},
			want:  []want{{"ductus.yaml", 1, "partitions", "want a number from 1 to 1024, got 5000"}},
		},
		{
			name:  "runtime.workers out of range",
			files: map[string]string{"ductus.yaml": "runtime:\n  workers: 0\n"},
			want:  []want{{"ductus.yaml", 2, "runtime.workers", "want a number from 1 to 256, got 0"}},
		},
		{
			name:  "runtime: an unknown key",
			files: map[string]string{"ductus.yaml": "runtime:\n  worker: 4\n"},
			want:  []want{{"ductus.yaml", 2, "runtime.worker", "unknown key"}},
		},
		{
			name:  "missing required key",
			files: map[string]string{ifFile: "source:\n  type: mllp\ndestinations:\n  emr:\n    type: mllp\n    host: emr.local\n    port: 6661\n"},
			want:  []want{{ifFile, 1, "source.listen", "missing required key"}},
		},
		{
			name:  "missing source and destinations",
			files: map[string]string{ifFile: "description: nothing\n"},
			want: []want{
				{ifFile, 0, "source", "missing required key"},
				{ifFile, 0, "destinations", "missing required key"},
			},
		},
		{
			name:  "required key without a value",
			files: map[string]string{ifFile: "source:\n  type: mllp\n  listen:\n" + baseFiles[ifFile][len("source:\n  type: mllp\n  listen: 127.0.0.1:2575\n"):]},
			want:  []want{{ifFile, 3, "source.listen", "needs a value"}},
		},
		{
			name:  "bad enum with a near miss",
			files: map[string]string{ifFile: "source:\n  type: mlp\n  listen: 127.0.0.1:2575\n" + baseFiles[ifFile][len("source:\n  type: mllp\n  listen: 127.0.0.1:2575\n"):]},
			want:  []want{{ifFile, 2, "source.type", `want one of mllp, http, file, schedule, internal, got "mlp" (did you mean "mllp"?)`}},
		},
		{
			name:  "bad durability",
			files: map[string]string{"ductus.yaml": "durability: eventual\n"},
			want:  []want{{"ductus.yaml", 1, "durability", `want one of strict, relaxed, got "eventual"`}},
		},
		{
			name:  "bad duration",
			files: map[string]string{ifFile: mllpIface("    retry:\n      max: soon\n", "")},
			want:  []want{{ifFile, 10, "destinations.emr.retry.max", `want a duration like 1m, got "soon"`}},
		},
		{
			name:  "duration without a unit",
			files: map[string]string{"ductus.yaml": "script:\n  timeout: 5\n"},
			want:  []want{{"ductus.yaml", 2, "script.timeout", "want a duration like 5s, got 5"}},
		},
		{
			name:  "retry max below initial",
			files: map[string]string{ifFile: mllpIface("    retry: { initial: 10s, max: 5s }\n", "")},
			want:  []want{{ifFile, 9, "destinations.emr.retry.max", "max (5s) must be at least initial (10s)"}},
		},
		{
			name:  "bad size",
			files: map[string]string{ifFile: "source:\n  type: mllp\n  listen: 127.0.0.1:2575\n  max_message_bytes: 1 megabyte\n" + baseFiles[ifFile][len("source:\n  type: mllp\n  listen: 127.0.0.1:2575\n"):]},
			want:  []want{{ifFile, 4, "source.max_message_bytes", `want a size like 1MiB, 256KB or a number of bytes, got "1 megabyte"`}},
		},
		{
			name:  "bad cron",
			files: map[string]string{ifFile: scheduleIface(`  cron: "61 2 * * *"`)},
			want:  []want{{ifFile, 3, "source.cron", "want a cron expression of 5 fields"}},
		},
		{
			name:  "cron with seconds is refused",
			files: map[string]string{ifFile: scheduleIface(`  cron: "0 0 2 * * *"`)},
			want:  []want{{ifFile, 3, "source.cron", "want a cron expression of 5 fields"}},
		},
		{
			name:  "cron that never fires",
			files: map[string]string{ifFile: scheduleIface(`  cron: "0 0 30 2 *"`)},
			want:  []want{{ifFile, 3, "source.cron", `"0 0 30 2 *" never fires`}},
		},
		{
			name:  "@every in cron",
			files: map[string]string{ifFile: scheduleIface(`  cron: "@every 1h"`)},
			want:  []want{{ifFile, 3, "source.cron", "for an interval use every:"}},
		},
		{
			name:  "bad time zone",
			files: map[string]string{ifFile: scheduleIface("  cron: \"@daily\"\n  timezone: Europe/Londn")},
			want:  []want{{ifFile, 4, "source.timezone", `unknown time zone "Europe/Londn"`}},
		},
		{
			name:  "time zone with every",
			files: map[string]string{ifFile: scheduleIface("  every: 1h\n  timezone: UTC")},
			want:  []want{{ifFile, 4, "source.timezone", "timezone applies only to cron schedules"}},
		},
		{
			name:  "schedule with both every and cron",
			files: map[string]string{ifFile: scheduleIface("  every: 1h\n  cron: \"@daily\"")},
			want:  []want{{ifFile, 4, "source.cron", "set every or cron, not both"}},
		},
		{
			name:  "schedule with neither",
			files: map[string]string{ifFile: scheduleIface("")},
			want:  []want{{ifFile, 1, "source.every", "a schedule source needs every"}},
		},
		{
			name:  "schedule source reading csv",
			files: map[string]string{ifFile: scheduleIface("  every: 1h") + "format: csv\n"},
			want:  []want{{ifFile, 8, "format", `a schedule source produces JSON ({"due","previous"}): want format json, got "csv"`}},
		},
		{
			name:  "missing script file",
			files: map[string]string{ifFile: mllpIface("", "scripts: [transform.js, lib.js]\n")},
			want:  []want{{ifFile, 9, "scripts[1]", "script lib.js does not exist in interfaces/adt"}},
		},
		{
			name:  "script outside the folder",
			files: map[string]string{ifFile: mllpIface("", "scripts:\n  - ../other/x.js\n")},
			want:  []want{{ifFile, 10, "scripts[0]", `want a file in the interface's folder, such as transform.js, got "../other/x.js"`}},
		},
		{
			name:  "no scripts at all",
			files: map[string]string{"interfaces/adt/transform.js": "<delete>"},
			want:  []want{{ifFile, 4, "scripts", "no scripts: put the transform function in interfaces/adt/transform.js"}},
		},
		{
			name:  "transform function in no script",
			files: map[string]string{ifFile: mllpIface("    transform: toEMR\n", "")},
			want:  []want{{ifFile, 9, "destinations.emr.transform", "no function toEMR in transform.js"}},
		},
		{
			name:  "transform not an identifier",
			files: map[string]string{ifFile: mllpIface("    transform: to-emr\n", "")},
			want:  []want{{ifFile, 9, "destinations.emr.transform", `want a JavaScript function name such as transform, got "to-emr"`}},
		},
		{
			name: "route to an interface that does not exist",
			files: map[string]string{ifFile: mllpIface("", "  notify:\n    type: interface\n    interface: notifcations\n"),
				"interfaces/notifications/interface.yaml": internalIface("hl7v2"),
				"interfaces/notifications/transform.js":   "function transform(m) { return m; }\n"},
			want: []want{{ifFile, 11, "destinations.notify.interface", `no interface "notifcations" in interfaces/ (did you mean "notifications"?)`}},
		},
		{
			name: "route to an interface whose source is not internal",
			files: map[string]string{ifFile: mllpIface("", "  lab:\n    type: interface\n    interface: lab\n"),
				"interfaces/lab/interface.yaml": "format: hl7v2\nsource: { type: http, listen: 127.0.0.1:8081 }\ndestinations:\n  out: { type: file, path: out }\n",
				"interfaces/lab/transform.js":   "function transform(m) { return m; }\n"},
			want: []want{{ifFile, 11, "destinations.lab.interface", "interface lab has source type http: a route needs a target with source: {type: internal}"}},
		},
		{
			name: "route to an interface that reads another format",
			files: map[string]string{ifFile: mllpIface("", "  notify:\n    type: interface\n    interface: notifications\n"),
				"interfaces/notifications/interface.yaml": internalIface("json"),
				"interfaces/notifications/transform.js":   "function transform(m) { return m; }\n"},
			want: []want{{ifFile, 11, "destinations.notify.interface", "this destination outputs hl7v2 but interface notifications reads json"}},
		},
		{
			name:  "route to itself",
			files: map[string]string{ifFile: "format: json\nsource: { type: internal }\ndestinations:\n  again:\n    type: interface\n    interface: adt\n"},
			want:  []want{{ifFile, 6, "destinations.again.interface", "route loop: adt → adt"}},
		},
		{
			name: "route loop of two",
			files: map[string]string{
				ifFile:                        "format: json\nsource: { type: internal }\ndestinations:\n  to_b: { type: interface, interface: b }\n",
				"interfaces/b/interface.yaml": "format: json\nsource: { type: internal }\ndestinations:\n  to_adt: { type: interface, interface: adt }\n",
				"interfaces/b/transform.js":   "function transform(m) { return m; }\n"},
			want: []want{{ifFile, 4, "destinations.to_b.interface", "route loop: adt → b → adt"}},
		},
		{
			name: "route loop of three beside a tree",
			files: map[string]string{
				ifFile:                        "format: json\nsource: { type: http, listen: 127.0.0.1:8080 }\ndestinations:\n  to_b: { type: interface, interface: b }\n",
				"interfaces/b/interface.yaml": "format: json\nsource: { type: internal }\ndestinations:\n  to_c: { type: interface, interface: c }\n  to_d: { type: interface, interface: d }\n",
				"interfaces/c/interface.yaml": "format: json\nsource: { type: internal }\ndestinations:\n  to_e: { type: interface, interface: e }\n",
				"interfaces/d/interface.yaml": "format: json\nsource: { type: internal }\ndestinations:\n  out: { type: file, path: out/d }\n",
				"interfaces/e/interface.yaml": "format: json\nsource: { type: internal }\ndestinations:\n  to_b: { type: interface, interface: b }\n",
				"interfaces/b/transform.js":   "function transform(m) { return m; }\n",
				"interfaces/c/transform.js":   "function transform(m) { return m; }\n",
				"interfaces/d/transform.js":   "function transform(m) { return m; }\n",
				"interfaces/e/transform.js":   "function transform(m) { return m; }\n"},
			want: []want{{"interfaces/b/interface.yaml", 4, "destinations.to_c.interface", "route loop: b → c → e → b"}},
		},
		{
			name: "two interfaces on one port",
			files: map[string]string{
				"interfaces/b/interface.yaml": "source:\n  type: mllp\n  listen: localhost:2575\ndestinations:\n  out: { type: file, path: out/b }\n",
				"interfaces/b/transform.js":   "function transform(m) { return m; }\n"},
			want: []want{{"interfaces/b/interface.yaml", 3, "source.listen", "listen address localhost:2575 clashes with 127.0.0.1:2575 at interfaces/adt/interface.yaml:3 (source.listen)"}},
		},
		{
			name: "a wildcard listener clashes with a specific one",
			files: map[string]string{
				"interfaces/b/interface.yaml": "format: json\nsource:\n  type: http\n  listen: :2575\ndestinations:\n  out: { type: file, path: out/b }\n",
				"interfaces/b/transform.js":   "function transform(m) { return m; }\n"},
			want: []want{{"interfaces/b/interface.yaml", 4, "source.listen", "clashes with 127.0.0.1:2575 at interfaces/adt/interface.yaml:3"}},
		},
		{
			name:  "a source on the API's port",
			files: map[string]string{"ductus.yaml": "api:\n  listen: 127.0.0.1:2575\n"},
			want:  []want{{ifFile, 3, "source.listen", "clashes with 127.0.0.1:2575 at ductus.yaml:2 (api.listen)"}},
		},
		{
			name:  "bad listen address",
			files: map[string]string{"ductus.yaml": "api: { listen: localhost }\n"},
			want:  []want{{"ductus.yaml", 1, "api.listen", `want host:port such as 127.0.0.1:2575 or :2575, got "localhost", or off`}},
		},
		{
			name:  "connection not in resources.yaml",
			files: map[string]string{ifFile: connIface("emr_live"), "resources.yaml": "connections:\n  emr_live2: { type: mllp, host: emr, port: 1 }\n"},
			want:  []want{{ifFile, 7, "destinations.emr.connection", `no connection "emr_live" in resources.yaml (did you mean "emr_live2"?)`}},
		},
		{
			name:  "connection without resources.yaml",
			files: map[string]string{ifFile: connIface("emr")},
			want:  []want{{ifFile, 7, "destinations.emr.connection", `no connection "emr": the project has no resources.yaml`}},
		},
		{
			name:  "connection of the wrong type",
			files: map[string]string{ifFile: connIface("lab"), "resources.yaml": "connections:\n  lab: { type: http, url: https://lab.example/api }\n"},
			want:  []want{{ifFile, 7, "destinations.emr.connection", `connection "lab" is of type http; an mllp destination needs a connection of type mllp`}},
		},
		{
			name:  "connection and inline host",
			files: map[string]string{ifFile: connIface("emr") + "    host: x\n", "resources.yaml": "connections:\n  emr: { type: mllp, host: emr, port: 1 }\n"},
			want:  []want{{ifFile, 7, "destinations.emr.connection", "set connection or host and port, not both"}},
		},
		{
			name:  "bad connection in resources.yaml",
			files: map[string]string{"resources.yaml": "connections:\n  emr:\n    type: mllp\n    host: emr\n    port: 99999\n  api:\n    type: http\n    url: ftp://x\n  Files: { type: sftp }\n"},
			want: []want{
				{"resources.yaml", 5, "connections.emr.port", "want a number from 1 to 65535, got 99999"},
				{"resources.yaml", 8, "connections.api.url", `want an http:// or https:// URL, got "ftp://x"`},
				{"resources.yaml", 9, "connections.Files", `name "Files": want 1 to 64 characters`},
			},
		},
		{
			name:  "sftp connection without credentials or known_hosts",
			files: map[string]string{"resources.yaml": "connections:\n  drop:\n    type: sftp\n    host: sftp.example\n    user: ductus\n"},
			want: []want{
				{"resources.yaml", 2, "connections.drop", "an sftp connection needs password or key_file"},
				{"resources.yaml", 2, "connections.drop.known_hosts", "missing required key"},
			},
		},
		{
			name:  "hl7 ordering key on a json interface",
			files: map[string]string{ifFile: "format: json\nsource: { type: http, listen: 127.0.0.1:8080 }\nordering_key: PID-3.1\ndestinations:\n  out: { type: file, path: out }\n"},
			want:  []want{{ifFile, 3, "ordering_key", `want a JSON path such as $.patient.mrn for format json, got "PID-3.1"`}},
		},
		{
			name:  "json ordering key on an hl7 interface",
			files: map[string]string{ifFile: mllpIface("", "ordering_key: $.mrn\n")},
			want:  []want{{ifFile, 9, "ordering_key", `want an HL7 path such as PID-3.1 or MSH-10 for format hl7v2, got "$.mrn"`}},
		},
		{
			name:  "nested path on a csv interface",
			files: map[string]string{ifFile: "format: csv\nsource: { type: file, path: inbox }\nordering_key: $.patient.mrn\ndestinations:\n  out: { type: file, path: out, format: json }\n"},
			want:  []want{{ifFile, 3, "ordering_key", `want a column such as $.mrn or $["MRN no"] for format csv, got "$.patient.mrn"`}},
		},
		{
			name:  "a key on a text interface",
			files: map[string]string{ifFile: "format: text\nsource: { type: file, path: inbox }\nordering_key: $.x\ndestinations:\n  out: { type: file, path: out }\n"},
			want:  []want{{ifFile, 3, "ordering_key", "format text has no fields to read a key from"}},
		},
		{
			name:  "bad dedupe key",
			files: map[string]string{ifFile: mllpIface("", "dedupe:\n  key: msh-10\n  window: 1d\n")},
			want: []want{
				{ifFile, 10, "dedupe.key", `want an HL7 path such as PID-3.1 or MSH-10 for format hl7v2, got "msh-10"`},
				{ifFile, 11, "dedupe.window", `want a duration like 24h, got "1d"`},
			},
		},
		{
			name:  "partitions without an ordering key",
			files: map[string]string{ifFile: mllpIface("", "partitions: 8\n")},
			want:  []want{{ifFile, 9, "partitions", "partitions needs an ordering_key"}},
		},
		{
			name:  "interface folder without interface.yaml",
			files: map[string]string{"interfaces/orders/transform.js": "function transform(m) { return m; }\n"},
			want:  []want{{"interfaces/orders", 0, "", "no interface.yaml in this folder"}},
		},
		{
			name:  "interface.yml instead of interface.yaml",
			files: map[string]string{"interfaces/orders/interface.yml": "format: json\n"},
			want:  []want{{"interfaces/orders", 0, "", "found interface.yml: rename it to interface.yaml"}},
		},
		{
			name:  "interface folder with a bad name",
			files: map[string]string{"interfaces/Orders/interface.yaml": "format: json\n"},
			want:  []want{{"interfaces/Orders", 0, "", `interface folder name "Orders": want 1 to 64 characters of a-z, 0-9, _ and -`}},
		},
		{
			name:  "destination with a bad name",
			files: map[string]string{ifFile: mllpIface("", "  to emr:\n    type: mllp\n    host: a\n    port: 1\n")},
			want:  []want{{ifFile, 9, "destinations.to emr", `name "to emr": want 1 to 64 characters`}},
		},
		{
			name:  "ductus.yaml missing",
			files: map[string]string{"ductus.yaml": "<delete>", "ductus.yml": "partitions: 4\n"},
			want:  []want{{"ductus.yaml", 0, "", "missing (found ductus.yml: rename it to ductus.yaml)"}},
		},
		{
			name:  "secrets file inside interfaces",
			files: map[string]string{"ductus.yaml": "secrets: interfaces/adt/secrets.json\n", "interfaces/adt/secrets.json": "{}"},
			want:  []want{{"ductus.yaml", 1, "secrets", "the secrets file must be outside interfaces/"}},
		},
		{
			name:  "secret used without a secrets file",
			files: map[string]string{ifFile: mllpIface("", "description: ${secret:DESC}\n")},
			want:  []want{{ifFile, 9, "description", "${secret:DESC} is used but ductus.yaml names no secrets file"}},
		},
		{
			name:  "secrets file missing",
			files: map[string]string{"ductus.yaml": "secrets: ../secrets/dev.json\n"},
			want:  []want{{"ductus.yaml", 1, "secrets", "secrets file ../secrets/dev.json does not exist"}},
		},
		{
			name: "secret not in the secrets file",
			files: map[string]string{"ductus.yaml": "secrets: secrets.json\n", "secrets.json": `{"A": "1"}`,
				"resources.yaml": "connections:\n  emr:\n    type: mllp\n    host: emr\n    port: ${secret:EMR_PORT}\n"},
			want: []want{{"resources.yaml", 5, "connections.emr.port", "secret EMR_PORT is not in the secrets file secrets.json"}},
		},
		{
			name: "secrets file with a non-string value",
			files: map[string]string{"ductus.yaml": "secrets: secrets.json\n",
				"secrets.json": "{\n  \"A\": \"1\",\n  \"B\":\n    42\n}\n"},
			want: []want{{"secrets.json", 4, "B", "want a string value (quote it)"}},
		},
		{
			name: "secrets file that is not JSON",
			files: map[string]string{"ductus.yaml": "secrets: secrets.json\n",
				"secrets.json": "{\n  \"A\": \"1\"\n  \"B\": \"2\"\n}\n"},
			want: []want{{"secrets.json", 3, "", "JSON syntax error"}},
		},
		{
			name:  "environment variable not set",
			files: map[string]string{"ductus.yaml": "database: postgres://ductus:${env:DB_PASSWORD}@db/ductus\n"},
			want:  []want{{"ductus.yaml", 1, "database", "environment variable DB_PASSWORD is not set (used as ${env:DB_PASSWORD})"}},
		},
		{
			name:  "bad substitution",
			files: map[string]string{ifFile: mllpIface("", "description: ${vault:X} and ${env:Y\n")},
			env:   map[string]string{"Y": "y"},
			want: []want{
				{ifFile, 9, "description", `bad substitution "${vault:X}"`},
				{ifFile, 9, "description", `unterminated "${env:Y"`},
			},
		},
		{
			name:  "a bad value from a secret is not echoed",
			files: map[string]string{"ductus.yaml": "secrets: s.json\npartitions: ${secret:P}\n", "s.json": `{"P": "hunter2"}`},
			want:  []want{{"ductus.yaml", 2, "partitions", `want a whole number, got "${secret:P}" (a secret)`}},
		},
		{
			name:  "secrets path using a secret",
			files: map[string]string{"ductus.yaml": "secrets: ${secret:WHERE}\n"},
			want:  []want{{"ductus.yaml", 1, "secrets", "the secrets file's own path cannot use ${secret:WHERE}"}},
		},
		{
			name:  "unknown key in resources.yaml",
			files: map[string]string{"resources.yaml": "connection:\n  emr: { type: mllp, host: emr, port: 1 }\n"},
			want:  []want{{"resources.yaml", 1, "connection", `unknown key (did you mean "connections"?)`}},
		},
		{
			name:  "singular destination",
			files: map[string]string{ifFile: "source: { type: mllp, listen: 127.0.0.1:2575 }\ndestination:\n  type: file\n  path: out\n"},
			want: []want{
				{ifFile, 0, "destinations", "missing required key"},
				{ifFile, 2, "destination", `unknown key (did you mean "destinations"?)`},
			},
		},
		{
			name:  "bad database url",
			files: map[string]string{"ductus.yaml": "database: oracle://scott:tiger@db\n"},
			want:  []want{{"ductus.yaml", 1, "database", `want "" (embedded SQLite), sqlite:PATH, postgres://... or mysql://...`}},
		},
		{
			name:  "mllp destination on a json interface",
			files: map[string]string{ifFile: "format: json\nsource: { type: http, listen: 127.0.0.1:8080 }\ndestinations:\n  emr: { type: mllp, host: emr, port: 1 }\n"},
			want:  []want{{ifFile, 4, "destinations.emr.format", "an mllp destination sends HL7 v2, but this interface reads json: set format: hl7v2"}},
		},
		{
			name:  "mllp source with another format",
			files: map[string]string{ifFile: mllpIface("", "format: json\n")},
			want:  []want{{ifFile, 9, "format", `an mllp source reads HL7 v2: want format hl7v2, got "json"`}},
		},
		{
			name:  "http source without a format",
			files: map[string]string{ifFile: "source: { type: http, listen: 127.0.0.1:8080 }\ndestinations:\n  out: { type: file, path: out }\n"},
			want:  []want{{ifFile, 0, "format", "missing required key"}},
		},
		{
			name: "two file sources on one folder",
			files: map[string]string{
				ifFile:                        "format: hl7v2\nsource: { type: file, path: inbox }\ndestinations:\n  out: { type: file, path: out/a }\n",
				"interfaces/b/interface.yaml": "format: hl7v2\nsource:\n  type: file\n  path: ./inbox/\ndestinations:\n  out: { type: file, path: out/b }\n",
				"interfaces/b/transform.js":   "function transform(m) { return m; }\n"},
			want: []want{{"interfaces/b/interface.yaml", 4, "source.path", "interface adt already watches this folder (interfaces/adt/interface.yaml:2)"}},
		},
		{
			name:  "move_to with after delete, max_file_bytes with split records",
			files: map[string]string{ifFile: "format: hl7v2\nsource:\n  type: file\n  path: inbox\n  after: delete\n  move_to: done\n  split: records\n  max_file_bytes: 1GiB\ndestinations:\n  out: { type: file, path: out }\n"},
			want: []want{
				{ifFile, 6, "source.move_to", "move_to applies only with after: move"},
				{ifFile, 8, "source.max_file_bytes", "max_file_bytes applies only to split: none"},
			},
		},
		{
			name:  "bad file pattern",
			files: map[string]string{ifFile: "format: hl7v2\nsource: { type: file, path: inbox, pattern: \"[*.hl7\" }\ndestinations:\n  out: { type: file, path: out }\n"},
			want:  []want{{ifFile, 2, "source.pattern", `want a file name pattern such as *.hl7 (no folders), got "[*.hl7"`}},
		},
		{
			name:  "bad file name template",
			files: map[string]string{ifFile: mllpIface("", "  archive:\n    type: file\n    path: out\n    name: \"{{.Id}}.hl7\"\n  archive2:\n    type: file\n    path: out2\n    name: \"../{{.ID}}.hl7\"\n")},
			want: []want{
				{ifFile, 12, "destinations.archive.name", "can't evaluate field Id"},
				{ifFile, 16, "destinations.archive2.name", "gave \"../1001.hl7\": the name must not climb out of the destination's folder"},
			},
		},
		{
			name:  "http destination without url or connection",
			files: map[string]string{ifFile: mllpIface("", "  api:\n    type: http\n    method: post\n")},
			want: []want{
				{ifFile, 9, "destinations.api.url", "an http destination needs url or connection"},
				{ifFile, 11, "destinations.api.method", `want one of POST, PUT, PATCH, got "post" (did you mean "POST"?)`},
			},
		},
		{
			name:  "destination without a type",
			files: map[string]string{ifFile: mllpIface("", "  api:\n    url: http://x/\n")},
			want:  []want{{ifFile, 9, "destinations.api.type", "missing required key"}},
		},
		{
			name:  "rate limit without per_second",
			files: map[string]string{ifFile: mllpIface("    rate_limit: { burst: 5 }\n", "")},
			want:  []want{{ifFile, 9, "destinations.emr.rate_limit.per_second", "missing required key"}},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			dir := writeProject(t, tc.files)
			got := loadProblems(t, dir, env(tc.env))
			matchProblems(t, got, tc.want)
		})
	}
}

// scheduleIface is a schedule interface whose source keys are given.
func scheduleIface(keys string) string {
	if keys != "" {
		keys += "\n"
	}
	return "source:\n  type: schedule\n" + keys + "destinations:\n  out:\n    type: file\n    path: out\n"
}

// internalIface is an internal interface reading format.
func internalIface(format string) string {
	return "format: " + format + "\nsource: { type: internal }\ndestinations:\n  out: { type: file, path: out/n }\n"
}

// connIface is the base interface with its emr destination using a
// connection (on line 7).
func connIface(name string) string {
	return "source:\n  type: mllp\n  listen: 127.0.0.1:2575\ndestinations:\n  emr:\n    type: mllp\n    connection: " + name + "\n"
}

// FuzzInterfaceYAML feeds arbitrary bytes as an interface.yaml: Load must
// answer with a project or a *ValidationError, never panic or hang.
func FuzzInterfaceYAML(f *testing.F) {
	f.Add([]byte(baseFiles[ifFile]))
	f.Add([]byte("a: &a [*a]\n"))
	f.Add([]byte("source: {type: schedule, cron: \"@daily\", timezone: UTC}\ndestinations: {x: {<<: {type: file}, path: o}}\n"))
	f.Add([]byte("destinations:\n  a: {type: interface, interface: adt}\nformat: json\nsource: {type: internal}\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		dir := writeProject(t, map[string]string{ifFile: string(data)})
		_, err := Load(dir, env(nil))
		if err != nil {
			var ve *ValidationError
			if !errors.As(err, &ve) || len(ve.Problems) == 0 {
				t.Fatalf("err = %v", err)
			}
		}
	})
}
