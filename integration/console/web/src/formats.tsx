// Views of a payload or an output by its format: JSON pretty-printed, CSV
// as a table (HL7 has its own parsed view and diff).

/** The text pretty-printed when it is a JSON document, else undefined. */
export function prettyJSON(text: string): string | undefined {
  if (!/^\s*[[{]/.test(text)) return undefined;
  try {
    return JSON.stringify(JSON.parse(text), null, 2);
  } catch {
    return undefined;
  }
}

/** Parses CSV (RFC 4180 quoting); undefined when the text does not look like CSV. */
export function parseCSV(text: string): string[][] | undefined {
  if (!text.includes(",") || /^MSH./.test(text) || /^\s*[[{]/.test(text)) return undefined;
  const rows: string[][] = [];
  let row: string[] = [];
  let field = "";
  let quoted = false;
  for (let i = 0; i < text.length; i++) {
    const c = text[i];
    if (quoted) {
      if (c === '"' && text[i + 1] === '"') {
        field += '"';
        i++;
      } else if (c === '"') quoted = false;
      else field += c;
    } else if (c === '"' && field === "") quoted = true;
    else if (c === ",") {
      row.push(field);
      field = "";
    } else if (c === "\n" || c === "\r") {
      if (c === "\r" && text[i + 1] === "\n") i++;
      row.push(field);
      rows.push(row);
      row = [];
      field = "";
    } else field += c;
  }
  if (field !== "" || row.length) {
    row.push(field);
    rows.push(row);
  }
  if (rows.length === 0 || rows.every((r) => r.length < 2)) return undefined;
  return rows;
}

/** A CSV table, its first row as the header, at most 200 rows. */
export function CSVTable({ rows, label }: { rows: string[][]; label: string }) {
  const [head, ...body] = rows;
  return (
    <div class="scroll" tabIndex={0} role="region" aria-label={label}>
      <table class="data" data-testid="csv">
        <thead>
          <tr>{head.map((h, i) => <th key={i} scope="col">{h}</th>)}</tr>
        </thead>
        <tbody>
          {body.slice(0, 200).map((r, i) => (
            <tr key={i}>{r.map((v, j) => <td key={j} class="mono wrap">{v}</td>)}</tr>
          ))}
        </tbody>
      </table>
      {body.length > 200 && <p class="muted">The first 200 of {body.length} rows.</p>}
    </div>
  );
}
