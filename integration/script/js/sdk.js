// The interface SDK: what interface code sees besides its own files, and the
// entry points the Go host calls. It runs first in every interface context,
// inside the closure opened by the host's prelude, with the host's natives
// (log, mark, env, secret) in `native`; hl7 and csv are defined just above it.
//
// The host asks for one thing per message: invoke(), which decodes the
// payload, calls the interface's function and encodes the outcome as one
// string whose first character says what happened:
//   O<output>            the output, already serialised
//   F<reason>            filtered
//   Q<reason>\0<stack>   quarantined
//   T<reason>            transient: retry later
//   P                    a promise: call settle() once microtasks have run
//   E<name>              no such function
// Outcomes raised by quarantine(), transient() and filter() carry a mark
// under a symbol that only this closure holds, so no text a transform
// writes can pass for one.

const MARK = Symbol("ductus.outcome");
const jsonParse = JSON.parse;
const jsonStringify = JSON.stringify;
const freeze = Object.freeze;
const defineProperty = Object.defineProperty;
const SDK_ORIGIN = "ductus:";
const MAX_REASON = 4000;
const MAX_LOG = 16384;

// No shared memory, no threads to wait on, no WebAssembly: nothing a
// transform needs, and each is a way around the heap ceiling or the timeout.
delete globalThis.SharedArrayBuffer;
delete globalThis.Atomics;
delete globalThis.WebAssembly;

function text(reason, otherwise) {
  let s = reason === undefined || reason === null || reason === "" ? otherwise : String(reason);
  if (s.length > MAX_REASON) s = s.slice(0, MAX_REASON) + "…";
  return s;
}

class Outcome extends Error {
  constructor(kind, name, reason) {
    super(reason);
    this.name = name;
    this.reason = reason;
    defineProperty(this, MARK, { value: kind });
  }
}

/** quarantine stops the transform: the message is quarantined with reason. */
function quarantine(reason) {
  throw new Outcome("Q", "Quarantine", text(reason, "quarantined by the transform"));
}

/** transient stops the transform: the engine retries the message later, in order. */
function transient(reason) {
  throw new Outcome("T", "Transient", text(reason, "transient failure"));
}

/** filter stops the transform: the message is not sent to this destination. */
function filter(reason) {
  throw new Outcome("F", "Filter", text(reason, "filtered by the transform"));
}

function describe(v) {
  if (typeof v === "string") return v;
  if (v instanceof Error || (v !== null && typeof v === "object" && typeof v.stack === "string")) return v.stack || String(v);
  if (hl7.isMessage(v)) return v.toString();
  try {
    const s = jsonStringify(v);
    return s === undefined ? String(v) : s;
  } catch (e) {
    return String(v);
  }
}

function logger(level) {
  return function () {
    let line = "";
    for (let i = 0; i < arguments.length; i++) line += (i > 0 ? " " : "") + describe(arguments[i]);
    if (line.length > MAX_LOG) line = line.slice(0, MAX_LOG) + "…";
    native.log(level, line);
  };
}

// slog levels: debug -4, info 0, warn 4, error 8.
const console = freeze({
  debug: logger(-4), log: logger(0), info: logger(0), warn: logger(4), error: logger(8), trace: logger(-4),
});

function lookup(kind, fetch, cache, name, args) {
  if (typeof name !== "string" || name === "") throw new TypeError(kind + ": the name must be a non-empty string");
  let v = cache.get(name);
  if (v === undefined) {
    v = fetch(name);
    if (v !== undefined) cache.set(name, v);
  }
  if (v !== undefined) return v;
  if (kind === "env" && args.length > 1) return args[1];
  throw new Error(kind + ": " + name + " is not defined for this interface");
}

// Values are cached for the life of the context: the host rebuilds the
// context when the interface is reloaded, which is when they can change.
const envCache = new Map();
const secretCache = new Map();

/** env returns a configured variable; env(name, fallback) returns fallback when it is not set. */
function env(name) {
  return lookup("env", native.env, envCache, name, arguments);
}

/** secret returns a configured secret, and throws when it is not defined. */
function secret(name) {
  return lookup("secret", native.secret, secretCache, name, arguments);
}

// The interface's files. The entry file runs as a script in the context (so
// its top-level functions are globals); every other file is a CommonJS
// module run on its first require, which resolves only paths inside the
// interface folder.
const files = new Map();
const modules = new Map();
let mainModule = { exports: {} };
const builtins = new Map();

