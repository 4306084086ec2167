// The names of the HL7 v2 fields an analyst looks at most, for the parsed
// view (PID-5 Patient Name). Not every field: one the table lacks shows
// its position only.
const names: Record<string, string> = {
  "MSH-1": "Field Separator", "MSH-2": "Encoding Characters", "MSH-3": "Sending Application",
  "MSH-4": "Sending Facility", "MSH-5": "Receiving Application", "MSH-6": "Receiving Facility",
  "MSH-7": "Date/Time of Message", "MSH-8": "Security", "MSH-9": "Message Type",
  "MSH-10": "Message Control ID", "MSH-11": "Processing ID", "MSH-12": "Version ID",
  "MSH-15": "Accept Acknowledgment Type", "MSH-16": "Application Acknowledgment Type",
  "MSH-18": "Character Set",
  "EVN-1": "Event Type Code", "EVN-2": "Recorded Date/Time", "EVN-5": "Operator ID",
  "PID-1": "Set ID", "PID-2": "Patient ID (external)", "PID-3": "Patient Identifier List",
  "PID-4": "Alternate Patient ID", "PID-5": "Patient Name", "PID-6": "Mother's Maiden Name",
  "PID-7": "Date/Time of Birth", "PID-8": "Administrative Sex", "PID-10": "Race",
  "PID-11": "Patient Address", "PID-13": "Phone Number - Home", "PID-14": "Phone Number - Business",
  "PID-18": "Patient Account Number", "PID-19": "SSN Number",
  "PV1-1": "Set ID", "PV1-2": "Patient Class", "PV1-3": "Assigned Patient Location",
  "PV1-4": "Admission Type", "PV1-7": "Attending Doctor", "PV1-8": "Referring Doctor",
  "PV1-10": "Hospital Service", "PV1-19": "Visit Number", "PV1-44": "Admit Date/Time",
  "PV1-45": "Discharge Date/Time",
  "ORC-1": "Order Control", "ORC-2": "Placer Order Number", "ORC-3": "Filler Order Number",
  "OBR-1": "Set ID", "OBR-2": "Placer Order Number", "OBR-3": "Filler Order Number",
  "OBR-4": "Universal Service Identifier", "OBR-7": "Observation Date/Time",
  "OBR-22": "Results Rpt/Status Chng Date/Time", "OBR-25": "Result Status",
  "OBX-1": "Set ID", "OBX-2": "Value Type", "OBX-3": "Observation Identifier", "OBX-4": "Observation Sub-ID",
  "OBX-5": "Observation Value", "OBX-6": "Units", "OBX-7": "References Range",
  "OBX-8": "Abnormal Flags", "OBX-11": "Observation Result Status", "OBX-14": "Date/Time of the Observation",
  "NK1-1": "Set ID", "NK1-2": "Name", "NK1-3": "Relationship",
  "AL1-1": "Set ID", "AL1-2": "Allergen Type Code", "AL1-3": "Allergen Code",
  "DG1-1": "Set ID", "DG1-3": "Diagnosis Code", "DG1-4": "Diagnosis Description",
  "MSA-1": "Acknowledgment Code", "MSA-2": "Message Control ID", "MSA-3": "Text Message",
  "NTE-1": "Set ID", "NTE-3": "Comment",
};

/** The field's name ("" when the table does not have it). */
export function fieldName(position: string): string {
  const base = position.match(/^([A-Z0-9]{3}-\d+)/);
  return (base && names[base[1]]) || "";
}

export interface ParsedField {
  key: string; // unique: the segment's occurrence and the field (PID#1-5)
  position: string; // PID-5
  value: string;
}

/** Splits HL7 v2 text into fields, for the input/output diff (empty fields left out). */
export function parseHL7(text: string): ParsedField[] {
  const out: ParsedField[] = [];
  const seen: Record<string, number> = {};
  for (const line of text.split(/\r\n|\r|\n/)) {
    if (line.length < 3) continue;
    const name = line.slice(0, 3);
    const n = (seen[name] = (seen[name] ?? 0) + 1);
    const parts = line.split(line[3] || "|");
    const push = (i: number, value: string) => {
      if (value !== "") out.push({ key: `${name}#${n}-${i}`, position: `${name}-${i}`, value });
    };
    if (name === "MSH") {
      push(1, line[3] ?? "|");
      for (let i = 1; i < parts.length; i++) push(i + 1, parts[i]);
    } else {
      for (let i = 1; i < parts.length; i++) push(i, parts[i]);
    }
  }
  return out;
}

export interface DiffRow {
  position: string;
  input?: string;
  output?: string;
  change: "same" | "changed" | "added" | "removed";
}

/** The field-level diff of two HL7 messages, in the input's order, then the output's new fields. */
export function diffHL7(input: string, output: string): DiffRow[] {
  const a = parseHL7(input);
  const b = parseHL7(output);
  const bm = new Map(b.map((f) => [f.key, f]));
  const am = new Set(a.map((f) => f.key));
  const rows: DiffRow[] = a.map((f) => {
    const o = bm.get(f.key);
    if (!o) return { position: f.position, input: f.value, change: "removed" };
    return { position: f.position, input: f.value, output: o.value, change: o.value === f.value ? "same" : "changed" };
  });
  for (const f of b) if (!am.has(f.key)) rows.push({ position: f.position, output: f.value, change: "added" });
  return rows;
}

/** Whether text looks like an HL7 v2 message. */
export function isHL7(text: string): boolean {
  return /^MSH./.test(text);
}
