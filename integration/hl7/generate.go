package hl7

import (
	"fmt"
	"math"
	"math/rand/v2"
	"strconv"
	"strings"
	"time"
)

// GeneratorOptions configure a Generator. The zero value generates all four
// message types for a pool of 100 patients, starting at 2026-01-05 08:00 UTC.
type GeneratorOptions struct {
	// Seed makes the sequence reproducible: the same options give the same
	// messages, byte for byte.
	Seed uint64
	// Patients is the size of the MRN pool (default 100). A small pool gives
	// many messages per MRN, which is what a per-key ordering test needs.
	Patients int
	// Types are the message types to draw from, any of "ADT^A01",
	// "ADT^A04", "ADT^A08" and "ORU^R01" (default all four).
	Types []string
	// SendingApplication, SendingFacility, ReceivingApplication and
	// ReceivingFacility fill MSH-3 to MSH-6 (defaults DUCTUS_SEND, GENERAL
	// HOSPITAL, DUCTUS, ENGINE).
	SendingApplication, SendingFacility, ReceivingApplication, ReceivingFacility string
	// Version is MSH-12 (default 2.5.1).
	Version string
	// Start is the clock of the first message (MSH-7 and the event times);
	// each message moves it on by a few seconds. Default 2026-01-05 08:00 UTC.
	Start time.Time
	// ControlIDPrefix starts every MSH-10, which is the prefix followed by a
	// counter of 9 digits; at most 11 characters. Give each run its own
	// prefix when the receiver dedupes on MSH-10, or a second run with the
	// same seed is all duplicates. Default "DS".
	ControlIDPrefix string
	// Enhanced sets MSH-15 to AL and MSH-16 to NE, asking the receiver for
	// enhanced-mode accept acknowledgements (CA) instead of AA.
	Enhanced bool
}

// Sample is one generated message and what the generator knows about it.
type Sample struct {
	Bytes     []byte // the message, segments ended by CR
	Type      string // "ADT^A01"
	ControlID string // MSH-10
	MRN       string // PID-3.1, the ordering key of a typical ADT feed
	// Seq is the 1-based number of the message in the generator's run:
	// later messages have higher numbers, so a receiver can check per-MRN
	// order from MSH-10 alone.
	Seq int
}

// Generator produces realistic ADT^A01/A04/A08 and ORU^R01 messages for
// load and ordering tests. It is not safe for concurrent use; share one
// behind a mutex, or give each sender its own with its own prefix.
type Generator struct {
	o        GeneratorOptions
	rng      *rand.Rand
	patients []patient
	clock    time.Time
	seq      int
}

type patient struct {
	mrn, family, given, middle, sex, dob string
	street, city, state, zip, phone      string
	account, visit                       string
}

// NewGenerator checks opts and returns a generator.
func NewGenerator(opts GeneratorOptions) (*Generator, error) {
	if opts.Patients == 0 {
		opts.Patients = 100
	}
	if opts.Patients < 1 || opts.Patients > 1_000_000 {
		return nil, fmt.Errorf("hl7: generator: patients must be 1 to 1000000, got %d", opts.Patients)
	}
	if len(opts.Types) == 0 {
		opts.Types = []string{"ADT^A01", "ADT^A04", "ADT^A08", "ORU^R01"}
	}
	for _, t := range opts.Types {
		switch t {
		case "ADT^A01", "ADT^A04", "ADT^A08", "ORU^R01":
		default:
			return nil, fmt.Errorf("hl7: generator: unknown message type %q (want ADT^A01, ADT^A04, ADT^A08 or ORU^R01)", t)
		}
	}
	def := func(s *string, v string) {
		if *s == "" {
			*s = v
		}
	}
	def(&opts.SendingApplication, "DUCTUS_SEND")
	def(&opts.SendingFacility, "GENERAL HOSPITAL")
	def(&opts.ReceivingApplication, "DUCTUS")
	def(&opts.ReceivingFacility, "ENGINE")
	def(&opts.Version, "2.5.1")
	def(&opts.ControlIDPrefix, "DS")
	if len(opts.ControlIDPrefix) > 11 {
		return nil, fmt.Errorf("hl7: generator: the control ID prefix %q is longer than 11 characters (MSH-10 holds 20)", opts.ControlIDPrefix)
	}
	if opts.Start.IsZero() {
		opts.Start = time.Date(2026, 1, 5, 8, 0, 0, 0, time.UTC)
	}
	g := &Generator{o: opts, rng: rand.New(rand.NewPCG(opts.Seed, opts.Seed^0x9e3779b97f4a7c15)), clock: opts.Start}
	g.patients = make([]patient, opts.Patients)
	for i := range g.patients {
		g.patients[i] = g.newPatient(i)
	}
	return g, nil
}

