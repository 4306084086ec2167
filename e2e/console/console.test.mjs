// End-to-end test of the web console in headless Debian chromium
// (playwright-core), with axe-core on every page. Run by console_test.go,
// which builds ductus, writes the project, makes the accounts, starts the
// engine and passes:
//
//   DUCTUS_URL     the engine's API (and console) base URL
//   MLLP_ADDR      the adt interface's MLLP listener
//   EMR_ADDR       where the emr destination sends (nothing listens at first)
//   ADMIN_NAME, ADMIN_FIRST_PW, ADMIN_NEW_PW   an admin who must change the password
//   VIEWER_NAME, VIEWER_PW                     a viewer
//   SCREENSHOTS    where each page's screenshot goes
//   DOCS_SCREENSHOTS  where the main ones are copied (docs/console)
import { chromium } from "playwright-core";
import assert from "node:assert/strict";
import { copyFileSync, mkdirSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { createRequire } from "node:module";
import net from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";

const env = (k) => {
  const v = process.env[k];
  if (!v) {
    console.error(`${k} must be set (run through go test ./e2e/console)`);
    process.exit(2);
  }
  return v;
};
const base = env("DUCTUS_URL");
const mllpAddr = env("MLLP_ADDR");
const emrAddr = env("EMR_ADDR");
const admin = { name: env("ADMIN_NAME"), first: env("ADMIN_FIRST_PW"), pw: env("ADMIN_NEW_PW") };
const viewer = { name: env("VIEWER_NAME"), pw: env("VIEWER_PW") };
const shots = env("SCREENSHOTS");
const docShots = process.env.DOCS_SCREENSHOTS;
const axeSource = readFileSync(createRequire(import.meta.url).resolve("axe-core/axe.min.js"), "utf8");

const [mllpHost, mllpPort] = mllpAddr.split(":");
const [emrHost, emrPort] = emrAddr.split(":");

// ---- HL7 over MLLP -------------------------------------------------------

let seq = 0;
function adt(mrn, family, given) {
  seq++;
  const ts = "20261206" + String(100000 + seq);
  return [
    `MSH|^~\\&|PAS|HOSP|DUCTUS|HOSP|${ts}||ADT^A01^ADT_A01|E2E${String(seq).padStart(4, "0")}|P|2.5`,
    `EVN|A01|${ts}`,
    `PID|1||${mrn}^^^HOSP^MR||${family}^${given}||19800101|F|||1 Main St^^Springfield^^12345`,
    `PV1|1|I|WARD1^101^1`,
  ].join("\r") + "\r";
}

// send writes one framed message and resolves with the ACK.
function send(msg) {
  return new Promise((resolve, reject) => {
    const sock = net.connect(Number(mllpPort), mllpHost);
    let buf = Buffer.alloc(0);
    const timer = setTimeout(() => { sock.destroy(); reject(new Error("no ACK within 10 s")); }, 10000);
    sock.on("connect", () => sock.write(Buffer.concat([Buffer.from([0x0b]), Buffer.from(msg), Buffer.from([0x1c, 0x0d])])));
    sock.on("data", (d) => {
      buf = Buffer.concat([buf, d]);
      const end = buf.indexOf(0x1c);
      if (end >= 0) {
        clearTimeout(timer);
        sock.end();
        const ack = buf.subarray(1, end).toString();
        if (!/MSA\|(AA|CA)/.test(ack)) reject(new Error("not accepted: " + ack));
        else resolve(ack);
      }
    });
    sock.on("error", (e) => { clearTimeout(timer); reject(e); });
  });
}

// emrServer is the EMR coming back up: it acknowledges every message.
function emrServer() {
  const received = [];
  const sockets = new Set();
  const srv = net.createServer((sock) => {
    sockets.add(sock);
    sock.on("close", () => sockets.delete(sock));
    let buf = Buffer.alloc(0);
    sock.on("data", (d) => {
      buf = Buffer.concat([buf, d]);
      for (;;) {
        const start = buf.indexOf(0x0b);
        const end = buf.indexOf(0x1c);
        if (start < 0 || end < 0) break;
        const msg = buf.subarray(start + 1, end).toString();
        buf = buf.subarray(end + 2);
        received.push(msg);
        const ctrl = (msg.split("\r")[0].split("|")[9]) || "";
        const ack = `MSH|^~\\&|EMR|HOSP|DUCTUS|HOSP|20261206120000||ACK|A${ctrl}|P|2.5\rMSA|AA|${ctrl}\r`;
        sock.write(Buffer.concat([Buffer.from([0x0b]), Buffer.from(ack), Buffer.from([0x1c, 0x0d])]));
      }
    });
    sock.on("error", () => {});
  });
  return new Promise((resolve) => srv.listen(Number(emrPort), emrHost, () => resolve({ srv, received, sockets })));
}

// ---- the browser ---------------------------------------------------------

const dir = mkdtempSync(join(tmpdir(), "ductus-console-e2e-"));
const context = await chromium.launchPersistentContext(join(dir, "profile"), {
  executablePath: "/usr/bin/chromium",
  headless: true,
  viewport: { width: 1280, height: 860 },
  args: ["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update",
    "--disable-sync", "--no-first-run"],
});
// CSP violations, reported by the page itself (the init script runs
// through the DevTools protocol, which the CSP does not govern).
await context.addInitScript(() => {
  window.__csp = [];
  document.addEventListener("securitypolicyviolation", (e) =>
    window.__csp.push(`${e.violatedDirective} blocked ${e.blockedURI || "inline"} at ${e.sourceFile}:${e.lineNumber}`));
});
const problems = [];
let page = context.pages()[0] ?? (await context.newPage());
function watch(p) {
  p.on("pageerror", (e) => problems.push("page error: " + e.message));
  p.on("console", (m) => {
    if (/Content Security Policy|Refused to/i.test(m.text())) problems.push("console: " + m.text());
  });
  p.on("dialog", (d) => d.accept());
}
watch(page);

const results = [];
async function step(name, fn) {
  const t0 = Date.now();
  try {
    await fn();
    results.push(`ok   ${name} (${Date.now() - t0} ms)`);
    console.log(`ok   ${name} (${Date.now() - t0} ms)`);
  } catch (e) {
    console.log(`FAIL ${name}: ${e.stack || e}`);
    await page.screenshot({ path: join(shots, "failure.png"), fullPage: true }).catch(() => {});
    await context.close().catch(() => {});
    rmSync(dir, { recursive: true, force: true });
    process.exit(1);
  }
}

// axe runs axe-core on the page: no serious or critical violation.
async function axe(name) {
  const has = await page.evaluate(() => typeof window.axe !== "undefined");
  if (!has) await page.evaluate(axeSource);
  const res = await page.evaluate(async () => {
    const r = await window.axe.run(document, { resultTypes: ["violations"] });
    return r.violations.map((v) => ({ id: v.id, impact: v.impact, help: v.help,
      nodes: v.nodes.slice(0, 3).map((n) => n.target.join(" ") + " " + (n.failureSummary || "").replace(/\s+/g, " ")) }));
  });
  const bad = res.filter((v) => v.impact === "serious" || v.impact === "critical");
  for (const v of res) if (!bad.includes(v)) console.log(`     axe (${name}, ${v.impact}): ${v.id}: ${v.help}`);
  assert.deepEqual(bad, [], `axe on ${name}: serious or critical violations:\n${JSON.stringify(bad, null, 2)}`);
}

async function shot(name, docName) {
  const path = join(shots, name + ".png");
  await page.screenshot({ path, fullPage: true });
  if (docShots && docName) {
    mkdirSync(docShots, { recursive: true });
    copyFileSync(path, join(docShots, docName + ".png"));
  }
}

async function cspClean() {
  const v = await page.evaluate(() => window.__csp || []);
  assert.deepEqual(v, [], "CSP violations on " + page.url());
}

const text = (sel) => page.locator(sel).innerText();
const count = async (testid) => Number((await page.getByTestId(testid).innerText()).trim());

async function signIn(name, password) {
  await page.getByLabel("Name").fill(name);
  await page.getByLabel("Password", { exact: true }).fill(password);
  await page.getByRole("button", { name: "Sign in" }).click();
}

// ---- the tests -----------------------------------------------------------

await step("the console's headers: a strict CSP, no framing, no-cache HTML", async () => {
  const r = await fetch(base + "/interfaces/adt");
  assert.equal(r.status, 200);
  const csp = r.headers.get("content-security-policy") || "";
  assert.match(csp, /default-src 'none'/);
  assert.match(csp, /script-src 'self'/);
  assert.match(csp, /frame-ancestors 'none'/);
  assert.equal(r.headers.get("x-frame-options"), "DENY");
  assert.equal(r.headers.get("cache-control"), "no-cache");
  const html = await r.text();
  const js = html.match(/src="(\/assets\/[^"]+\.js)"/)[1];
  const a = await fetch(base + js);
  assert.equal(a.headers.get("cache-control"), "public, max-age=31536000, immutable");
  assert.equal((await fetch(base + "/assets/nope.js")).status, 404);
});

