// Ductus realtime browser client: plain JavaScript, no build step. Served by
// the Go handler at any path ending in /ductus-realtime.js.
//
//   const rt = DuctusRealtime.connect("ws://host/realtime");
//   const sub = rt.subscribe({type: "cart", id: "c1"}, {
//     token: () => fetch("/token").then(r => r.text()), // or a string
//     observables: ["count", "total"],                  // optional
//     onChange: (values, frame) => {}, onError: (err) => {},
//   });
//   DuctusRealtime.bind(document.body, sub); // [data-observable="count"] shows its value
//
// It reconnects with exponential back-off and resumes each subscription
// from the last version it applied (the server sends what was missed, or a
// fresh snapshot). Updates with a version not above the applied one are
// ignored, so values never go back.
(function (global) {
  "use strict";

  function refKey(ref) { return ref.type + "\u0000" + ref.id; }

  function connect(url, opts) {
    opts = opts || {};
    const minDelay = opts.minDelay || 250, maxDelay = opts.maxDelay || 10000;
    const subs = new Map();
    const rt = { status: "connecting", subscribe, close, onStatus: opts.onStatus || null };
    let ws = null, attempt = 0, closed = false, timer = null;

    function setStatus(s) {
      rt.status = s;
      if (rt.onStatus) rt.onStatus(s);
    }

    function open() {
      setStatus(attempt === 0 ? "connecting" : "reconnecting");
      ws = new WebSocket(url);
      ws.onopen = () => {
        attempt = 0;
        setStatus("open");
        for (const s of subs.values()) send(s);
      };
      ws.onmessage = (ev) => {
        let f;
        try { f = JSON.parse(ev.data); } catch (e) { return; }
        const s = f.ref ? subs.get(refKey(f.ref)) : null;
        if (f.op === "error") {
          const err = { code: f.code, message: f.message };
          if (!s) { if (opts.onError) opts.onError(err); return; }
          if (f.code === "token_expired" && typeof s.token === "function" && !s.retried) {
            s.retried = true; // one fresh token, then give up
            send(s);
            return;
          }
          s.error = err;
          subs.delete(refKey(s.ref));
          s.emit("error", err);
          return;
        }
        if (!s) return;
        s.retried = false;
        if (f.op === "snapshot") {
          s.values = Object.assign({}, f.values);
          s.version = f.version;
          s.error = null;
          s.emit("change", f);
        } else if (f.op === "update") {
          if (s.version !== null && f.version <= s.version) return;
          Object.assign(s.values, f.changes);
          s.version = f.version;
          s.emit("change", f);
        } else if (f.op === "resumed") {
          s.version = Math.max(s.version || 0, f.version);
          s.error = null;
          s.emit("change", f);
        }
      };
      ws.onclose = () => {
        ws = null;
        if (closed) { setStatus("closed"); return; }
        const delay = Math.min(maxDelay, minDelay * Math.pow(2, attempt++));
        setStatus("reconnecting");
        timer = setTimeout(open, delay * (0.5 + Math.random() / 2));
      };
    }

    async function send(s) {
      let token = s.token;
      if (typeof token === "function") {
        try { token = await token(); } catch (e) {
          s.error = { code: "token_fetch", message: String(e) };
          s.emit("error", s.error);
          return;
        }
      }
      if (!ws || ws.readyState !== WebSocket.OPEN || subs.get(refKey(s.ref)) !== s) return;
      const frame = { op: "subscribe", ref: s.ref, token: token };
      if (s.observables) frame.observables = s.observables;
      if (s.version !== null) frame.since = s.version;
      ws.send(JSON.stringify(frame));
    }

    function subscribe(ref, o) {
      o = o || {};
      const s = {
        ref: { type: ref.type, id: ref.id }, token: o.token, observables: o.observables || null,
        values: {}, version: null, error: null, retried: false, listeners: [],
        emit(kind, arg) {
          if (kind === "change" && o.onChange) o.onChange(s.values, arg);
          if (kind === "error" && o.onError) o.onError(arg);
          for (const l of s.listeners) l(kind, arg);
        },
        unsubscribe() {
          subs.delete(refKey(s.ref));
          if (ws && ws.readyState === WebSocket.OPEN) ws.send(JSON.stringify({ op: "unsubscribe", ref: s.ref }));
        },
      };
      subs.set(refKey(s.ref), s);
      send(s);
      return s;
    }

    function close() {
      closed = true;
      clearTimeout(timer);
      if (ws) ws.close(1000);
    }

    open();
    return rt;
  }

  // bind shows sub's values in root's elements marked
  // data-observable="name" (numbers and strings as text, other values as
  // JSON), and its refusal in any [data-realtime-error] element.
  function bind(root, sub) {
    // all includes root itself when it matches, so bind(el, sub) on a
    // single marked element works.
    function all(sel) {
      const found = Array.from(root.querySelectorAll(sel));
      if (root.matches && root.matches(sel)) found.unshift(root);
      return found;
    }
    function render(kind, arg) {
      if (kind === "error") {
        for (const el of all("[data-realtime-error]")) el.textContent = arg.code + ": " + arg.message;
        return;
      }
      for (const el of all("[data-observable]")) {
        const name = el.getAttribute("data-observable");
        if (!(name in sub.values)) continue;
        const v = sub.values[name];
        el.textContent = typeof v === "string" || typeof v === "number" ? String(v) : JSON.stringify(v);
      }
      for (const el of all("[data-realtime-version]")) el.textContent = String(sub.version);
    }
    sub.listeners.push(render);
    if (sub.version !== null) render("change");
    if (sub.error) render("error", sub.error);
  }

  global.DuctusRealtime = { connect, bind };
})(typeof window !== "undefined" ? window : globalThis);