// MRNs returns the pool's medical record numbers, in pool order.
func (g *Generator) MRNs() []string {
	out := make([]string, len(g.patients))
	for i, p := range g.patients {
		out[i] = p.mrn
	}
	return out
}

func (g *Generator) pickOf(list []string) string { return list[g.rng.IntN(len(list))] }

func (g *Generator) newPatient(i int) patient {
	p := patient{sex: "F"}
	if g.rng.IntN(2) == 0 {
		p.sex = "M"
	}
	// Unique by construction: i*13 plus a jitter below 13.
	p.mrn = strconv.Itoa(1_000_000 + i*13 + g.rng.IntN(13))
	p.family = g.pickOf(familyNames())
	if p.sex == "F" {
		p.given, p.middle = g.pickOf(femaleNames()), g.pickOf(femaleNames())[:1]
	} else {
		p.given, p.middle = g.pickOf(maleNames()), g.pickOf(maleNames())[:1]
	}
	born := time.Date(1930+g.rng.IntN(90), time.Month(1+g.rng.IntN(12)), 1+g.rng.IntN(28), 0, 0, 0, 0, time.UTC)
	p.dob = born.Format("20060102")
	c := cities()[g.rng.IntN(len(cities()))]
	p.street = fmt.Sprintf("%d %s", 1+g.rng.IntN(9899), g.pickOf(streets()))
	p.city, p.state, p.zip = c[0], c[1], fmt.Sprintf("%s%02d", c[2], g.rng.IntN(100))
	p.phone = fmt.Sprintf("(%s)555-%04d", c[3], g.rng.IntN(10000))
	p.account = fmt.Sprintf("A%08d", 10_000_000+i)
	return p
}

// Next returns the next message, of a type drawn from the options' types.
func (g *Generator) Next() Sample {
	s, _ := g.NextOf(g.pickOf(g.o.Types))
	return s
}

// NextOf returns the next message, of type typ.
func (g *Generator) NextOf(typ string) (Sample, error) {
	var body func(*patient, string) []string
	switch typ {
	case "ADT^A01", "ADT^A04", "ADT^A08":
		body = g.adt
	case "ORU^R01":
		body = g.oru
	default:
		return Sample{}, fmt.Errorf("hl7: generator: unknown message type %q", typ)
	}
	g.seq++
	g.clock = g.clock.Add(time.Duration(1+g.rng.IntN(90)) * time.Second)
	p := &g.patients[g.rng.IntN(len(g.patients))]
	id := fmt.Sprintf("%s%09d", g.o.ControlIDPrefix, g.seq)
	d := DefaultDelimiters()
	e := func(v string) string { return Escape(v, d) }
	structure := "ADT_A01"
	if typ == "ORU^R01" {
		structure = "ORU_R01"
	}
	accept, app := "", ""
	if g.o.Enhanced {
		accept, app = "AL", "NE"
	}
	msh := join("MSH", d.Encoding(), e(g.o.SendingApplication), e(g.o.SendingFacility), e(g.o.ReceivingApplication),
		e(g.o.ReceivingFacility), ts(g.clock), "", typ+"^"+structure, e(id), "P", e(g.o.Version), "", "", accept, app, "USA", "UNICODE UTF-8")
	lines := append([]string{msh}, body(p, typ)...)
	return Sample{
		Bytes:     []byte(strings.Join(lines, "\r") + "\r"),
		Type:      typ,
		ControlID: id,
		MRN:       p.mrn,
		Seq:       g.seq,
	}, nil
}

func join(fields ...string) string { return strings.Join(fields, "|") }

func ts(t time.Time) string { return t.Format("20060102150405") }

func (g *Generator) pid(p *patient) string {
	d := DefaultDelimiters()
	addr := strings.Join([]string{Escape(p.street, d), "", p.city, p.state, p.zip, "USA", "H"}, "^")
	return join("PID", "1", "", p.mrn+"^^^GH^MR~"+p.account+"^^^GH^AN", "", p.family+"^"+p.given+"^"+p.middle+"^^^^L", "",
		p.dob, p.sex, "", "", addr, "", p.phone+"^PRN^PH", "", "", g.pickOf([]string{"S", "M", "D", "W"}), "", p.account)
}