await step("sign in: the forced password change, then the overview", async () => {
  await page.goto(base + "/");
  await page.getByRole("heading", { name: "Sign in to Ductus" }).waitFor();
  await axe("sign in");
  await shot("signin");
  await signIn(admin.name, "a-wrong-password");
  await page.getByRole("alert").waitFor();
  assert.match(await page.getByRole("alert").innerText(), /\S/);
  await signIn(admin.name, admin.first);
  await page.getByRole("heading", { name: "Choose a new password" }).waitFor();
  await axe("password change");
  await shot("password-change");
  await page.getByLabel("Current password").fill(admin.first);
  await page.getByLabel("New password", { exact: true }).fill(admin.pw);
  await page.getByLabel("New password again").fill(admin.pw);
  await page.getByRole("button", { name: "Change password" }).click();
  await page.getByRole("heading", { name: "Overview" }).waitFor();
  assert.match(await page.getByTestId("whoami").innerText(), new RegExp(admin.name + ".*admin"));
  await cspClean();
});

const mrns = { a: "MRN1001", b: "MRN1002", q: "MRN1003" };
// The three MRNs' lanes of the adt interface (4 partitions: FNV-1a of the
// key modulo 4), so each message holds a lane of its own.
const laneOf = (key) => {
  let h = 2166136261;
  for (const c of Buffer.from(key)) h = Math.imul(h ^ c, 16777619) >>> 0;
  return h % 4;
};
// apiInterfaces reads GET /api/v1/interfaces through the page's session.
const apiInterfaces = () => page.evaluate(() => fetch("/api/v1/interfaces").then((r) => r.json()));
const sum = (xs) => xs.reduce((a, b) => a + b, 0);

