package script

import (
	"encoding/json"
	"strings"
	"testing"
)

// The HL7 API is tested through real V8: each case's code runs with msg
// (the parsed message) in scope, and its value (a string as is, anything
// else as JSON) is compared with want; want "!..." expects a throw whose
// message contains the rest.
const adtA01 = "MSH|^~\\&|ADT1|GOOD HEALTH HOSPITAL|GHH LAB, INC.|GOOD HEALTH HOSPITAL|198808181126|SECURITY|ADT^A01^ADT_A01|MSG00001|P|2.5.1\r" +
	"EVN|A01|200708181123||\r" +
	"PID|1||PATID1234^^^GOOD HEALTH HOSPITAL^MR~123456789^^^USSSA^SS||EVERYMAN^ADAM^A^III||19610615|M||C|2222 HOME STREET^^GREENSBORO^NC^27401-1020|GL|(555) 555-2004|(555)555-2004||S||PATID12345001^2^M10^ADT1^AN^A|444333333|987654^NC\r" +
	"NK1|1|NUCLEAR^NELDA^W|SPO^SPOUSE||||NK^NEXT OF KIN\r" +
	"PV1|1|I|2000^2012^01||||004777^ATTEND^AARON^A|||SUR||||ADM|A0|\r" +
	"OBX|1|NM|8867-4^Heart rate^LN||72|/min^beats per minute^UCUM|60-100|N|||F\r" +
	"OBX|2|ST|8310-5^Body temperature^LN||37.2 \\T\\ rising \\F\\ note|Cel|||||F\r" +
	"NTE|1||first note\r" +
	"NTE|2||second \\S\\ note \\E\\ end \\X41\\\\.br\\x\r"

type hl7Case struct {
	name string
	msg  string // empty: adtA01; "-": no message
	code string
	want string
}

func runHL7Cases(t *testing.T, cases []hl7Case) {
	t.Helper()
	h := newTestHost(t, Config{})
	loadJS(t, h, "hl7test", `
function transform(c) {
  const msg = c.msg === null ? undefined : hl7.parse(c.msg);
  const r = new Function("msg", c.code)(msg);
  return typeof r === "string" ? r : JSON.stringify(r);
}`)
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var msg any = tc.msg
			switch tc.msg {
			case "":
				msg = adtA01
			case "-":
				msg = nil
			}
			payload, _ := json.Marshal(map[string]any{"msg": msg, "code": tc.code})
			res := mustCall(t, h, "hl7test", "", Input{Format: FormatJSON, OutputFormat: FormatText, Payload: payload})
			if strings.HasPrefix(tc.want, "!") {
				if res.Kind != KindQuarantined || !strings.Contains(res.Reason, tc.want[1:]) {
					t.Fatalf("got %v %q %q, want a throw containing %q", res.Kind, res.Output, res.Reason, tc.want[1:])
				}
				return
			}
			if res.Kind != KindOutput {
				t.Fatalf("got %v: %s\n%s", res.Kind, res.Reason, res.Stack)
			}
			if string(res.Output) != tc.want {
				t.Errorf("got  %q\nwant %q", res.Output, tc.want)
			}
		})
	}
}

