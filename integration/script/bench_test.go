package script

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"
)

// oruToJSON is the kind of transform a lab feed runs: an ORU^R01 to the
// JSON document an EMR's HTTP API takes.
const oruToJSON = `
function transform(msg, meta) {
  if (msg.type !== "ORU^R01") filter("not a result: " + msg.type);
  const mrn = msg.get("PID-3.1");
  if (mrn === "") quarantine("PID-3.1 (MRN) is empty");
  const results = msg.segments("OBX").map((obx) => ({
    code: obx.get("3.1"),
    name: obx.get("3.2"),
    system: obx.get("3.3"),
    type: obx.get("2"),
    value: obx.get("2") === "NM" ? Number(obx.get("5")) : obx.get("5"),
    units: obx.get("6.1"),
    range: obx.get("7"),
    flag: obx.get("8") || null,
    status: obx.get("11"),
    observedAt: obx.get("14") || null,
  }));
  return {
    id: meta.id,
    receivedAt: meta.receivedAt,
    patient: {
      mrn,
      family: msg.get("PID-5.1"),
      given: msg.get("PID-5.2"),
      birthDate: msg.get("PID-7"),
      sex: msg.get("PID-8"),
    },
    order: {
      placer: msg.get("OBR-2.1"),
      filler: msg.get("OBR-3.1"),
      test: { code: msg.get("OBR-4.1"), name: msg.get("OBR-4.2") },
      collectedAt: msg.get("OBR-7"),
      provider: msg.get("OBR-16.2") + ", " + msg.get("OBR-16.3"),
    },
    results,
    notes: msg.segments("NTE").map((n) => n.get("3")),
  };
}
`

// oruMessage builds an ORU^R01 with n OBX segments (a chemistry panel).
func oruMessage(n int) string {
	analytes := []struct{ code, name, units, rng string }{
		{"2345-7", "Glucose", "mg/dL", "70-99"}, {"2160-0", "Creatinine", "mg/dL", "0.6-1.3"},
		{"3094-0", "Urea nitrogen", "mg/dL", "7-20"}, {"2951-2", "Sodium", "mmol/L", "135-145"},
		{"2823-3", "Potassium", "mmol/L", "3.5-5.1"}, {"2075-0", "Chloride", "mmol/L", "98-107"},
		{"2028-9", "Carbon dioxide", "mmol/L", "22-29"}, {"17861-6", "Calcium", "mg/dL", "8.6-10.3"},
	}
	var b strings.Builder
	b.WriteString("MSH|^~\\&|LAB|GOOD HEALTH HOSPITAL|EMR|GOOD HEALTH HOSPITAL|20240305101112||ORU^R01^ORU_R01|LAB000123|P|2.5.1\r")
	b.WriteString("PID|1||MRN12345^^^GHH^MR~999-99-9999^^^USSSA^SS||DOE^JANE^Q^^MS||19700412|F|||123 MAIN ST^^SPRINGFIELD^IL^62701^USA||(217)555-0100\r")
	b.WriteString("PV1|1|O|LAB^^^GHH||||1234^WELBY^MARCUS^^^DR|||||||||||V0001^^^GHH^VN\r")
	b.WriteString("ORC|RE|ORD448811^EMR|LAB998877^LAB||CM\r")
	b.WriteString("OBR|1|ORD448811^EMR|LAB998877^LAB|80048^BASIC METABOLIC PANEL^CPT|||20240305083000|||||||||1234^WELBY^MARCUS||||||20240305100500|||F\r")
	for i := 0; i < n; i++ {
		a := analytes[i%len(analytes)]
		flag := ""
		if i%5 == 0 {
			flag = "H"
		}
		fmt.Fprintf(&b, "OBX|%d|NM|%s^%s^LN||%d.%d|%s^%s^UCUM|%s|%s|||F|||20240305095%d\r", i+1, a.code, a.name, 80+i, i%10, a.units, a.units, a.rng, flag, i%10)
	}
	b.WriteString("NTE|1|L|Specimen slightly hemolyzed \\T\\ recollection not required.\r")
	return b.String()
}

func oruInput() Input {
	return Input{
		Format:       FormatHL7v2,
		OutputFormat: FormatJSON,
		Payload:      []byte(oruMessage(20)),
		Meta:         Meta{ID: "123456", ReceivedAt: time.Date(2024, 3, 5, 10, 11, 12, 0, time.UTC), Destination: "emr-api"},
	}
}

func TestTransformORU(t *testing.T) {
	h := newTestHost(t, Config{Isolates: 1})
	loadJS(t, h, "lab", oruToJSON)
	res := mustCall(t, h, "lab", "", oruInput())
	if res.Kind != KindOutput {
		t.Fatalf("%v: %s\n%s", res.Kind, res.Reason, res.Stack)
	}
	var doc struct {
		ID         string
		ReceivedAt string
		Patient    struct{ MRN, Family, Given, BirthDate, Sex string }
		Order      struct{ Placer, Provider string }
		Results    []struct {
			Code, Name, Units, Range, Status string
			Value                            float64
			Flag                             *string
		}
		Notes []string
	}
	if err := json.Unmarshal(res.Output, &doc); err != nil {
		t.Fatalf("output is not JSON: %v\n%s", err, res.Output)
	}
	if doc.ID != "123456" || doc.ReceivedAt != "2024-03-05T10:11:12.000Z" || doc.Patient.MRN != "MRN12345" || doc.Patient.Given != "JANE" ||
		doc.Order.Placer != "ORD448811" || doc.Order.Provider != "WELBY, MARCUS" || len(doc.Results) != 20 {
		t.Errorf("document: %+v", doc)
	}
	r := doc.Results[3]
	if r.Code != "2951-2" || r.Name != "Sodium" || r.Value != 83.3 || r.Units != "mmol/L" || r.Range != "135-145" || r.Status != "F" || r.Flag != nil {
		t.Errorf("result 4: %+v", r)
	}
	if doc.Results[0].Flag == nil || *doc.Results[0].Flag != "H" {
		t.Errorf("result 1 flag: %+v", doc.Results[0])
	}
	if len(doc.Notes) != 1 || doc.Notes[0] != "Specimen slightly hemolyzed & recollection not required." {
		t.Errorf("notes: %q", doc.Notes)
	}
}

// BenchmarkTransformORU measures one call end to end on one isolate: the
// payload into V8, hl7.parse, the transform, JSON.stringify, the output
// back to Go.
func BenchmarkTransformORU(b *testing.B) {
	h := newTestHost(b, Config{Isolates: 1})
	loadJS(b, h, "lab", oruToJSON)
	in := oruInput()
	ctx := context.Background()
	b.SetBytes(int64(len(in.Payload)))
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		res, err := h.Call(ctx, "lab", "", in)
		if err != nil || res.Kind != KindOutput {
			b.Fatalf("%v %v %s", err, res.Kind, res.Reason)
		}
	}
}

// BenchmarkCallOverhead is the floor: a transform that returns its input.
func BenchmarkCallOverhead(b *testing.B) {
	h := newTestHost(b, Config{Isolates: 1})
	loadJS(b, h, "echo", `function transform(m) { return m; }`)
	in := text("x")
	ctx := context.Background()
	for i := 0; i < b.N; i++ {
		if _, err := h.Call(ctx, "echo", "", in); err != nil {
			b.Fatal(err)
		}
	}
}