await step("the overview's counts and oldest pending age move as messages arrive, without a reload", async () => {
  await page.getByText("Live", { exact: true }).waitFor({ timeout: 10000 });
  assert.equal(await count("quarantined-adt-emr"), 0);
  assert.equal(await count("quarantined-adt-archive"), 0);
  assert.equal((await page.getByTestId("oldest-adt-emr").innerText()).trim(), "—");
  // The server's throughput before anything arrived: none (an empty hour
  // is left out), or an hour of empty minutes.
  const before = (await apiInterfaces()).interfaces.find((i) => i.name === "adt");
  if (before.throughput) {
    assert.equal(sum(before.throughput.sent) + sum(before.throughput.received), 0, JSON.stringify(before.throughput));
  }
  assert.match(await page.getByTestId("spark-adt").getAttribute("aria-label"), /^Sent in the last hour: 0 \(peak 0 a minute\); received: 0$/);
  await page.evaluate(() => { window.__noReload = true; });
  await send(adt(mrns.a, "Smith", "Anna"));
  await send(adt(mrns.b, "Jones", "Bo"));
  await send(adt(mrns.q, "QUARANTINE", "Quinn"));
  // The EMR is down: each send fails and waits about 15 s for its next
  // (and last) attempt, holding its lane. The EMR's oldest pending work has an age,
  // which grows with the clock.
  const ageRe = /^\d+ s$/;
  await page.waitForFunction((re) => new RegExp(re).test(document.querySelector('[data-testid="oldest-adt-emr"]')?.textContent ?? ""),
    ageRe.source, { timeout: 5000 });
  const age0 = (await page.getByTestId("oldest-adt-emr").innerText()).trim();
  await page.waitForFunction((a0) => {
    const t = document.querySelector('[data-testid="oldest-adt-emr"]')?.textContent ?? "";
    return /^\d+ s$/.test(t) && Number.parseInt(t) > Number.parseInt(a0);
  }, age0, { timeout: 4000 });
  const [p] = (await apiInterfaces()).interfaces.find((i) => i.name === "adt").destinations.filter((d) => d.name === "emr");
  assert.ok(p.pending > 0 && p.oldest_pending_at, "the EMR's pending work from the API: " + JSON.stringify(p));
  const age = Date.now() - Date.parse(p.oldest_pending_at);
  assert.ok(age >= 0 && age < 30000, `oldest_pending_at ${p.oldest_pending_at} is ${age} ms ago`);
  await shot("overview-pending");

  // The interface page (followed as a link: no reload) names the blocked
  // lanes: each held by one message, with its key and its last error (the
  // section is read again every 5 s while something waits).
  await page.getByRole("link", { name: "adt", exact: true }).click();
  await page.getByRole("heading", { name: "Interface adt" }).waitFor();
  assert.match((await page.getByTestId("oldest-emr").innerText()).trim(), ageRe);
  const hs = page.getByTestId("hotspots-emr");
  await page.getByTestId("hotspots-emr-summary").getByText("3 waiting in 3 lanes; 3 lanes blocked.", { exact: true }).waitFor({ timeout: 15000 });
  assert.equal(await hs.getByRole("alert").count(), 1);
  assert.equal((await hs.getByRole("alert").innerText()).trim(), "Every lane is blocked: the receiver looks down.");
  for (const mrn of [mrns.a, mrns.b, mrns.q]) {
    const row = page.getByTestId(`lane-emr-${laneOf(mrn)}`);
    const cells = await row.locator("th, td").allInnerTexts();
    // Lane, waiting, state, message, key, attempts, last error, since.
    assert.equal(cells[0].trim(), String(laneOf(mrn)));
    assert.equal(cells[1].trim(), "1");
    assert.match(cells[2], /blocked/);
    assert.equal(cells[4].trim(), mrn);
    assert.equal(cells[5].trim(), "1", "attempts of " + mrn);
    assert.match(cells[6], /\w/, "no last error for " + mrn);
    assert.notEqual(cells[6].trim(), "—", "no last error for " + mrn);
    // The message link names the message of that key, in that lane.
    const href = await row.getByRole("link").getAttribute("href");
    assert.match(href, /^\/messages\/[^/]+$/);
    const m = await page.evaluate((h) => fetch("/api/v1" + h).then((r) => r.json()), href);
    assert.equal(m.message.ordering_key, mrn, "the hotspot's message: " + JSON.stringify(m.message));
    assert.equal(m.message.lane, laneOf(mrn));
  }
  assert.equal(await hs.locator("tbody tr").count(), 3);
  await axe("interface with blocked lanes");
  await shot("interface-hotspots", "interface-hotspots");
  await page.goBack();
  await page.getByRole("heading", { name: "Overview" }).waitFor();

  // Each send uses up its two attempts and is quarantined; the
  // archive's transform quarantines the marked message.
  await page.waitForFunction(() => Number(document.querySelector('[data-testid="quarantined-adt-emr"]')?.textContent) === 3,
    null, { timeout: 40000 });
  await page.waitForFunction(() => Number(document.querySelector('[data-testid="quarantined-adt-archive"]')?.textContent) === 1,
    null, { timeout: 20000 });
  // Nothing is pending any more: no age.
  await page.waitForFunction(() => document.querySelector('[data-testid="oldest-adt-emr"]')?.textContent === "—", null, { timeout: 10000 });
  for (const d of ["archive", "events", "census"]) assert.equal((await page.getByTestId(`oldest-adt-${d}`).innerText()).trim(), "—");
  assert.equal(await page.evaluate(() => window.__noReload), true, "the page reloaded");
  // The sparkline shows the server's figures: 8 sends (the archive's two,
  // the events' and the census' three each; the EMR's none) and the 3
  // messages received, the same totals as since_start.
  const ix = (await apiInterfaces()).interfaces.find((i) => i.name === "adt");
  assert.ok(ix.throughput, "GET /interfaces has no throughput: " + JSON.stringify(ix));
  assert.equal(ix.throughput.bucket_seconds, 60);
  assert.equal(ix.throughput.sent.length, 60);
  assert.equal(ix.throughput.received.length, 60);
  const sent = sum(ix.throughput.sent);
  const received = sum(ix.throughput.received);
  assert.equal(sent, sum(ix.destinations.map((d) => d.since_start?.sent ?? 0)), "throughput.sent against since_start: " + JSON.stringify(ix));
  assert.equal(sent, 8, "throughput.sent: " + JSON.stringify(ix.throughput));
  assert.equal(received, 3, "throughput.received: " + JSON.stringify(ix.throughput));
  assert.ok(Date.parse(ix.throughput.until) > Date.now() - 60000, "throughput.until is old: " + ix.throughput.until);
  const want = `Sent in the last hour: ${sent} (peak ${Math.max(...ix.throughput.sent)} a minute); received: ${received}`;
  await page.waitForFunction((w) => document.querySelector('[data-testid="spark-adt"]')?.getAttribute("aria-label") === w, want, { timeout: 10000 })
    .catch(async () => { throw new Error(`sparkline label ${await page.getByTestId("spark-adt").getAttribute("aria-label")}, want ${want}`); });
  assert.equal(await page.getByTestId("spark-adt").locator("polyline.spark-sent").getAttribute("points").then((p) => p.split(" ").length), 60);
  await axe("overview");
  await shot("overview", "overview");
  await cspClean();
});