func TestHL7Get(t *testing.T) {
	runHL7Cases(t, []hl7Case{
		{"component", "", `return msg.get("PID-3.1")`, "PATID1234"},
		{"second repetition", "", `return msg.get("PID-3[2].1")`, "123456789"},
		{"repetition component", "", `return msg.get("PID-3[2].5")`, "SS"},
		{"field is its first repetition", "", `return msg.get("PID-3")`, "PATID1234^^^GOOD HEALTH HOSPITAL^MR"},
		{"composite field", "", `return msg.get("PID-5")`, "EVERYMAN^ADAM^A^III"},
		{"missing repetition", "", `return msg.get("PID-3[3].1")`, ""},
		{"missing component", "", `return msg.get("PID-5.9")`, ""},
		{"missing field", "", `return msg.get("PID-40")`, ""},
		{"missing segment", "", `return msg.get("ZZZ-1")`, ""},
		{"subcomponent", "MSH|^~\\&|A\rPID|1||123^^^HOSP&1.2.3&ISO^MR\r", `return [msg.get("PID-3.4"), msg.get("PID-3.4.1"), msg.get("PID-3.4.2"), msg.get("PID-3.4.3"), msg.get("PID-3.4.4")]`, `["HOSP&1.2.3&ISO","HOSP","1.2.3","ISO",""]`},
		{"MSH-1 is the separator", "", `return msg.get("MSH-1")`, "|"},
		{"MSH-2 is the encoding characters", "", `return msg.get("MSH-2")`, "^~\\&"},
		{"MSH-3", "", `return msg.get("MSH-3")`, "ADT1"},
		{"MSH-9 components", "", `return [msg.get("MSH-9"), msg.get("MSH-9.1"), msg.get("MSH-9.2"), msg.get("MSH-9.3")]`, `["ADT^A01^ADT_A01","ADT","A01","ADT_A01"]`},
		{"MSH-12", "", `return msg.get("MSH-12")`, "2.5.1"},
		{"type, control id, version", "", `return [msg.type, msg.controlId, msg.version]`, `["ADT^A01","MSG00001","2.5.1"]`},
		{"second occurrence", "", `return msg.get("OBX[2]-3.2")`, "Body temperature"},
		{"first occurrence by default", "", `return msg.get("OBX-3.2")`, "Heart rate"},
		{"occurrence past the end", "", `return msg.get("OBX[3]-3")`, ""},
		{"count segments", "", `return [msg.count("OBX"), msg.count("NTE"), msg.count("ZZZ"), msg.count("obx")]`, `[2,2,0,2]`},
		{"count repetitions", "", `return [msg.count("PID-3"), msg.count("PID-5"), msg.count("PID-40"), msg.count("MSH-2")]`, `[2,1,0,1]`},
		{"getAll", "", `return [msg.getAll("PID-3.1"), msg.getAll("PID-3.5"), msg.getAll("ZZZ-1")]`, `[["PATID1234","123456789"],["MR","SS"],[]]`},
		{"segment", "", `const s = msg.segment("OBX", 2); return [s.name, s.get("5"), s.get("OBX-3.1"), s.get("3[1].2"), s.count("3")]`, `["OBX","37.2 & rising | note","8310-5","Body temperature",1]`},
		{"segment missing", "", `return [msg.segment("ZZZ"), msg.segment("OBX", 3)]`, `[null,null]`},
		{"segments", "", `return msg.segments("OBX").map(s => s.get("OBX-5"))`, `["72","37.2 & rising | note"]`},
		{"all segments", "", `return msg.segments().map(s => s.name).join(",")`, "MSH,EVN,PID,NK1,PV1,OBX,OBX,NTE,NTE"},
		{"segment fields", "", `return [msg.segment("NK1").fields, msg.segment("MSH").fields]`, `[7,12]`},
		{"segment path for another segment", "", `return msg.segment("PID").get("OBX-5")`, "!names OBX but this segment is PID"},
		{"bad path", "", `return msg.get("PID.3")`, `!bad path "PID.3"`},
		{"zero position", "", `return msg.get("PID-0")`, "!positions start at 1"},
		{"path without segment", "", `return msg.get("3.1")`, "!must start with a segment name"},
		{"lowercase segment in path", "", `return msg.get("pid-3.1")`, "PATID1234"},
	})
}

func TestHL7Escapes(t *testing.T) {
	runHL7Cases(t, []hl7Case{
		{"decoded on get", "", `return msg.get("OBX[2]-5")`, "37.2 & rising | note"},
		{"all standard escapes", "", `return msg.get("NTE[2]-3")`, "second ^ note \\ end A\\.br\\x"},
		{"raw keeps them", "", `return msg.raw("NTE[2]-3")`, "second \\S\\ note \\E\\ end \\X41\\\\.br\\x"},
		{"repetition escape", "MSH|^~\\&|A\rNTE|1||a\\R\\b\r", `return msg.get("NTE-3")`, "a~b"},
		{"hex utf-8", "MSH|^~\\&|A\rNTE|1||caf\\XC3A9\\\r", `return msg.get("NTE-3")`, "café"},
		{"hex latin-1", "MSH|^~\\&|A\rNTE|1||caf\\XE9\\\r", `return msg.get("NTE-3")`, "café"},
		{"unterminated escape kept", "MSH|^~\\&|A\rNTE|1||a\\Fb\r", `return msg.get("NTE-3")`, "a\\Fb"},
		{"escaped on set", "", `msg.set("NTE-3", "a|b^c&d~e\\f"); return msg.raw("NTE-3")`, "a\\F\\b\\S\\c\\T\\d\\R\\e\\E\\f"},
		{"set then get round trip", "", `const v = "x|y^z&w~v\\u\r\nline"; msg.set("PID-5.1", v); return msg.get("PID-5.1") === v ? "same" : msg.get("PID-5.1")`, "same"},
		{"line breaks escaped as hex", "", `msg.set("NTE-3", "a\r\nb"); return msg.raw("NTE-3")`, "a\\X0D\\\\X0A\\b"},
		{"hl7.escape and unescape", "-", `return [hl7.escape("a&b"), hl7.unescape("a\\T\\b")]`, `["a\\T\\b","a&b"]`},
		{"custom delimiters", "MSH!@#$%!APP!FAC\rPID!1!!12@34#56@78!!DOE@JANE$T$X\r",
			`return [msg.get("MSH-1"), msg.get("MSH-2"), msg.get("MSH-3"), msg.get("PID-3.2"), msg.get("PID-3[2].2"), msg.get("PID-5.2"), JSON.stringify(msg.delimiters)]`,
			`["!","@#$%","APP","34","78","JANE%X","{\"field\":\"!\",\"component\":\"@\",\"repetition\":\"#\",\"escape\":\"$\",\"subcomponent\":\"%\",\"truncation\":\"\"}"]`},
		{"custom delimiters escaped on set", "MSH!@#$%!APP\rPID!1\r", `msg.set("PID-2", "a!b@c"); return msg.toString()`, "MSH!@#$%!APP\rPID!1!a$F$b$S$c\r"},
		{"truncation character", "MSH|^~\\&#|A\rNTE|1||a\\P\\b\r", `const a = msg.get("NTE-3"); msg.set("NTE-2", "x#y"); return [a, msg.raw("NTE-2")]`, `["a#b","x\\P\\y"]`},
	})
}