func (g *Generator) pv1(p *patient, class string) string {
	doc := g.pickOf(doctors())
	ward := g.pickOf([]string{"4N", "4S", "5E", "ICU", "MED", "SURG", "ER"})
	loc := fmt.Sprintf("%s^%d^%s^GH", ward, 400+g.rng.IntN(60), string(rune('A'+g.rng.IntN(2))))
	f := make([]string, 45)
	f[0], f[1], f[2], f[3] = "PV1", "1", class, loc
	f[4] = g.pickOf([]string{"E", "R", "U"})
	f[7] = doc
	f[10] = g.pickOf([]string{"MED", "SUR", "CAR", "PUL"})
	f[14] = g.pickOf([]string{"1", "7", "2"})
	if p.visit == "" {
		g.newVisit(p)
	}
	f[19] = p.visit
	f[44] = ts(g.clock.Add(-time.Duration(g.rng.IntN(240)) * time.Minute))
	return strings.Join(f, "|")
}

func (g *Generator) newVisit(p *patient) {
	p.visit = fmt.Sprintf("V%09d", 100_000_000+g.rng.IntN(900_000_000))
}

func (g *Generator) adt(p *patient, typ string) []string {
	event := typ[4:]
	class := "I"
	if event == "A04" {
		class = "O"
	}
	if event != "A08" {
		g.newVisit(p) // an admission or registration opens a visit; A08 updates it
	}
	lines := []string{
		join("EVN", event, ts(g.clock), "", "", "ADM"+strconv.Itoa(100+g.rng.IntN(900))+"^REGISTRAR^ANNE"),
		g.pid(p),
	}
	if g.rng.IntN(3) > 0 {
		kin := g.pickOf(familyNames())
		lines = append(lines, join("NK1", "1", kin+"^"+g.pickOf(femaleNames()), g.pickOf([]string{"SPO^Spouse^HL70063", "MTH^Mother^HL70063", "CHD^Child^HL70063"}), "", p.phone+"^PRN^PH"))
	}
	lines = append(lines, g.pv1(p, class))
	if g.rng.IntN(2) == 0 {
		a := g.pickOf([]string{"PCN^Penicillin", "LTX^Latex", "SUL^Sulfonamides", "PNT^Peanuts"})
		lines = append(lines, join("AL1", "1", "DA", a+"^L", g.pickOf([]string{"MI", "MO", "SV"}), "Rash"))
	}
	return lines
}

type test struct {
	loinc, name, units, lo, hi string
	mean, sd                   float64
	decimals                   int
}

func (g *Generator) oru(p *patient, _ string) []string {
	panels := []struct {
		code, name string
		tests      []test
	}{
		{"58410-2", "CBC panel - Blood by Automated count", []test{
			{"6690-2", "Leukocytes [#/volume] in Blood by Automated count", "10*3/uL", "4.5", "11.0", 7.5, 2.2, 1},
			{"789-8", "Erythrocytes [#/volume] in Blood by Automated count", "10*6/uL", "4.20", "5.90", 4.9, 0.5, 2},
			{"718-7", "Hemoglobin [Mass/volume] in Blood", "g/dL", "12.0", "17.5", 14.2, 1.6, 1},
			{"4544-3", "Hematocrit [Volume Fraction] of Blood by Automated count", "%", "36.0", "52.0", 43, 4.5, 1},
			{"777-3", "Platelets [#/volume] in Blood by Automated count", "10*3/uL", "150", "400", 260, 70, 0},
		}},
		{"51990-0", "Basic metabolic panel - Blood", []test{
			{"2951-2", "Sodium [Moles/volume] in Serum or Plasma", "mmol/L", "135", "145", 140, 3, 0},
			{"2823-3", "Potassium [Moles/volume] in Serum or Plasma", "mmol/L", "3.5", "5.1", 4.2, 0.45, 1},
			{"2075-0", "Chloride [Moles/volume] in Serum or Plasma", "mmol/L", "98", "107", 102, 3, 0},
			{"2345-7", "Glucose [Mass/volume] in Serum or Plasma", "mg/dL", "70", "99", 92, 14, 0},
			{"2160-0", "Creatinine [Mass/volume] in Serum or Plasma", "mg/dL", "0.60", "1.30", 0.95, 0.25, 2},
		}},
	}
	panel := panels[g.rng.IntN(len(panels))]
	placer := fmt.Sprintf("ORD%07d", g.rng.IntN(10_000_000))
	filler := fmt.Sprintf("LAB%07d", g.rng.IntN(10_000_000))
	collected := ts(g.clock.Add(-time.Duration(30+g.rng.IntN(300)) * time.Minute))
	doc := g.pickOf(doctors())
	lines := []string{
		g.pid(p),
		g.pv1(p, "I"),
		join("ORC", "RE", placer, filler, "", "CM", "", "", "", ts(g.clock), "", "", doc),
		join("OBR", "1", placer, filler, panel.code+"^"+panel.name+"^LN", "", "", collected, "", "", "", "", "", "", "", "", doc,
			"", "", "", "", "", ts(g.clock), "", "LAB", "F"),
	}
	for i, t := range panel.tests {
		// Clamped to 2.5 standard deviations: flagged but plausible values.
		v := t.mean + math.Max(-2.5, math.Min(2.5, g.rng.NormFloat64()))*t.sd
		value := strconv.FormatFloat(v, 'f', t.decimals, 64)
		lo, _ := strconv.ParseFloat(t.lo, 64)
		hi, _ := strconv.ParseFloat(t.hi, 64)
		flag := "N"
		if r, _ := strconv.ParseFloat(value, 64); r < lo {
			flag = "L"
		} else if r > hi {
			flag = "H"
		}
		lines = append(lines, join("OBX", strconv.Itoa(i+1), "NM", t.loinc+"^"+t.name+"^LN", "", value, t.units+"^"+t.units+"^UCUM",
			t.lo+"-"+t.hi, flag, "", "", "F", "", "", collected))
	}
	if g.rng.IntN(4) == 0 {
		lines = append(lines, join("NTE", "1", "L", Escape("Specimen received hemolyzed & re-drawn; results verified.", DefaultDelimiters())))
	}
	return lines
}