await step("keyboard: the skip link, then the page's controls by Tab", async () => {
  await page.reload();
  await page.getByRole("heading", { name: "Overview" }).waitFor();
  await page.keyboard.press("Tab");
  assert.equal(await page.evaluate(() => document.activeElement?.textContent), "Skip to content");
  await page.keyboard.press("Enter");
  await page.waitForFunction(() => document.activeElement?.id === "main");
  const seen = [];
  for (let i = 0; i < 12; i++) {
    await page.keyboard.press("Tab");
    seen.push(await page.evaluate(() => document.activeElement?.textContent?.trim()));
  }
  for (const want of ["Start a drain", "adt", "Browse"]) assert.ok(seen.includes(want), `Tab never reached ${want}: ${seen}`);
  // A link followed from the keyboard.
  await page.getByRole("link", { name: "adt", exact: true }).focus();
  await page.keyboard.press("Enter");
  await page.getByRole("heading", { name: "Interface adt" }).waitFor();
  await page.goBack();
  await page.getByRole("heading", { name: "Overview" }).waitFor();
});

await step("the interface page", async () => {
  await page.getByRole("link", { name: "adt", exact: true }).click();
  await page.getByRole("heading", { name: "Interface adt" }).waitFor();
  await page.getByRole("button", { name: "Pause" }).first().waitFor();
  await page.getByTestId("recent-errors").getByText("marked for quarantine").waitFor();
  // Every EMR send is quarantined: no destination has a backlog.
  await page.getByTestId("hotspots").getByText("Nothing is waiting.").waitFor({ timeout: 10000 });
  assert.equal(await page.getByTestId("hotspots-emr").count(), 0);
  assert.equal((await page.getByTestId("oldest-emr").innerText()).trim(), "—");
  await axe("interface");
  await shot("interface");
});

