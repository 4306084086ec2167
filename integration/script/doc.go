// Package script is the engine's script host: it runs interfaces'
// JavaScript transforms in V8 (rogchap.com/v8go). It is the only package of
// the module that links V8, so that no other test binary pays for it.
//
// # Shape
//
// A Host keeps a pool of isolates (Config.Isolates, one per CPU by default);
// a call takes one isolate for itself, so an isolate is only ever used by
// one goroutine at a time. Each interface is compiled once per isolate
// (the first compile, at Load, records V8's code cache; the other isolates
// compile from it) and bound in a context of its own, so interfaces sharing
// an isolate cannot see one another's globals. Load runs the top-level code
// in a fresh context to check it and then lets that context go: an isolate
// binds an interface on its first call there (about 1 ms, once), so a host
// holds a context (about 120 KB) only per interface and isolate that has
// had a call, not one per interface from the start. Closed contexts'
// memory is handed back to the system every 64 of them (worker.trim).
//
// A call decodes the payload by its format, runs the named function as
// fn(msg, meta) and encodes what it returns by the output format; the
// Result says what the transform decided: output, filtered, quarantined,
// transient or runaway.
//
// # What interface code sees
//
// Besides its own files: hl7 (parse, create, escape, unescape), csv (decode,
// encode), console (into the host's slog.Logger with the interface's name,
// the message ID and the destination), env(name[, fallback]) and
// secret(name) (answered by Config.Env and Config.Secret; an unknown name
// throws, so the message is quarantined with a reason naming it, unless env
// was given a fallback), and quarantine(reason), transient(reason) and
// filter(reason), which end the call with that outcome. There are no
// timers, no fetch, no filesystem, no SharedArrayBuffer, Atomics or
// WebAssembly, and no import: the entry file (transform.js, or the only .js
// file) runs as a classic script, and a call names one of its top-level
// functions (a declaration, a const or let, or a member of module.exports);
// every other .js file is a CommonJS module run on its first
// require("./lib.js"), and .json files are data. require resolves relative
// paths inside the interface folder only, and Load refuses literal requires
// of anything else, and import(), with the file and line. An async
// transform is allowed; its promise must settle within the call.
//
// # Outcomes
//
// The SDK (js/sdk.js) classifies every outcome inside V8 and hands the host
// one string. quarantine(), transient() and filter() throw errors marked
// under a symbol only the SDK holds, so no text a transform writes or throws
// can pass for one; any other throw is a quarantine with the error and the
// interface's own stack frames.
//
// # HL7 paths
//
// "SEG[n]-field[rep].component.subcomponent", every position 1-based, as in
// the engine's Go parser; MSH-1 is the field separator and MSH-2 the encoding
// characters. get() decodes escape sequences (\F\ \S\ \T\ \R\ \E\ \Xhh\;
// others are kept as they are); set() writes its value as one literal value,
// escaped, or an array as components (or subcomponents); raw() and setRaw()
// read and write HL7 text as it stands. A field path without [rep] is the
// first repetition, except for raw/setRaw where it is the whole field. A
// message is kept as text and split lazily; an unchanged CR-terminated
// message serialises back byte-identical; CR, LF and CRLF are read, CR is
// written.
//
// # Runaways
//
// A call runs under a deadline (Interface.Timeout, default 5 s) and a heap
// ceiling (Config.HeapLimit, default 512 MiB of used heap plus array-buffer
// memory per isolate). The watchdog (guard.go) enforces both from inside
// the isolate, through V8 interrupts, because v8go's GetHeapStatistics is
// not safe to call from another thread while JavaScript runs; V8's
// near-heap-limit callback backs the ceiling up so that V8 never aborts the
// process. A stopped call's isolate is disposed and replaced; other
// isolates, and other interfaces' code, are untouched (their contexts on
// that isolate are rebuilt on next use). MaxRunaways runaways in a row stop
// the interface until it is loaded again (ErrInterfaceStopped); any call
// that completes resets the count. A heap that is full of state kept between
// calls rather than of the running call's allocations is not the running
// call's fault: that call is Transient and runs again on a fresh isolate.
package script