func TestHL7Set(t *testing.T) {
	const small = "MSH|^~\\&|A|B|C|D|20240101||ADT^A01|1|P|2.5\rPID|1||123^^^MRN~456^^^SSN||DOE^JOHN\r"
	runHL7Cases(t, []hl7Case{
		{"component", small, `msg.set("PID-5.1", "ROE"); return msg.segment("PID").toString()`, "PID|1||123^^^MRN~456^^^SSN||ROE^JOHN"},
		{"component past the end", small, `msg.set("PID-5.4", "JR"); return msg.raw("PID-5")`, "DOE^JOHN^^JR"},
		{"field past the end", small, `msg.set("PID-8", "M"); return msg.segment("PID").toString()`, "PID|1||123^^^MRN~456^^^SSN||DOE^JOHN|||M"},
		{"subcomponent", small, `msg.set("PID-3.4.2", "1.2.3"); return msg.raw("PID-3")`, "123^^^MRN&1.2.3~456^^^SSN"},
		{"second repetition", small, `msg.set("PID-3[2].1", "789"); return msg.raw("PID-3")`, "123^^^MRN~789^^^SSN"},
		{"new repetition", small, `msg.set("PID-3[4].1", "X"); return msg.raw("PID-3")`, "123^^^MRN~456^^^SSN~~X"},
		{"field sets its first repetition", small, `msg.set("PID-3", "999"); return msg.raw("PID-3")`, "999~456^^^SSN"},
		{"array gives components", small, `msg.set("PID-5", ["SMITH", "ANN", ["a", "b"]]); return msg.raw("PID-5")`, "SMITH^ANN^a&b"},
		{"array at component level gives subcomponents", small, `msg.set("PID-3.4", ["HOSP", "1.2", "ISO"]); return msg.raw("PID-3")`, "123^^^HOSP&1.2&ISO~456^^^SSN"},
		{"array at subcomponent level", small, `msg.set("PID-3.4.1", ["x"])`, "!a subcomponent is one value"},
		{"number", small, `msg.set("PID-1", 2); return msg.get("PID-1")`, "2"},
		{"reads before and after a write", small, `const a = [msg.get("PID-5.1"), msg.segment("PID").fields]; msg.set("PID-5.1", "ROE"); return a.concat([msg.get("PID-5.1"), msg.get("PID-3[2].1"), msg.segment("PID").fields])`, `["DOE",5,"ROE","456",5]`},
		{"clearing a component trims", small, `msg.set("PID-5.2", ""); return msg.raw("PID-5")`, "DOE"},
		{"clearing past the end changes nothing", small, `msg.set("PID-30", ""); msg.set("ZZZ-1", null); return msg.toString() === ` + jsString(small) + ` ? "same" : msg.toString()`, "same"},
		{"setRaw field with repetitions", small, `msg.setRaw("PID-3", "A^B~C"); return [msg.get("PID-3[2]"), msg.count("PID-3")]`, `["C",2]`},
		{"setRaw component", small, `msg.setRaw("PID-5.1", "O\\T\\BRIEN"); return [msg.get("PID-5.1"), msg.raw("PID-5")]`, `["O&BRIEN","O\\T\\BRIEN^JOHN"]`},
		{"setRaw refuses a field separator", small, `msg.setRaw("PID-5", "a|b")`, "!cannot contain the field separator"},
		{"setRaw refuses components in a component", small, `msg.setRaw("PID-5.1", "a^b")`, "!cannot contain the component separator"},
		{"copy a field with raw/setRaw", small, `const out = hl7.create("ADT^A08"); out.setRaw("PID-5", msg.raw("PID-5")); return out.get("PID-5.2")`, "JOHN"},
		{"MSH-2 is locked", small, `msg.set("MSH-2", "^~\\&")`, "!MSH-1 and MSH-2 hold the message's delimiters"},
		{"MSH-1 is locked", small, `msg.set("MSH-1", "#")`, "!MSH-1 and MSH-2"},
		{"MSH field", small, `msg.set("MSH-10", "ABC"); return msg.segment("MSH").toString()`, "MSH|^~\\&|A|B|C|D|20240101||ADT^A01|ABC|P|2.5"},
		{"set creates a missing segment", small, `msg.set("ZPI-2", "x"); return msg.toString()`, small + "ZPI||x\r"},
		{"set creates the next occurrence", small, `msg.set("ZPI-1", "a"); msg.set("ZPI[2]-1", "b"); return msg.segments("ZPI").map(String)`, `["ZPI|a","ZPI|b"]`},
		{"set refuses a gap", small, `msg.set("ZPI[2]-1", "b")`, "!there are 0 ZPI segments"},
		{"segment set", small, `msg.segment("PID").set("5.2", "JIM").set("PID-7", "19700101"); return msg.segment("PID").toString()`, "PID|1||123^^^MRN~456^^^SSN||DOE^JIM||19700101"},
		{"object value refused", small, `msg.set("PID-5", msg)`, "!a value must be a string, number or array"},
	})
}