let quarantinedId;
await step("the message browser, a message and its parsed HL7 view", async () => {
  await page.getByRole("link", { name: "Browse its messages" }).click();
  await page.getByRole("heading", { name: "Messages of adt" }).waitFor();
  const rows = page.getByTestId("messages").locator("tbody tr");
  await rows.first().waitFor();
  assert.equal(await rows.count(), 3);
  await axe("message browser");
  await shot("messages");
  assert.match(page.url(), /\/interfaces\/adt\/messages$/);
  // Find a message by MRN: the search is a permalink.
  await page.getByLabel("MRN (ordering key)").fill(mrns.b);
  await page.getByRole("button", { name: "Search" }).click();
  await page.waitForURL(/[?&]key=MRN1002/);
  const one = () => page.waitForFunction(() => document.querySelectorAll('[data-testid="messages"] tbody tr').length === 1);
  await one();
  assert.match(await rows.first().innerText(), /MRN1002/);
  await page.reload();
  await one();
  assert.match(await rows.first().innerText(), /MRN1002/);
  assert.equal(await page.getByLabel("MRN (ordering key)").inputValue(), mrns.b);
  await axe("message search");
  await shot("messages-search");
  await page.getByRole("button", { name: "Clear" }).click();
  await page.waitForFunction(() => document.querySelectorAll('[data-testid="messages"] tbody tr').length === 3);
  const row = rows.filter({ hasText: mrns.a });
  await row.getByRole("link").first().click();
  await page.getByRole("heading", { name: /^Message / }).waitFor();
  await page.getByTestId("delivery-emr").getByText("quarantined").waitFor();
  await page.getByTestId("delivery-archive").getByText("sent").waitFor();
  await page.getByRole("button", { name: "Show the payload" }).click();
  await page.getByTestId("segments").waitFor();
  assert.match(await text('[data-testid="raw"]'), /^MSH\|/);
  const pid5 = page.getByTestId("segments").locator("tr", { hasText: "PID-5" }).first();
  assert.match(await pid5.innerText(), /Patient Name/);
  assert.match(await pid5.innerText(), /Smith\^Anna/);
  // The archive's saved output against the input: MSH-6 changed.
  const diff = page.getByTestId("diff-archive");
  await diff.waitFor();
  const msh6 = diff.locator("tr", { hasText: "MSH-6" });
  assert.match(await msh6.innerText(), /Receiving Facility\s+HOSP\s+ARCHIVE\s+changed/);
  assert.equal(await diff.locator("tbody tr").count(), 1);
  // The JSON and CSV outputs, formatted.
  assert.match(await page.locator("pre", { hasText: '"mrn"' }).first().innerText(), /"mrn": "MRN1001"/);
  const csv = page.getByTestId("csv").first();
  await csv.waitFor();
  assert.match(await csv.locator("thead").innerText(), /mrn/);
  assert.match(await csv.locator("tbody").innerText(), /MRN1001/);
  await axe("message");
  await shot("message", "message");
  await cspClean();
  // The marked message's id, from the browser.
  await page.goBack();
  await page.getByRole("heading", { name: "Messages of adt" }).waitFor();
  const qrow = page.getByTestId("messages").locator("tbody tr").filter({ hasText: mrns.q });
  quarantinedId = (await qrow.getByRole("link").first().innerText()).trim();
  assert.ok(quarantinedId);
});