func familyNames() []string {
	return []string{"SMITH", "JOHNSON", "WILLIAMS", "BROWN", "JONES", "GARCIA", "MILLER", "DAVIS", "RODRIGUEZ", "MARTINEZ",
		"HERNANDEZ", "LOPEZ", "GONZALEZ", "WILSON", "ANDERSON", "THOMAS", "TAYLOR", "MOORE", "JACKSON", "MARTIN",
		"LEE", "PEREZ", "THOMPSON", "WHITE", "HARRIS", "SANCHEZ", "CLARK", "RAMIREZ", "LEWIS", "ROBINSON",
		"O'BRIEN", "NGUYEN", "KIM", "PATEL", "MÜLLER", "KOWALSKI", "SILVA", "COHEN", "MURPHY", "VAN DER BERG"}
}

func femaleNames() []string {
	return []string{"MARY", "PATRICIA", "JENNIFER", "LINDA", "ELIZABETH", "BARBARA", "SUSAN", "JESSICA", "SARAH", "KAREN",
		"NANCY", "LISA", "MARGARET", "SANDRA", "ASHLEY", "EMILY", "MICHELLE", "AMANDA", "MELISSA", "ZOË"}
}

func maleNames() []string {
	return []string{"JAMES", "ROBERT", "JOHN", "MICHAEL", "DAVID", "WILLIAM", "RICHARD", "JOSEPH", "THOMAS", "CHARLES",
		"CHRISTOPHER", "DANIEL", "MATTHEW", "ANTHONY", "MARK", "DONALD", "STEVEN", "PAUL", "ANDREW", "JOSÉ"}
}

func streets() []string {
	return []string{"MAIN ST", "OAK AVE", "MAPLE DR", "CEDAR LN", "ELM ST", "PARK BLVD", "LAKE RD", "HILL ST",
		"SMITH & SONS RD", "WASHINGTON AVE", "2ND ST", "RIVERSIDE DR"}
}

// cities are city, state, the first three digits of a ZIP and an area code.
func cities() [][4]string {
	return [][4]string{{"SPRINGFIELD", "IL", "627", "217"}, {"MADISON", "WI", "537", "608"}, {"COLUMBUS", "OH", "432", "614"},
		{"AUSTIN", "TX", "787", "512"}, {"PORTLAND", "OR", "972", "503"}, {"RALEIGH", "NC", "276", "919"},
		{"DENVER", "CO", "802", "303"}, {"BOSTON", "MA", "021", "617"}}
}

func doctors() []string {
	return []string{"1234567^HOUSE^GREGORY^^^DR^MD", "2345678^GREY^MEREDITH^^^DR^MD", "3456789^QUINN^MICHAELA^^^DR^MD",
		"4567890^SHEPHERD^DEREK^^^DR^MD", "5678901^KILDARE^JAMES^^^DR^MD", "6789012^WATSON^JOAN^^^DR^MD"}
}
