// CSV for interface code (RFC 4180: commas, double quotes, "" inside quotes,
// CRLF or LF line ends). A csv payload is a header line and its record(s),
// which is how the file source hands a row over; the transform gets the
// record as an object keyed by the header (an array of them if the payload
// holds several rows).
const csv = (function () {
  "use strict";

  function fail(what) {
    throw new Error("csv: " + what);
  }

  function rows(text) {
    if (text.charCodeAt(0) === 0xfeff) text = text.slice(1);
    const out = [];
    let row = [];
    let i = 0;
    const n = text.length;
    let line = 1;
    while (i <= n) {
      let value = "";
      if (text[i] === "\"") {
        const start = line;
        i++;
        for (;;) {
          if (i >= n) fail("line " + start + ": a quoted value is not closed");
          const c = text[i];
          if (c === "\"") {
            if (text[i + 1] === "\"") {
              value += "\"";
              i += 2;
              continue;
            }
            i++;
            break;
          }
          if (c === "\n") line++;
          value += c;
          i++;
        }
        if (i < n && text[i] !== "," && text[i] !== "\r" && text[i] !== "\n") fail("line " + line + ": unexpected text after a closing quote");
      } else {
        let j = i;
        while (j < n && text[j] !== "," && text[j] !== "\r" && text[j] !== "\n") j++;
        value = text.slice(i, j);
        if (value.indexOf("\"") >= 0) fail("line " + line + ": a quote inside an unquoted value (quote the whole value)");
        i = j;
      }
      row.push(value);
      if (i >= n) {
        out.push(row);
        break;
      }
      const c = text[i];
      if (c === ",") {
        i++;
        continue;
      }
      // end of line
      i += c === "\r" && text[i + 1] === "\n" ? 2 : 1;
      line++;
      out.push(row);
      row = [];
      if (i >= n) break;
    }
    // a blank line is no record
    return out.filter((r) => !(r.length === 1 && r[0] === ""));
  }

  /** decode turns a header and its rows into a record object (or an array of them). */
  function decode(text) {
    const all = rows(text);
    if (all.length === 0) fail("the payload is empty (a header line is expected)");
    const header = all[0];
    const seen = new Set();
    for (const h of header) {
      if (h === "") fail("the header has an empty column name");
      if (seen.has(h)) fail("the header names column \"" + h + "\" twice");
      seen.add(h);
    }
    const records = [];
    for (let r = 1; r < all.length; r++) {
      const values = all[r];
      if (values.length > header.length) fail("row " + r + " has " + values.length + " values but the header has " + header.length + " columns");
      const rec = {};
      for (let k = 0; k < header.length; k++) rec[header[k]] = k < values.length ? values[k] : "";
      records.push(rec);
    }
    return records.length === 1 ? records[0] : records;
  }

  function quote(v) {
    let s;
    if (v === null || v === undefined) s = "";
    else if (v instanceof Date) s = v.toISOString();
    else if (typeof v === "object") fail("a value must be a string, number or date, not an object (column values are flat)");
    else s = String(v);
    if (/[",\r\n]/.test(s) || /^\s|\s$/.test(s)) return "\"" + s.replace(/"/g, "\"\"") + "\"";
    return s;
  }

  /** encode writes a header line from the first record's keys and one line per record. */
  function encode(value) {
    const records = Array.isArray(value) ? value : [value];
    if (records.length === 0) fail("there is no record to write");
    for (const r of records) {
      if (r === null || typeof r !== "object" || Array.isArray(r)) fail("a record must be an object keyed by column");
    }
    const header = Object.keys(records[0]);
    if (header.length === 0) fail("the record has no columns");
    let out = header.map(quote).join(",") + "\r\n";
    for (const r of records) out += header.map((h) => quote(r[h])).join(",") + "\r\n";
    return out;
  }

  return Object.freeze({ decode, encode, rows });
})();
