// HL7 v2 delimiters and escape sequences, for js/hl7.js: the delimiters a
// message declares in MSH-1 and MSH-2, and the escape sequences that let a
// value hold characters that would otherwise read as delimiters.
const hl7codec = (function () {
  "use strict";

  function fail(what) {
    throw new Error("hl7: " + what);
  }

  // Delimiters come from MSH-1 and MSH-2 of each message.
  function delimitersOf(text) {
    if (text.length < 8 || text.slice(0, 3) !== "MSH") fail("parse: a message must start with an MSH segment (got \"" + text.slice(0, 20).replace(/[\r\n]/g, "\\r") + "\")");
    const fs = text[3];
    if (/[A-Za-z0-9\r\n ]/.test(fs)) fail("parse: MSH-1 (the field separator) must be a punctuation character, got \"" + fs + "\"");
    let end = text.indexOf(fs, 4);
    const seg = text.search(/[\r\n]/);
    if (end < 0 || (seg >= 0 && seg < end)) end = seg < 0 ? text.length : seg;
    const enc = text.slice(4, end);
    if (enc.length < 4 || enc.length > 5) fail("parse: MSH-2 (the encoding characters) must have 4 or 5 characters, got \"" + enc + "\"");
    const all = fs + enc;
    for (let i = 0; i < all.length; i++) {
      if (all.indexOf(all[i]) !== i) fail("parse: the delimiters \"" + all + "\" repeat a character");
      if (/[A-Za-z0-9\r\n ]/.test(all[i])) fail("parse: delimiter \"" + all[i] + "\" in MSH-2 must be a punctuation character");
    }
    return Object.freeze({
      field: fs, component: enc[0], repetition: enc[1], escape: enc[2], subcomponent: enc[3],
      truncation: enc.length > 4 ? enc[4] : "",
    });
  }

  const DEFAULT = Object.freeze({ field: "|", component: "^", repetition: "~", escape: "\\", subcomponent: "&", truncation: "" });

  function hexText(hex) {
    if (hex.length % 2 !== 0 || !/^[0-9A-Fa-f]*$/.test(hex)) return null;
    const bytes = [];
    for (let i = 0; i < hex.length; i += 2) bytes.push(parseInt(hex.substr(i, 2), 16));
    try {
      return decodeUTF8(bytes);
    } catch (e) {
      return String.fromCharCode.apply(null, bytes); // Latin-1
    }
  }

  function decodeUTF8(bytes) {
    let out = "";
    for (let i = 0; i < bytes.length;) {
      const b = bytes[i];
      let n, cp;
      if (b < 0x80) { n = 0; cp = b; } else if (b >= 0xc2 && b < 0xe0) { n = 1; cp = b & 0x1f; } else if (b >= 0xe0 && b < 0xf0) { n = 2; cp = b & 0x0f; } else if (b >= 0xf0 && b < 0xf5) { n = 3; cp = b & 0x07; } else throw new Error("not utf-8");
      for (let k = 1; k <= n; k++) {
        const c = bytes[i + k];
        if (c === undefined || (c & 0xc0) !== 0x80) throw new Error("not utf-8");
        cp = (cp << 6) | (c & 0x3f);
      }
      out += String.fromCodePoint(cp);
      i += n + 1;
    }
    return out;
  }

  // unescape decodes \F\ \S\ \T\ \R\ \E\ (and \P\ for the truncation
  // character) and \Xhh..\; other sequences (\H\ \N\ \.br\ \Zxx\ ...) are
  // formatting or site-defined and are kept as they are.
  function unescape(text, d) {
    d = d || DEFAULT;
    const esc = d.escape;
    if (text.indexOf(esc) < 0) return text;
    let out = "";
    let i = 0;
    for (;;) {
      const a = text.indexOf(esc, i);
      if (a < 0) break;
      const b = text.indexOf(esc, a + 1);
      if (b < 0) break;
      const seq = text.slice(a + 1, b);
      let rep = null;
      switch (seq) {
        case "F": rep = d.field; break;
        case "S": rep = d.component; break;
        case "T": rep = d.subcomponent; break;
        case "R": rep = d.repetition; break;
        case "E": rep = d.escape; break;
        case "P": if (d.truncation !== "") rep = d.truncation; break;
        default: if (seq.length > 1 && (seq[0] === "X" || seq[0] === "x")) rep = hexText(seq.slice(1));
      }
      if (rep === null) {
        out += text.slice(i, b);
        i = b;
        continue;
      }
      out += text.slice(i, a) + rep;
      i = b + 1;
    }
    return out + text.slice(i);
  }

  // escape encodes a literal value so that none of its characters can be read
  // as a delimiter; segment ends inside a value become \X0D\ and \X0A\.
  function escape(value, d) {
    d = d || DEFAULT;
    const text = String(value);
    let out = "";
    for (let i = 0; i < text.length; i++) {
      const c = text[i];
      if (c === d.escape) out += d.escape + "E" + d.escape;
      else if (c === d.field) out += d.escape + "F" + d.escape;
      else if (c === d.component) out += d.escape + "S" + d.escape;
      else if (c === d.subcomponent) out += d.escape + "T" + d.escape;
      else if (c === d.repetition) out += d.escape + "R" + d.escape;
      else if (d.truncation !== "" && c === d.truncation) out += d.escape + "P" + d.escape;
      else if (c === "\r") out += d.escape + "X0D" + d.escape;
      else if (c === "\n") out += d.escape + "X0A" + d.escape;
      else out += c;
    }
    return out;
  }

  return Object.freeze({ delimitersOf, DEFAULT, escape, unescape });
})();