let emr;
await step("resend a quarantined message as admin: the EMR is back and it is sent", async () => {
  emr = await emrServer();
  await page.getByTestId("messages").locator("tbody tr").filter({ hasText: mrns.a }).getByRole("link").first().click();
  await page.getByTestId("delivery-emr").getByText("quarantined").waitFor();
  await page.getByRole("button", { name: "Resend" }).click();
  await page.getByText(/Resent: emr \(was quarantined, in its place\)/).waitFor();
  // The page follows a pending delivery until it settles.
  // (Its first attempt may meet a connection's reconnect back-off from the
  // EMR's downtime, and go again 15 s later.)
  await page.getByTestId("delivery-emr").getByText("sent").waitFor({ timeout: 40000 });
  assert.ok(emr.received.some((m) => m.includes(mrns.a)), "the EMR did not receive the resent message");
  await shot("message-resent");
});

await step("edit and resend the marked message: the corrected copy is delivered", async () => {
  await page.goto(base + "/messages/" + encodeURIComponent(quarantinedId));
  await page.getByTestId("delivery-archive").getByText("quarantined").waitFor();
  await page.getByRole("button", { name: "Show the payload" }).click();
  await page.getByRole("button", { name: "Edit a corrected copy" }).click();
  const ed = page.getByLabel("Corrected message");
  const v = await ed.inputValue();
  assert.match(v, /^MSH\|[^\n]*\nEVN\|[^\n]*\nPID\|/, "one segment a line");
  await ed.fill(v.replace("QUARANTINE^Quinn", "Corrected^Quinn"));
  const changes = page.getByTestId("edit-changes");
  await changes.waitFor();
  assert.equal(await changes.locator("tbody tr").count(), 1);
  assert.match(await changes.locator("tbody tr").first().innerText(), /PID-5\s+Patient Name\s+QUARANTINE\^Quinn\s+Corrected\^Quinn\s+changed/);
  await page.getByLabel("Why (kept with the copy and in the audit log)").fill("family name keyed wrongly at registration");
  await axe("edit and resend");
  await shot("message-edit", "message-edit");
  await page.getByRole("button", { name: "Send the corrected copy" }).click();
  const edited = page.getByTestId("edited");
  await edited.waitFor();
  // The original's quarantined deliveries are replaced by the copy.
  await page.getByTestId("delivery-archive").getByText("dismissed").waitFor();
  await page.getByTestId("delivery-emr").getByText("dismissed").waitFor();
  await edited.getByRole("link").click();
  await page.getByText("Corrected copy of").waitFor();
  await page.getByTestId("delivery-archive").getByText("sent").waitFor({ timeout: 20000 });
  await page.getByTestId("delivery-emr").getByText("sent").waitFor({ timeout: 20000 });
  assert.ok(emr.received.some((m) => m.includes("Corrected^Quinn")), "the EMR did not receive the corrected copy");
  await cspClean();
});

// quarantineRows reloads the quarantine page until it lists n rows.
async function quarantineRows(n) {
  const deadline = Date.now() + 20000;
  for (;;) {
    const rows = await page.getByTestId("quarantine").locator("tbody tr").count();
    if (rows === n) return;
    if (Date.now() > deadline) throw new Error(`the quarantine lists ${rows} rows, want ${n}`);
    await page.waitForTimeout(500);
    await page.reload();
    await page.getByRole("heading", { name: "Quarantine" }).waitFor();
  }
}

