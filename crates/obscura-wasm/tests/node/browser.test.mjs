// The package in a real browser: headless Chromium loads a page from one origin that fetches
// privately from `obscura serve` on another (so CORS is exercised), and the test reads what the
// page wrote. Run by scripts/test: OBSCURA_CLI, OBSCURA_WASM_PKG and CHROMIUM name the tools.

import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { spawn, execFile } from "node:child_process";
import { createServer } from "node:http";
import { mkdtempSync, readFileSync, writeFileSync, existsSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, extname, resolve } from "node:path";
import { promisify } from "node:util";

const cli = process.env.OBSCURA_CLI;
const pkg = process.env.OBSCURA_WASM_PKG;
const chromium = process.env.CHROMIUM ?? "/usr/bin/chromium";
assert.ok(cli && pkg, "set OBSCURA_CLI and OBSCURA_WASM_PKG (scripts/test does)");
assert.ok(existsSync(chromium), `no Chromium at ${chromium} (scripts/test installs Debian's chromium)`);

const page = resolve(import.meta.dirname, "../browser/lookup.html");
const folder = mkdtempSync(join(tmpdir(), "obscura-browser-"));
const records = Buffer.from(Array.from({ length: 64 * 300 }, (_, i) => (i * 37 + 5) % 251));
const types = { ".html": "text/html", ".js": "text/javascript", ".wasm": "application/wasm" };
let service;
let site;
let serviceUrl;
let siteUrl;

before(async () => {
  const rows = ["phone,name"];
  for (let i = 0; i < 1000; i++) rows.push(`+1555${String(i).padStart(4, "0")},caller ${i}`);
  writeFileSync(join(folder, "phones.csv"), rows.join("\n") + "\n");
  writeFileSync(join(folder, "records.bin"), records);
  const build = (...args) => promisify(execFile)(cli, ["build", ...args]);
  await build("--input", join(folder, "phones.csv"), "--key-column", "phone", "--value-column", "name", "--out", join(folder, "phones.obs"));
  await build("--input", join(folder, "records.bin"), "--record-size", "64", "--out", join(folder, "records.obs"));

  // The page's own origin: the test page and the package, from a static file server.
  site = createServer((request, reply) => {
    const path = new URL(request.url, "http://x").pathname;
    const file = path === "/lookup.html" ? page : path.startsWith("/pkg/") ? join(pkg, path.slice(5)) : null;
    if (!file || !existsSync(file)) return reply.writeHead(404).end();
    reply.writeHead(200, { "Content-Type": types[extname(file)] ?? "application/octet-stream" }).end(readFileSync(file));
  });
  await new Promise((done) => site.listen(0, "127.0.0.1", done));
  siteUrl = `http://127.0.0.1:${site.address().port}`;

  service = spawn(cli, ["serve", join(folder, "phones.obs"), join(folder, "records.obs"), "--listen", "127.0.0.1:0", "--cors-origin", siteUrl]);
  serviceUrl = await new Promise((done, fail) => {
    let seen = "";
    service.stderr.on("data", (chunk) => {
      seen += chunk;
      const found = seen.match(/serving on (http:\/\/\S+)/);
      if (found) done(found[1]);
    });
    service.on("exit", (code) => fail(new Error(`obscura serve exited with ${code}: ${seen}`)));
  });
});

after(() => {
  service?.kill();
  site?.close();
});

/** The DOM of `url` once its scripts have run, from headless Chromium. */
async function dom(url) {
  const profile = mkdtempSync(join(tmpdir(), "obscura-chromium-"));
  const { stdout } = await promisify(execFile)(chromium, [
    "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
    "--disable-background-networking", "--disable-component-update", "--disable-sync",
    `--user-data-dir=${profile}`, "--virtual-time-budget=30000", "--dump-dom", url,
  ], { timeout: 120_000, maxBuffer: 1 << 24 });
  return stdout;
}

test("a page fetches a key's value and a record privately, across origins", async () => {
  const query = new URLSearchParams({ server: serviceUrl, pkg: `${siteUrl}/pkg` });
  const html = await dom(`${siteUrl}/lookup.html?${query}`);
  const text = html.match(/<pre id="result">([^<]*)<\/pre>/)[1].replaceAll("&quot;", '"');
  const result = JSON.parse(text);
  assert.equal(result.error, undefined, result.error);
  assert.equal(result.found, "caller 42");
  assert.equal(result.absent, true);
  assert.deepEqual(result.record, Array.from(records.subarray(123 * 64, 124 * 64)));
});

test("a page of an origin the service does not allow is refused by the browser", async () => {
  const query = new URLSearchParams({ server: serviceUrl.replace("127.0.0.1", "localhost"), pkg: `${siteUrl}/pkg` });
  const html = await dom(`${siteUrl.replace("127.0.0.1", "localhost")}/lookup.html?${query}`);
  const text = html.match(/<pre id="result">([^<]*)<\/pre>/)[1].replaceAll("&quot;", '"');
  assert.match(JSON.parse(text).error, /fetch/i);
});
