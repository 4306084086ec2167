// End-to-end test of the realtime browser client against examples/cart in
// headless Debian chromium (playwright-core). Run by browser_test.go, which
// builds the server and passes it as CART_BIN:
//
//   CART_BIN=/path/to/cart node e2e/realtime/cart.test.mjs
//
// Tests: two pages on one cart (an item added in one shows in the other
// within a second); the server restarted while a page is open (the page
// resumes and is correct); a tampered token is refused on the page.
import { chromium } from "playwright-core";
import { spawn } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import assert from "node:assert/strict";

const bin = process.env.CART_BIN;
if (!bin) {
  console.error("CART_BIN must name the built examples/cart binary");
  process.exit(2);
}
const dir = mkdtempSync(join(tmpdir(), "ductus-e2e-"));
const db = join(dir, "cart.db");

// startServer runs the cart on addr and resolves with its base URL once it
// prints its address.
function startServer(addr) {
  return new Promise((resolve, reject) => {
    const proc = spawn(bin, ["-addr", addr, "-db", db], { stdio: ["ignore", "pipe", "inherit"] });
    let out = "";
    const timer = setTimeout(() => reject(new Error("the cart server did not print its address within 20 s")), 20000);
    proc.stdout.on("data", (d) => {
      out += d;
      const m = out.match(/listening on (http:\/\/[^\s]+)\//);
      if (m) {
        clearTimeout(timer);
        resolve({ proc, url: m[1] });
      }
    });
    proc.on("exit", (code) => {
      clearTimeout(timer);
      reject(new Error("the cart server exited with " + code));
    });
  });
}

function stopServer(s) {
  return new Promise((resolve) => {
    if (s.proc.exitCode !== null) return resolve();
    s.proc.removeAllListeners("exit");
    s.proc.on("exit", () => resolve());
    s.proc.kill("SIGTERM");
  });
}

async function addItem(url, cart, sku, cents) {
  const r = await fetch(`${url}/carts/${cart}/items`, {
    method: "POST", headers: { "Content-Type": "application/json" },
    body: JSON.stringify({ sku, name: sku, cents, qty: 1 }),
  });
  assert.equal(r.status, 202, "adding an item: HTTP " + r.status);
}

async function text(page, sel) {
  return (await page.locator(sel).textContent()).trim();
}

const cart = "e2e-" + Date.now().toString(36);
const began = Date.now();
let server = await startServer("127.0.0.1:0");
const browser = await chromium.launchPersistentContext(join(dir, "profile"), {
  executablePath: "/usr/bin/chromium",
  headless: true,
  args: ["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update",
    "--disable-sync", "--no-first-run"],
});
let failed = 0;
async function test(name, fn) {
  const start = Date.now();
  try {
    await fn();
    console.log("ok - " + name + ` (${Date.now() - start} ms)`);
  } catch (e) {
    failed++;
    console.log("not ok - " + name + "\n  " + String(e && e.stack || e).split("\n").join("\n  "));
  }
}

try {
  console.log(`# server and browser started in ${Date.now() - began} ms`);
  const a = await browser.newPage();
  const b = await browser.newPage();
  for (const p of [a, b]) {
    p.on("pageerror", (e) => console.log("page error: " + e));
    await p.goto(`${server.url}/carts/${cart}`);
    await p.waitForFunction(() => document.getElementById("count").textContent === "0", null, { timeout: 10000 });
  }

  await test("an item added in one page shows in the other within a second", async () => {
    await a.click("button[data-sku=apple]");
    const start = Date.now();
    await b.waitForFunction(() => document.getElementById("count").textContent === "1", null, { timeout: 1000 });
    console.log(`  # shown in the other page after ${Date.now() - start} ms`);
    assert.equal(await text(b, "#total"), "1.25");
    // The clicking page learns of its own item the same way (its frame),
    // which may land after the other page's: wait for it too.
    await a.waitForFunction(() => document.getElementById("count").textContent === "1", null, { timeout: 1000 });
  });

  await test("the server restarted while a page is open: the page resumes and is correct", async () => {
    const addr = new URL(server.url).host;
    await stopServer(server);
    await b.waitForFunction(() => document.getElementById("conn").textContent !== "open", null, { timeout: 10000 });
    server = await startServer(addr);
    await b.waitForFunction(() => document.getElementById("conn").textContent === "open", null, { timeout: 20000 });
    await addItem(server.url, cart, "cheese", 799);
    await b.waitForFunction(() => document.getElementById("count").textContent === "2", null, { timeout: 10000 });
    const state = await (await fetch(`${server.url}/carts/${cart}/state`)).json();
    const count = Object.values(state.items).reduce((n, l) => n + l.qty, 0);
    assert.equal(await text(b, "#count"), String(count));
    assert.equal(await text(b, "#total"), "9.24");
    assert.equal(await text(b, "#status"), state.status);
    await a.waitForFunction(() => document.getElementById("total").textContent === "9.24", null, { timeout: 10000 });
  });

  await test("a tampered token is refused on the page", async () => {
    const shown = await a.evaluate(async (cart) => {
      const tok = await fetch(`/carts/${cart}/token`).then((r) => r.text());
      const last = tok.slice(-1) === "A" ? "B" : "A";
      const el = document.createElement("p");
      el.id = "tampered";
      el.setAttribute("data-realtime-error", "");
      document.body.append(el);
      const rt = DuctusRealtime.connect((location.protocol === "https:" ? "wss://" : "ws://") + location.host + "/realtime");
      const sub = rt.subscribe({ type: "cart", id: cart }, { token: tok.slice(0, -1) + last });
      DuctusRealtime.bind(el, sub);
      return true;
    }, cart);
    assert.ok(shown);
    await a.waitForFunction(() => document.getElementById("tampered").textContent.startsWith("bad_token"), null, { timeout: 5000 });
    // The page's own subscription is untouched.
    await addItem(server.url, cart, "bread", 350);
    await a.waitForFunction(() => document.getElementById("count").textContent === "3", null, { timeout: 5000 });
  });
} finally {
  await browser.close();
  await stopServer(server);
  rmSync(dir, { recursive: true, force: true });
}
if (failed > 0) {
  console.log(`${failed} failed`);
  process.exit(1);
}