await step("the quarantine across interfaces: dismiss one with a reason, bulk-resend and bulk-dismiss several", async () => {
  await send(adt("MRN1004", "QUARANTINE", "Quade"));
  await send(adt("MRN1005", "QUARANTINE", "Quella"));
  await page.getByRole("link", { name: "Quarantine", exact: true }).click();
  await page.getByRole("heading", { name: "Quarantine" }).waitFor();
  // MRN1002's EMR delivery, and the two new marked messages' archive ones.
  await quarantineRows(3);
  await axe("quarantine");
  await shot("quarantine", "quarantine");
  const rows = page.getByTestId("quarantine").locator("tbody tr");
  await rows.filter({ hasText: "mllpnet" }).getByRole("link").first().click();
  await page.getByTestId("delivery-emr").getByText("quarantined").waitFor();
  await page.getByLabel("Reason to dismiss").fill("sent to the EMR by phone");
  await page.getByRole("button", { name: "Dismiss" }).click();
  await page.getByText("Dismissed: emr").waitFor();
  await page.getByTestId("delivery-emr").getByText("dismissed").waitFor();

  await page.getByRole("link", { name: "Quarantine", exact: true }).click();
  await quarantineRows(2);
  const confirm = page.getByTestId("confirm");
  // Bulk resend: the transform runs again and quarantines them again.
  await page.getByRole("checkbox", { name: "Select every delivery on this page" }).check();
  await page.getByRole("heading", { name: "Selected: 2" }).waitFor();
  await page.getByRole("button", { name: "Resend selected" }).click();
  await confirm.getByRole("heading", { name: "Resend 2 deliveries?" }).waitFor();
  assert.equal(await confirm.locator("li").count(), 2);
  await confirm.getByRole("button", { name: "Resend 2" }).click();
  await page.getByTestId("bulk-outcome").getByText("Resent: 2 message(s) to archive").waitFor();
  await quarantineRows(2);
  // Bulk dismiss, after a confirmation that says how many and which.
  await page.getByRole("checkbox", { name: "Select every delivery on this page" }).check();
  await page.getByLabel("Reason to dismiss the selected").fill("test patients");
  await page.getByRole("button", { name: "Dismiss selected" }).click();
  await confirm.getByRole("heading", { name: "Dismiss 2 deliveries?" }).waitFor();
  assert.match(await confirm.innerText(), /Reason: test patients/);
  await axe("quarantine bulk confirmation");
  await shot("quarantine-confirm");
  await confirm.getByRole("button", { name: "Dismiss 2" }).click();
  await page.getByTestId("bulk-outcome").getByText("Dismissed: 2 message(s) to archive").waitFor();
  await page.getByText("Nothing is quarantined.").waitFor();
});

await step("admin: a created token is shown once; users; the audit log", async () => {
  await page.getByRole("link", { name: "Admin", exact: true }).click();
  await page.getByRole("heading", { name: "Admin" }).waitFor();
  await page.getByTestId("users").getByRole("rowheader", { name: viewer.name }).waitFor();
  // A new user, made an operator with the payloads permission, then disabled.
  await page.locator("#nu-name").fill("olga");
  await page.locator("#nu-password").fill("olga-first-password");
  await page.getByRole("button", { name: "Create user" }).click();
  await page.getByText(/Created olga \(viewer\)/).waitFor();
  const olga = page.getByTestId("users").locator("tr", { has: page.getByRole("rowheader", { name: "olga" }) });
  await olga.getByLabel("Role of olga").selectOption("operator");
  await page.waitForFunction(() => document.querySelector("#role-olga")?.value === "operator");
  // The box shows the account as stored: it turns checked once the change
  // is saved and the list read again (check() would expect it at once).
  await olga.getByRole("checkbox", { name: "payloads for olga" }).click();
  await page.waitForFunction(() => document.querySelector("#perm-olga-payloads")?.checked === true);
  await olga.getByRole("button", { name: "Disable" }).click();
  await olga.getByText("disabled", { exact: true }).waitFor();
  const users = await (await page.evaluate(() => fetch("/api/v1/users").then((r) => r.json()))).users;
  const o = users.find((u) => u.name === "olga");
  assert.deepEqual([o.role, o.permissions, o.disabled, o.must_change_password], ["operator", ["payloads"], true, true]);
  await page.locator("#nt-name").fill("night-report");
  await page.getByRole("button", { name: "Create token" }).click();
  const secret = (await page.getByTestId("secret").innerText()).trim();
  assert.match(secret, /^dux_[A-Z2-7a-z0-9]{52}$/);
  await axe("admin with a new token");
  await page.getByRole("button", { name: "I have copied it" }).click();
  await page.getByTestId("tokens").getByRole("rowheader", { name: "night-report" }).waitFor();
  assert.equal(await page.getByTestId("secret").count(), 0);
  await page.reload();
  await page.getByTestId("tokens").getByRole("rowheader", { name: "night-report" }).waitFor();
  assert.equal(await page.getByText(secret).count(), 0, "the secret is shown again");
  // The token works, once made.
  const r = await fetch(base + "/api/v1/interfaces", { headers: { Authorization: "Bearer " + secret } });
  assert.equal(r.status, 200);
  await axe("admin");
  await shot("admin", "admin");
  await page.getByRole("link", { name: "Audit log" }).click();
  await page.getByRole("heading", { name: "Audit log" }).waitFor();
  await page.getByLabel("Action").fill("resendMessage");
  await page.getByRole("button", { name: "Filter" }).click();
  await page.waitForURL(/action=resendMessage/);
  await page.getByTestId("audit").locator("tbody tr").first().waitFor();
  const actions = await page.getByTestId("audit").locator("tbody tr td:nth-child(3)").allInnerTexts();
  assert.ok(actions.length > 0 && actions.every((a) => a === "resendMessage"), "audit filter: " + actions);
  // The export: NDJSON of the same filter, through the session cookie.
  const href = await page.getByTestId("audit-export").getAttribute("href");
  assert.match(href, /^\/api\/v1\/audit\/export\?action=resendMessage$/);
  const lines = await page.evaluate((h) => fetch(h).then(async (r) => [r.status, r.headers.get("content-type"), await r.text()]), href);
  assert.equal(lines[0], 200, "audit export: " + lines);
  const rows = lines[2].trim().split("\n").map((l) => JSON.parse(l));
  assert.ok(rows.length > 0 && rows.every((r) => r.action === "resendMessage"), "audit export rows: " + lines[2]);
  await axe("audit");
  await shot("audit");
  await cspClean();
});