function dirname(path) {
  const i = path.lastIndexOf("/");
  return i < 0 ? "" : path.slice(0, i);
}

function resolve(from, spec) {
  if (typeof spec !== "string") throw new TypeError("require: the path must be a string such as \"./lib.js\"");
  if (!(spec.startsWith("./") || spec.startsWith("../"))) {
    throw new Error("require(\"" + spec + "\"): only the interface's own files can be required, by a relative path such as \"./lib.js\" (there are no packages, filesystem or network)");
  }
  const parts = dirname(from) === "" ? [] : dirname(from).split("/");
  for (const p of spec.split("/")) {
    if (p === "." || p === "") continue;
    if (p === "..") {
      if (parts.length === 0) throw new Error("require(\"" + spec + "\") from " + from + ": the path leaves the interface folder");
      parts.pop();
    } else {
      parts.push(p);
    }
  }
  const path = parts.join("/");
  for (const candidate of [path, path + ".js", path + ".json"]) if (files.has(candidate)) return candidate;
  throw new Error("require(\"" + spec + "\") from " + from + ": the interface has no file " + path);
}

function load(path) {
  const known = modules.get(path);
  if (known !== undefined) return known.exports;
  const file = files.get(path);
  const module = { exports: {}, id: path, filename: path, loaded: false };
  modules.set(path, module);
  try {
    if (file.kind === "json") module.exports = jsonParse(file.value);
    else file.value.call(module.exports, module.exports, requireFrom(path), module, path, dirname(path));
  } catch (e) {
    modules.delete(path);
    throw e;
  }
  module.loaded = true;
  return module.exports;
}

function requireFrom(from) {
  return function require(spec) {
    return load(resolve(from, spec));
  };
}

function define(path, kind, value) {
  files.set(path, { kind, value });
}

function start(main) {
  mainModule = { exports: {}, id: main, filename: main, loaded: false };
  files.set(main, { kind: "main", value: null });
  modules.set(main, mainModule);
  globalThis.module = mainModule;
  globalThis.exports = mainModule.exports;
  globalThis.require = requireFrom(main);
  for (const k of Object.getOwnPropertyNames(globalThis)) builtins.set(k, globalThis[k]);
}

const hasOwn = Object.prototype.hasOwnProperty;

// find resolves a function name: an own property of the entry file's
// module.exports, else a global the interface's code defined (not a
// built-in, not the SDK's, not inherited from Object.prototype).
function find(name) {
  const ex = mainModule.exports;
  if (ex !== null && (typeof ex === "object" || typeof ex === "function") && hasOwn.call(ex, name)) {
    const f = ex[name];
    if (typeof f === "function") return f;
  }
  if (hasOwn.call(globalThis, name)) {
    const g = globalThis[name];
    if (typeof g === "function" && builtins.get(name) !== g) return g;
    return null;
  }
  return lexical(name);
}

// lexical finds a top-level const or let of the entry file (const
// transform = (msg) => ...), which is not a property of the global object
// but is in scope for a global (indirect) eval.
const globalEval = eval;
const IDENTIFIER = /^[A-Za-z_$][A-Za-z0-9_$]*$/;

function lexical(name) {
  if (!IDENTIFIER.test(name)) return null;
  try {
    const v = globalEval("typeof " + name + " === \"function\" ? " + name + " : undefined");
    // what the eval found through the global object (Object.prototype's
    // toString, say) is not the interface's
    if (typeof v !== "function" || (name in globalThis && globalThis[name] === v)) return null;
    return v;
  } catch (e) {
    return null;
  }
}

function defined() {
  const names = new Set();
  const ex = mainModule.exports;
  if (ex !== null && typeof ex === "object") for (const k of Object.keys(ex)) if (typeof ex[k] === "function") names.add(k);
  for (const k of Object.getOwnPropertyNames(globalThis)) if (find(k) !== null) names.add(k);
  return Array.from(names).sort();
}

/** check reports, as JSON, which of the newline-separated names are not functions. */
function check(list) {
  mainModule.loaded = true;
  const missing = list === "" ? [] : list.split("\n").filter((n) => find(n) === null);
  return jsonStringify({ missing, defined: missing.length > 0 ? defined() : [] });
}