func TestHL7Segments(t *testing.T) {
	const small = "MSH|^~\\&|A\rPID|1\rNTE|1||a\rOBX|1\rNTE|2||b\rNTE|3||c\r"
	runHL7Cases(t, []hl7Case{
		{"add", small, `const s = msg.add("ZPI", ["a", ["b", "c"], null, "d|e"]); return [s.get("2.2"), msg.toString().split("\r").slice(-2)[0]]`, `["c","ZPI|a|b^c||d\\F\\e"]`},
		{"add without fields", small, `msg.add("ZZZ"); return msg.toString().endsWith("\rZZZ\r")`, "true"},
		{"add copies a segment", small, `const other = hl7.parse("MSH|^~\\&|X\rZPI|q^r\r"); msg.add(other.segment("ZPI")); msg.segment("ZPI").set("1.1", "Q"); return [msg.get("ZPI-1"), other.get("ZPI-1")]`, `["Q^r","q^r"]`},
		{"add re-encodes for other delimiters", small, `const other = hl7.parse("MSH!@#$%!X\rZPI!a@b%c!x^y\r"); msg.add(other.segment("ZPI")); return msg.segment("ZPI").toString()`, "ZPI|a^b&c|x\\S\\y"},
		{"add a second MSH", small, `msg.add("MSH")`, "!a message has one MSH segment"},
		{"add a bad name", small, `msg.add("ZP")`, "!a segment name has three letters or digits"},
		{"insertAfter", small, `msg.insertAfter(msg.segment("PID"), "PD1", ["x"]); return msg.segments().map(s => s.name).join(",")`, "MSH,PID,PD1,NTE,OBX,NTE,NTE"},
		{"insertBefore", small, `msg.insertBefore(msg.segment("OBX"), "ORC"); return msg.segments().map(s => s.name).join(",")`, "MSH,PID,NTE,ORC,OBX,NTE,NTE"},
		{"insertBefore MSH", small, `msg.insertBefore(msg.segment("MSH"), "ZZZ")`, "!nothing goes before MSH"},
		{"remove", small, `const ok = msg.remove(msg.segment("NTE", 2)); return [ok, msg.remove(msg.segment("NTE", 9)), msg.getAll("NTE-3"), msg.segments("NTE").map(s => s.get("3"))]`, `[true,false,["a"],["a","c"]]`},
		{"removeAll", small, `return [msg.removeAll("NTE"), msg.toString()]`, `[3,"MSH|^~\\&|A\rPID|1\rOBX|1\r"]`},
		{"remove MSH", small, `msg.remove(msg.segment("MSH"))`, "!the MSH segment cannot be removed"},
		{"removeAll MSH", small, `msg.removeAll("MSH")`, "!the MSH segment cannot be removed"},
		{"copy is independent", small, `const c = msg.copy(); c.set("PID-1", "9"); return [msg.get("PID-1"), c.get("PID-1")]`, `["1","9"]`},
	})
}