await step("the dark theme (toggle) passes the same checks", async () => {
  await page.goto(base + "/");
  await page.getByRole("heading", { name: "Overview" }).waitFor();
  await page.getByRole("button", { name: /Switch to the dark theme/ }).click();
  assert.equal(await page.evaluate(() => document.documentElement.dataset.theme), "dark");
  await axe("overview, dark");
  await shot("overview-dark", "overview-dark");
  await page.goto(base + "/messages/" + encodeURIComponent(quarantinedId));
  await page.getByRole("heading", { name: /^Message / }).waitFor();
  await axe("message, dark");
  await page.getByRole("button", { name: /Switch to the light theme/ }).click();
});

await step("sign out", async () => {
  await page.getByRole("button", { name: "Sign out" }).click();
  await page.getByRole("heading", { name: "Sign in to Ductus" }).waitFor();
  const me = await page.evaluate(() => fetch("/api/v1/me").then((r) => r.status));
  assert.equal(me, 401);
});

await step("a viewer sees no resend button, and the API refuses the call anyway", async () => {
  await page.goto(base + "/messages/" + encodeURIComponent(quarantinedId));
  await signIn(viewer.name, viewer.pw);
  await page.getByRole("heading", { name: /^Message / }).waitFor();
  await page.getByTestId("delivery-emr").waitFor();
  assert.equal(await page.getByRole("button", { name: "Resend" }).count(), 0);
  assert.equal(await page.getByRole("button", { name: "Dismiss" }).count(), 0);
  await page.getByText("Reading payloads needs the payloads permission.").waitFor();
  const status = await page.evaluate((id) =>
    fetch(`/api/v1/messages/${encodeURIComponent(id)}/resend`, { method: "POST", headers: { "X-Ductus": "1" } })
      .then(async (r) => [r.status, (await r.json()).error]), quarantinedId);
  assert.equal(status[0], 403, "viewer resend: " + status);
  // Without the CSRF header the cookie is refused too.
  const csrf = await page.evaluate((id) =>
    fetch(`/api/v1/messages/${encodeURIComponent(id)}/resend`, { method: "POST" }).then((r) => r.status), quarantinedId);
  assert.equal(csrf, 403);
  assert.equal(await page.getByRole("link", { name: "Admin", exact: true }).count(), 0);
  await axe("message as viewer");
  await shot("message-viewer");
  // A viewer may read the hotspots (and no pause button is shown).
  await page.goto(base + "/interfaces/adt");
  await page.getByRole("heading", { name: "Interface adt" }).waitFor();
  await page.getByTestId("hotspots").getByText("Nothing is waiting.").waitFor();
  assert.equal(await page.getByTestId("hotspots").getByRole("alert").count(), 0);
  assert.equal(await page.getByRole("button", { name: "Pause" }).count(), 0);
  await axe("interface as viewer");
  await cspClean();
});

await step("no CSP violation and no page error anywhere", async () => {
  assert.deepEqual(problems, []);
});

await context.close();
// The engine keeps its connection to the EMR open: end it with the server.
emr?.srv.close();
emr?.srv.closeAllConnections?.();
for (const s of emr?.sockets ?? []) s.destroy();
rmSync(dir, { recursive: true, force: true });
console.log(`${results.length} steps passed`);
process.exit(0);
