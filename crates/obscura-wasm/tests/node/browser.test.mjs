// The package in a real browser: headless Chromium, driven over WebDriver by chromedriver,
// loads a page from one origin that fetches privately from `obscura serve` on another (so CORS
// is exercised), and the test reads what the page wrote. Run by scripts/test: OBSCURA_CLI and
// OBSCURA_WASM_PKG name the CLI and the package; CHROMIUM and CHROMEDRIVER the browser.

import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { createServer } from "node:http";
import { execFileSync } from "node:child_process";
import { mkdtempSync, readFileSync, existsSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, extname, resolve } from "node:path";
import { buildDatabases, records, serve } from "./fixtures.mjs";
import { Driver } from "./webdriver.mjs";

const cli = process.env.OBSCURA_CLI;
const pkg = process.env.OBSCURA_WASM_PKG;
assert.ok(cli && pkg, "set OBSCURA_CLI and OBSCURA_WASM_PKG (scripts/test does)");

const page = resolve(import.meta.dirname, "../browser/lookup.html");
const folder = mkdtempSync(join(tmpdir(), "obscura-browser-"));
const types = { ".html": "text/html", ".js": "text/javascript", ".wasm": "application/wasm" };
let service;
let site;
let driver;
let serviceUrl;
let siteUrl;

before(async () => {
  buildDatabases(cli, folder);

  // The page's own origin: the test page and the package, from a static file server.
  site = createServer((request, reply) => {
    const path = new URL(request.url, "http://x").pathname;
    const file = path === "/lookup.html" ? page : path.startsWith("/pkg/") ? join(pkg, path.slice(5)) : null;
    if (!file || !existsSync(file)) return reply.writeHead(404).end();
    reply.writeHead(200, { "Content-Type": types[extname(file)] ?? "application/octet-stream" }).end(readFileSync(file));
  });
  await new Promise((done) => site.listen(0, "127.0.0.1", done));
  siteUrl = `http://127.0.0.1:${site.address().port}`;

  const files = [join(folder, "phones.obs"), join(folder, "records.obs")];
  ({ process: service, url: serviceUrl } = await serve(cli, ...files, "--cors-origin", siteUrl));
  driver = await Driver.start();
});

after(() => {
  service?.kill();
  site?.close();
  driver?.stop();
});

/** What the page at `url` writes into its result element, once it has written it, in the
 * browser session `browser`. */
async function resultIn(browser, url) {
  await browser.open(url);
  const text = await browser.waitFor(
    "const text = document.getElementById('result').textContent; return text === 'running' ? null : text",
  );
  return JSON.parse(text);
}

/** What the page at `url` writes, in a browser session of its own. */
async function pageResult(url) {
  const browser = await driver.session();
  try {
    return await resultIn(browser, url);
  } finally {
    await browser.close();
  }
}
test("a page fetches a key's value and a record privately, across origins", async () => {
  const query = new URLSearchParams({ server: serviceUrl, pkg: `${siteUrl}/pkg` });
  const result = await pageResult(`${siteUrl}/lookup.html?${query}`);
  assert.equal(result.error, undefined, result.error);
  assert.equal(result.found, "caller 42");
  assert.equal(result.absent, true);
  assert.deepEqual(result.record, Array.from(records.subarray(123 * 64, 124 * 64)));
  assert.deepEqual(result.cached, [false, true], "the second connection revalidates the cached setup");
});

test("a page of an origin the service does not allow is refused by the browser", async () => {
  const query = new URLSearchParams({ server: serviceUrl.replace("127.0.0.1", "localhost"), pkg: `${siteUrl}/pkg` });
  const result = await pageResult(`${siteUrl.replace("127.0.0.1", "localhost")}/lookup.html?${query}`);
  assert.match(result.error, /fetch/i);
});

test("a setup cached in IndexedDB is brought up to date by the service's patches", async () => {
  const browser = await driver.session();
  try {
    const query = new URLSearchParams({ server: serviceUrl, pkg: `${siteUrl}/pkg`, record: "200" });
    const page = `${siteUrl}/lookup.html?${query}`;
    const first = await resultIn(browser, page);
    assert.equal(first.error, undefined, first.error);
    assert.deepEqual(first.record, Array.from(records.subarray(200 * 64, 201 * 64)));
    assert.equal(first.patchBytes, null);
    const changed = Buffer.alloc(64, 0x5a);
    const changes = join(folder, "changes.jsonl");
    writeFileSync(changes, `{"op":"set","index":200,"value_hex":"${changed.toString("hex")}"}\n`);
    execFileSync(cli, ["update", "--db", join(folder, "records.obs"), "--changes", changes]);
    const before = await setupHash();
    service.kill("SIGHUP");
    for (let waited = 0; (await setupHash()) === before; waited += 50) {
      assert.ok(waited < 30_000, "the service did not reload the file");
      await new Promise((wait) => setTimeout(wait, 50));
    }
    const patched = await resultIn(browser, page);
    assert.equal(patched.error, undefined, patched.error);
    assert.deepEqual(patched.record, Array.from(changed));
    assert.ok(patched.patchBytes > 0 && patched.patchBytes < patched.setupBytes / 10, `${patched.patchBytes} bytes`);
    // The patched setup was kept: the next connection revalidates it.
    const again = await resultIn(browser, page);
    assert.equal(again.fromCache, true);
    assert.deepEqual(again.record, Array.from(changed));
  } finally {
    await browser.close();
  }
});

/** The setup SHA-256 the service lists for `records`. */
async function setupHash() {
  const list = await (await fetch(`${serviceUrl}/v1/databases`)).json();
  return list.find((entry) => entry.name === "records").setup_sha256;
}