func TestHL7ParseAndSerialise(t *testing.T) {
	crlf := strings.ReplaceAll(adtA01, "\r", "\r\n")
	lf := strings.ReplaceAll(adtA01, "\r", "\n")
	runHL7Cases(t, []hl7Case{
		{"unchanged CR message is byte-identical", "", `return msg.toString()`, adtA01},
		{"no trailing CR kept", strings.TrimSuffix(adtA01, "\r"), `return msg.toString()`, strings.TrimSuffix(adtA01, "\r")},
		{"CRLF accepted, CR written", crlf, `return msg.toString()`, adtA01},
		{"LF accepted, CR written", lf, `return [msg.count("OBX"), msg.get("NTE[2]-3").length, msg.toString() === ` + jsString(adtA01) + `]`, `[2,27,true]`},
		{"mixed ends", "MSH|^~\\&|A\r\nPID|1\nPV1|1\rOBX|1", `return msg.segments().map(s => s.name).join(",")`, "MSH,PID,PV1,OBX"},
		{"blank lines skipped", "MSH|^~\\&|A\r\r\nPID|1\r\n\r\n", `return msg.toString()`, "MSH|^~\\&|A\rPID|1\r"},
		{"other line end", "", `return msg.toString("\n").split("\n").length`, "10"},
		{"changed segment rebuilt, others kept", "", `msg.set("PID-8", "F"); const out = msg.toString(); return out === ` + jsString(strings.Replace(adtA01, "|19610615|M|", "|19610615|F|", 1)) + ` ? "ok" : out`, "ok"},
		{"byte order mark dropped", "\ufeffMSH|^~\\&|A\r", `return msg.get("MSH-3")`, "A"},
		{"not MSH", "PID|1\r", ``, "!a message must start with an MSH segment"},
		{"short encoding characters", "MSH|^~|A\r", ``, "!MSH-2 (the encoding characters) must have 4 or 5 characters"},
		{"repeated delimiter", "MSH|^^\\&|A\r", ``, "!repeat a character"},
		{"alphanumeric field separator", "MSHX^~\\&XA\r", ``, "!must be a punctuation character"},
		{"a second MSH", "MSH|^~\\&|A\rPID|1\rMSH|^~\\&|B\r", ``, "!segment 3 is a second MSH"},
		{"a bad segment", "MSH|^~\\&|A\rP|1\r", ``, "!segment 2 (\"P|1\") does not start with a three-character name"},
		{"parse a non-string", "-", `hl7.parse(42)`, "!a message must be a string"},
		{"toJSON", "MSH|^~\\&|A\rPID|1\r", `return JSON.stringify({m: msg})`, `{"m":"MSH|^~\\&|A\rPID|1\r"}`},
	})
}

func TestHL7Create(t *testing.T) {
	runHL7Cases(t, []hl7Case{
		{"defaults", "-", `const m = hl7.create("ADT^A01"); return [m.type, m.version, m.get("MSH-11"), m.get("MSH-2"), /^\d{14}$/.test(m.get("MSH-7")), m.controlId.length > 8, m.toString().endsWith("\r")]`, `["ADT^A01","2.5.1","P","^~\\&",true,true,true]`},
		{"options", "-", `const m = hl7.create("ORU^R01^ORU_R01", {sendingApplication: "LAB", sendingFacility: "A|B", receivingApplication: "EMR", controlId: "X1", processingId: "T", version: "2.3", timestamp: new Date(2024, 0, 2, 3, 4, 5)}); return m.toString()`, "MSH|^~\\&|LAB|A\\F\\B|EMR||20240102030405||ORU^R01^ORU_R01|X1|T|2.3\r"},
		{"unique control ids", "-", `const s = new Set(); for (let i = 0; i < 1000; i++) s.add(hl7.create("ADT^A01").controlId); return s.size`, "1000"},
		{"build a message", "-", `const m = hl7.create("ADT^A04", {controlId: "1", timestamp: new Date(2024, 0, 1)}); m.set("PID-3.1", "123"); m.set("PID-5", ["DOE", "JANE"]); m.add("PV1", ["1", "O"]); return m.toString()`, "MSH|^~\\&|||||20240101000000||ADT^A04|1|P|2.5.1\rPID|||123||DOE^JANE\rPV1|1|O\r"},
		{"bad type", "-", `hl7.create("ADT|A01")`, "!the message type must look like"},
	})
}

func jsString(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}
