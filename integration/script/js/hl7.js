// HL7 v2 for interface code: hl7.parse, hl7.create and the Message and
// Segment objects. The message stays text: a segment is split into fields
// only when it is read, and a field into repetitions, components and
// subcomponents only for the path asked for, so a transform that reads ten
// fields of a fifty-segment message does not pay for the other forty-nine.
// An unchanged segment is written back from its original text, which is how
// an unchanged CR-terminated message comes back byte-identical.
//
// Paths are "SEG[n]-field[rep].component.subcomponent", every number
// 1-based, the same grammar as the engine's Go parser (integration/hl7).
// get() decodes escape sequences; set() encodes its value as one literal
// value (arrays give structure); raw() and setRaw() read and write HL7 text
// as it stands in the message.
const hl7 = (function () {
  "use strict";

  const PATH = /^(?:([A-Za-z0-9]{3})(?:\[(\d+)\])?-)?(\d+)(?:\[(\d+)\])?(?:\.(\d+))?(?:\.(\d+))?$/;
  const NAME = /^[A-Za-z0-9]{3}$/;
  const paths = new Map();

  function fail(what) {
    throw new Error("hl7: " + what);
  }

  // parsePath turns "PID[2]-3[1].4.2" into numbers, caching the answer: a
  // transform uses the same few paths for every message.
  function parsePath(path, op, owner) {
    let p = paths.get(path);
    if (p === undefined) {
      const where = owner === undefined ? op : owner + "." + op;
      if (typeof path !== "string") fail(where + ": a path must be a string such as \"PID-3.1\", got " + typeof path);
      const m = PATH.exec(path);
      if (m === null) fail(where + ": bad path \"" + path + "\" (expected SEG[n]-field[rep].component.subcomponent, such as \"PID-3[2].1\")");
      p = {
        seg: m[1] === undefined ? null : m[1].toUpperCase(),
        segIndex: m[2] === undefined ? 0 : +m[2],
        field: +m[3],
        rep: m[4] === undefined ? 0 : +m[4],
        comp: m[5] === undefined ? 0 : +m[5],
        sub: m[6] === undefined ? 0 : +m[6],
      };
      if (p.segIndex === 0 && m[2] !== undefined || p.field === 0 || p.rep === 0 && m[4] !== undefined ||
          p.comp === 0 && m[5] !== undefined || p.sub === 0 && m[6] !== undefined) {
        fail(where + ": bad path \"" + path + "\": positions start at 1");
      }
      if (paths.size > 10000) paths.clear();
      paths.set(path, p);
    }
    return p;
  }

  const { delimitersOf, DEFAULT, escape, unescape } = hl7codec;

  function pick(text, sep, n) {
    // the n-th (1-based) piece of text split by sep, without splitting all
    let start = 0;
    for (let i = 1; i < n; i++) {
      const at = text.indexOf(sep, start);
      if (at < 0) return "";
      start = at + 1;
    }
    const end = text.indexOf(sep, start);
    return end < 0 ? text.slice(start) : text.slice(start, end);
  }

  function replace(text, sep, n, value) {
    // text with its n-th piece (split by sep) replaced, padding with empty pieces
    const parts = text === "" ? [""] : text.split(sep);
    while (parts.length < n) parts.push("");
    parts[n - 1] = value;
    if (value === "") while (parts.length > 1 && parts[parts.length - 1] === "") parts.pop();
    return parts.join(sep);
  }

  function encodeValue(value, d, level, where) {
    // level: 0 field/repetition, 1 component, 2 subcomponent
    if (value === null || value === undefined) return "";
    if (Array.isArray(value)) {
      if (level === 0) return value.map((v) => encodeValue(v, d, 1, where)).join(d.component);
      if (level === 1) return value.map((v) => encodeValue(v, d, 2, where)).join(d.subcomponent);
      fail(where + ": a subcomponent is one value, not an array");
    }
    if (value instanceof Message || value instanceof Segment) fail(where + ": a value must be a string, number or array, not a " + value.constructor.name);
    return escape(value, d);
  }

  function checkRaw(text, d, level, whole, where) {
    if (typeof text !== "string") fail(where + ": raw text must be a string");
    if (/[\r\n]/.test(text)) fail(where + ": raw text cannot contain a segment end (CR or LF)");
    if (text.indexOf(d.field) >= 0) fail(where + ": raw text cannot contain the field separator \"" + d.field + "\"");
    if (!whole && text.indexOf(d.repetition) >= 0) fail(where + ": raw text for one repetition cannot contain the repetition separator \"" + d.repetition + "\"");
    if (level >= 1 && text.indexOf(d.component) >= 0) fail(where + ": raw text for a component cannot contain the component separator \"" + d.component + "\"");
    if (level >= 2 && text.indexOf(d.subcomponent) >= 0) fail(where + ": raw text for a subcomponent cannot contain the subcomponent separator \"" + d.subcomponent + "\"");
    return text;
  }

  class Segment {
    constructor(text, d) {
      this._raw = text;
      this._d = d;
      this._f = null; // fields split on the first write: [name, field 1 or MSH-2, ...]
      this._o = null; // until then, where each field separator is (reads slice the text)
      this.name = text.slice(0, 3).toUpperCase();
    }

    _fields() {
      if (this._f === null) this._f = this._raw.split(this._d.field);
      return this._f;
    }

    _offsets() {
      if (this._o === null) {
        const o = [];
        const raw = this._raw, fs = this._d.field;
        for (let at = raw.indexOf(fs); at >= 0; at = raw.indexOf(fs, at + 1)) o.push(at);
        this._o = o;
      }
      return this._o;
    }

    // index of field n in _fields(): MSH-1 is the separator itself, so MSH
    // fields sit one place lower than other segments' fields.
    _at(n) {
      return this.name === "MSH" ? n - 1 : n;
    }

    _path(path, op) {
      const p = parsePath(typeof path === "number" ? String(path) : path, op, this.name);
      if (p.seg !== null && p.seg !== this.name) fail(this.name + "." + op + ": path \"" + path + "\" names " + p.seg + " but this segment is " + this.name);
      if (p.segIndex !== 0) fail(this.name + "." + op + ": a segment's path cannot pick a segment occurrence (\"" + path + "\")");
      return p;
    }

    _fieldRaw(n) {
      if (this.name === "MSH" && n === 1) return this._d.field;
      const i = this._at(n);
      if (this._f !== null) return i < this._f.length ? this._f[i] : "";
      const o = this._offsets();
      if (i > o.length) return "";
      return i === o.length ? this._raw.slice(o[i - 1] + 1) : this._raw.slice(o[i - 1] + 1, o[i]);
    }

    _locked(p) {
      return this.name === "MSH" && p.field <= 2;
    }

    _read(p) {
      let t = this._fieldRaw(p.field);
      if (t === "" || this._locked(p)) return t;
      const d = this._d;
      if (t.indexOf(d.repetition) >= 0) t = pick(t, d.repetition, p.rep || 1);
      else if (p.rep > 1) return "";
      if (p.comp) {
        t = pick(t, d.component, p.comp);
        if (p.sub) t = pick(t, d.subcomponent, p.sub);
      }
      return t;
    }

    _write(p, text, wholeField) {
      if (this._locked(p)) fail("set: MSH-1 and MSH-2 hold the message's delimiters and cannot be changed");
      const d = this._d;
      const f = this._fields();
      const i = this._at(p.field);
      if (text === "" && i >= f.length) return;
      while (f.length <= i) f.push("");
      let field = f[i];
      if (wholeField) {
        field = text;
      } else {
        const r = p.rep || 1;
        let rep = pick(field, d.repetition, r);
        if (p.comp) {
          let comp = pick(rep, d.component, p.comp);
          comp = p.sub ? replace(comp, d.subcomponent, p.sub, text) : text;
          rep = replace(rep, d.component, p.comp, comp);
        } else {
          rep = text;
        }
        field = replace(field, d.repetition, r, rep);
      }
      f[i] = field;
      this._raw = null;
    }

    /** get returns the value at path ("5.1", "5[2].1", "OBX-5.1"), decoded; "" when absent. */
    get(path) {
      return unescape(this._read(this._path(path, "get")), this._d);
    }

    /** raw returns the HL7 text at path as it stands (a field path without [rep] gives every repetition). */
    raw(path) {
      const p = this._path(path, "raw");
      if (!p.comp && !p.rep) return this._fieldRaw(p.field);
      return this._read(p);
    }

    /** getAll returns the value at path for every repetition of the field. */
    getAll(path) {
      const p = this._path(path, "getAll");
      if (p.rep) fail(this.name + ".getAll: \"" + path + "\" picks a repetition; leave [n] out");
      const n = this._count(p);
      const out = [];
      for (let r = 1; r <= n; r++) out.push(unescape(this._read({ field: p.field, rep: r, comp: p.comp, sub: p.sub }), this._d));
      return out;
    }

    /** set writes value at path: a string or number is one literal value (escaped); an array gives components (or subcomponents). */
    set(path, value) {
      const p = this._path(path, "set");
      const where = this.name + ".set";
      this._write(p, encodeValue(value, this._d, p.sub ? 2 : p.comp ? 1 : 0, where), false);
      return this;
    }

    /** setRaw writes HL7 text at path as it is (a field path without [rep] replaces every repetition). */
    setRaw(path, text) {
      const p = this._path(path, "setRaw");
      const where = this.name + ".setRaw";
      const whole = !p.comp && !p.rep;
      this._write(p, checkRaw(text, this._d, p.sub ? 2 : p.comp ? 1 : 0, whole, where), whole);
      return this;
    }

    _count(p) {
      const t = this._fieldRaw(p.field);
      if (t === "") return 0;
      if (this._locked(p)) return 1;
      return t.split(this._d.repetition).length;
    }

    /** count returns the number of repetitions of a field ("3" or "PID-3"). */
    count(path) {
      return this._count(this._path(path, "count"));
    }

    /** fields is the number of the last field present. */
    get fields() {
      const n = this._f !== null ? this._f.length - 1 : this._offsets().length;
      return this.name === "MSH" ? n + 1 : n;
    }

    toString() {
      if (this._raw === null) this._raw = this._f.join(this._d.field);
      return this._raw;
    }

    toJSON() {
      return this.toString();
    }
  }

  function fieldsText(name, fields, d, where) {
    if (fields === undefined || fields === null) return name;
    if (!Array.isArray(fields)) fail(where + ": fields must be an array (field 1 first)");
    let text = name;
    for (const v of fields) text += d.field + encodeValue(v, d, 0, where);
    return text;
  }

  function reencode(seg, d) {
    // a segment from a message with other delimiters, rewritten in d's
    const s = seg._d;
    if (s === d || (s.field === d.field && s.component === d.component && s.repetition === d.repetition &&
        s.escape === d.escape && s.subcomponent === d.subcomponent && s.truncation === d.truncation)) {
      return seg.toString();
    }
    if (seg.name === "MSH") fail("add: an MSH segment cannot be copied into another message");
    const fields = seg.toString().split(s.field);
    return fields.map((f, i) => i === 0 ? f : f.split(s.repetition).map((r) =>
      r.split(s.component).map((c) => c.split(s.subcomponent).map((x) => escape(unescape(x, s), d)).join(d.subcomponent))
        .join(d.component)).join(d.repetition)).join(d.field);
  }

  class Message {
    constructor(segments, d, trailing) {
      this._s = segments;
      this._d = d;
      this._trailing = trailing;
    }

    /** delimiters are the message's separators, from MSH-1 and MSH-2. */
    get delimiters() {
      return this._d;
    }

    _find(p, where, create) {
      if (p.seg === null) fail(where + ": a message path must start with a segment name, such as \"PID-3\"");
      const want = p.segIndex || 1;
      let seen = 0;
      for (const s of this._s) {
        if (s.name === p.seg && ++seen === want) return s;
      }
      if (!create) return null;
      if (seen + 1 < want) fail(where + ": there are " + seen + " " + p.seg + " segments, so " + p.seg + "[" + want + "] cannot be created");
      if (p.seg === "MSH") fail(where + ": a message has one MSH segment");
      const s = new Segment(p.seg, this._d);
      this._s.push(s);
      return s;
    }

    /** get returns the value at path ("PID-3.1", "OBX[2]-5", "PID-3[2].1"), decoded; "" when absent. */
    get(path) {
      const p = parsePath(path, "get");
      const s = this._find(p, "get", false);
      return s === null ? "" : unescape(s._read(p), this._d);
    }

    /** raw returns the HL7 text at path as it stands (a field path without [rep] gives every repetition). */
    raw(path) {
      const p = parsePath(path, "raw");
      const s = this._find(p, "raw", false);
      if (s === null) return "";
      if (!p.comp && !p.rep) return s._fieldRaw(p.field);
      return s._read(p);
    }

    /** getAll returns the value at path for every repetition of the field. */
    getAll(path) {
      const p = parsePath(path, "getAll");
      const s = this._find(p, "getAll", false);
      if (s === null) return [];
      return s.getAll(p.field + (p.comp ? "." + p.comp : "") + (p.sub ? "." + p.sub : ""));
    }

    /** set writes value at path, adding the segment at the end if the message has none. */
    set(path, value) {
      const p = parsePath(path, "set");
      const encoded = encodeValue(value, this._d, p.sub ? 2 : p.comp ? 1 : 0, "set");
      const s = this._find(p, "set", encoded !== "");
      if (s !== null) s._write(p, encoded, false);
      return this;
    }

    /** setRaw writes HL7 text at path as it is. */
    setRaw(path, text) {
      const p = parsePath(path, "setRaw");
      const whole = !p.comp && !p.rep;
      checkRaw(text, this._d, p.sub ? 2 : p.comp ? 1 : 0, whole, "setRaw");
      const s = this._find(p, "setRaw", text !== "");
      if (s !== null) s._write(p, text, whole);
      return this;
    }

    /** count("OBX") is the number of OBX segments; count("PID-3") the repetitions of PID-3. */
    count(what) {
      if (typeof what === "string" && NAME.test(what)) {
        const name = what.toUpperCase();
        let n = 0;
        for (const s of this._s) if (s.name === name) n++;
        return n;
      }
      const p = parsePath(what, "count");
      const s = this._find(p, "count", false);
      return s === null ? 0 : s._count(p);
    }

    /** segment returns the n-th (1-based, default 1) segment named name, or null. */
    segment(name, n) {
      const want = n === undefined ? 1 : n;
      if (!Number.isInteger(want) || want < 1) fail("segment: the occurrence must be a whole number from 1, got " + n);
      const up = String(name).toUpperCase();
      let seen = 0;
      for (const s of this._s) if (s.name === up && ++seen === want) return s;
      return null;
    }

    /** segments returns the segments named name, or all segments. */
    segments(name) {
      if (name === undefined) return this._s.slice();
      const up = String(name).toUpperCase();
      return this._s.filter((s) => s.name === up);
    }

    _make(what, fields, where) {
      if (what instanceof Segment) {
        if (fields !== undefined) fail(where + ": fields cannot be given with a segment to copy");
        return new Segment(reencode(what, this._d), this._d);
      }
      if (typeof what !== "string" || !NAME.test(what)) fail(where + ": a segment name has three letters or digits, such as \"ZPI\" (got " + JSON.stringify(what) + ")");
      const name = what.toUpperCase();
      if (name === "MSH") fail(where + ": a message has one MSH segment");
      return new Segment(fieldsText(name, fields, this._d, where), this._d);
    }

    _index(ref, where) {
      const i = this._s.indexOf(ref);
      if (i < 0) fail(where + ": the reference segment is not in this message");
      return i;
    }

    /** add appends a segment: add("ZPI", ["a", ["b", "c"]]) or add(otherSegment) (a copy). */
    add(what, fields) {
      const s = this._make(what, fields, "add");
      this._s.push(s);
      return s;
    }

    /** insertAfter adds a segment right after ref. */
    insertAfter(ref, what, fields) {
      const i = this._index(ref, "insertAfter");
      const s = this._make(what, fields, "insertAfter");
      this._s.splice(i + 1, 0, s);
      return s;
    }

    /** insertBefore adds a segment right before ref (never before MSH). */
    insertBefore(ref, what, fields) {
      const i = this._index(ref, "insertBefore");
      if (i === 0) fail("insertBefore: nothing goes before MSH");
      const s = this._make(what, fields, "insertBefore");
      this._s.splice(i, 0, s);
      return s;
    }

    /** remove takes seg out of the message; it returns whether it was there. */
    remove(seg) {
      const i = this._s.indexOf(seg);
      if (i < 0) return false;
      if (i === 0) fail("remove: the MSH segment cannot be removed");
      this._s.splice(i, 1);
      return true;
    }

    /** removeAll takes out every segment named name and returns how many. */
    removeAll(name) {
      const up = String(name).toUpperCase();
      if (up === "MSH") fail("removeAll: the MSH segment cannot be removed");
      const before = this._s.length;
      this._s = this._s.filter((s) => s.name !== up);
      return before - this._s.length;
    }

    /** type is the message type and trigger event, "ADT^A01". */
    get type() {
      const t = this.get("MSH-9.1");
      const e = this.get("MSH-9.2");
      return e === "" ? t : t + this._d.component + e;
    }

    get controlId() {
      return this.get("MSH-10");
    }

    get version() {
      return this.get("MSH-12.1");
    }

    /** copy returns an independent copy of the message. */
    copy() {
      return parse(this.toString());
    }

    /** toString writes the message with segments ended by CR (or eol). */
    toString(eol) {
      const end = eol === undefined ? "\r" : String(eol);
      let out = "";
      for (let i = 0; i < this._s.length; i++) {
        if (i > 0) out += end;
        out += this._s[i].toString();
      }
      return this._trailing ? out + end : out;
    }

    toJSON() {
      return this.toString();
    }
  }

  /** parse reads an HL7 v2 message; CR, LF and CRLF segment ends are accepted. */
  function parse(text) {
    if (typeof text !== "string") fail("parse: a message must be a string, got " + typeof text);
    if (text.charCodeAt(0) === 0xfeff) text = text.slice(1);
    const d = delimitersOf(text);
    const lines = text.indexOf("\n") < 0 ? text.split("\r") : text.split(/\r\n|\r|\n/);
    const segments = [];
    let trailing = false;
    for (let i = 0; i < lines.length; i++) {
      const line = lines[i];
      if (line === "") {
        trailing = true;
        continue;
      }
      trailing = false;
      if (line.length < 3 || !NAME.test(line.slice(0, 3)) || (line.length > 3 && line[3] !== d.field)) {
        fail("parse: segment " + (segments.length + 1) + " (\"" + line.slice(0, 20) + "\") does not start with a three-character name and the field separator");
      }
      if (segments.length > 0 && line.slice(0, 3) === "MSH") fail("parse: segment " + (segments.length + 1) + " is a second MSH; a message has one (split batches first)");
      segments.push(new Segment(line, d));
    }
    return new Message(segments, d, trailing);
  }

  let sequence = 0;

  function stamp(t) {
    const p = (n, w) => String(n).padStart(w, "0");
    return p(t.getFullYear(), 4) + p(t.getMonth() + 1, 2) + p(t.getDate(), 2) + p(t.getHours(), 2) + p(t.getMinutes(), 2) + p(t.getSeconds(), 2);
  }

  /** create starts a new message: create("ADT^A01", {sendingApplication, ..., version}). */
  function create(type, options) {
    const o = options || {};
    if (typeof type !== "string" || !/^[A-Za-z0-9]{3}(\^[A-Za-z0-9]{1,3}(\^[A-Za-z0-9_]{1,7})?)?$/.test(type)) {
      fail("create: the message type must look like \"ADT^A01\" (got " + JSON.stringify(type) + ")");
    }
    const when = o.timestamp instanceof Date ? o.timestamp : new Date();
    sequence = (sequence + 1) % 1679616;
    const id = o.controlId !== undefined ? String(o.controlId)
      : when.getTime().toString(36).toUpperCase() + sequence.toString(36).toUpperCase().padStart(4, "0") +
        Math.floor(Math.random() * 1296).toString(36).toUpperCase().padStart(2, "0");
    const e = (v) => v === undefined ? "" : escape(v, DEFAULT);
    const text = ["MSH", "^~\\&", e(o.sendingApplication), e(o.sendingFacility), e(o.receivingApplication),
      e(o.receivingFacility), stamp(when), "", type, escape(id, DEFAULT), e(o.processingId === undefined ? "P" : o.processingId),
      e(o.version === undefined ? "2.5.1" : o.version)].join("|");
    return parse(text + "\r");
  }

  return Object.freeze({
    parse, create, escape, unescape, Message, Segment,
    isMessage: (v) => v instanceof Message,
  });
})();