function decode(format, payload) {
  switch (format) {
    case "hl7v2": return hl7.parse(payload);
    case "json": return jsonParse(payload);
    case "csv": return csv.decode(payload);
    default: return payload;
  }
}

function typeName(v) {
  if (Array.isArray(v)) return "an array";
  if (v instanceof hl7.Segment) return "a segment";
  return "a" + (/^[aeiou]/.test(typeof v) ? "n " : " ") + typeof v;
}

function encode(v, format) {
  if (typeof v === "string") return v;
  switch (format) {
    case "hl7v2":
      if (hl7.isMessage(v)) return v.toString();
      throw new Error("return a message (hl7.parse or hl7.create) or a string, not " + typeName(v));
    case "json": {
      const s = jsonStringify(v);
      if (s === undefined) throw new Error(typeName(v) + " has no JSON form");
      return s;
    }
    case "csv":
      if (hl7.isMessage(v)) throw new Error("return a record object (or an array of them), not an HL7 message");
      return csv.encode(v);
    default:
      if (typeof v === "number" || typeof v === "boolean" || typeof v === "bigint") return String(v);
      if (hl7.isMessage(v) || v instanceof hl7.Segment) return v.toString();
      throw new Error("return a string, not " + typeName(v));
  }
}

function frames(stack) {
  if (typeof stack !== "string") return "";
  const out = [];
  for (const line of stack.split("\n")) {
    const t = line.trim();
    if (!t.startsWith("at ") || t.indexOf(SDK_ORIGIN) >= 0) continue;
    out.push(t);
    if (out.length === 5) break;
  }
  return out.join("\n");
}

function failure(e) {
  if (e !== null && typeof e === "object" && e[MARK] !== undefined) {
    const kind = e[MARK];
    return kind === "Q" ? "Q" + e.reason + "\0" + frames(e.stack) : kind + e.reason;
  }
  if (e !== null && typeof e === "object" && typeof e.message === "string") {
    const name = typeof e.name === "string" && e.name !== "" ? e.name : "Error";
    return "Q" + text(name + ": " + e.message, name) + "\0" + frames(e.stack);
  }
  return "Q" + text("the transform threw " + describe(e), "the transform threw") + "\0";
}

function finish(v, format) {
  if (v === null || v === undefined) return "Fthe transform returned " + (v === null ? "null" : "undefined");
  try {
    return "O" + encode(v, format);
  } catch (e) {
    return "Qcannot write the result as " + format + ": " + (e && e.message !== undefined ? e.message : String(e)) + "\0";
  }
}

let pending = null;

// invoke takes the call's particulars in one string (fewer values to pass
// from Go, each a trip through v8go): function, input format, output
// format, message id, received-at (epoch ms, or empty), destination and
// origin, separated by NUL.
function invoke(header, payload) {
  native.mark();
  pending = null;
  const h = header.split("\0");
  const name = h[0], inFormat = h[1], outFormat = h[2];
  const fn = find(name);
  if (fn === null) return "E" + name;
  let msg;
  try {
    msg = decode(inFormat, payload);
  } catch (e) {
    return "Qthe payload is not valid " + inFormat + ": " + (e && e.message !== undefined ? e.message : String(e)) + "\0";
  }
  const meta = freeze({
    id: h[3], destination: h[5],
    receivedAt: h[4] === "" ? null : new Date(+h[4]),
    origin: h[6] === "" ? null : h[6],
  });
  let r;
  try {
    r = fn(msg, meta);
    if (r !== null && typeof r === "object" && typeof r.then === "function") {
      const box = { done: false, code: "" };
      pending = box;
      r.then((v) => {
        box.done = true;
        box.code = finish(v, outFormat);
      }, (e) => {
        box.done = true;
        box.code = failure(e);
      });
      return "P";
    }
  } catch (e) {
    return failure(e);
  }
  return finish(r, outFormat);
}

function settle() {
  const box = pending;
  pending = null;
  if (box !== null && box.done) return box.code;
  return "Qthe transform's promise never settled (transforms have no timers or I/O to wait for)\0";
}

globalThis.hl7 = hl7;
globalThis.csv = csv;
globalThis.console = console;
globalThis.env = env;
globalThis.secret = secret;
globalThis.quarantine = quarantine;
globalThis.transient = transient;
globalThis.filter = filter;

return freeze({ invoke, settle, define, start, check });
