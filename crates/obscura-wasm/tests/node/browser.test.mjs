// The package in a real browser: headless Chromium, driven over WebDriver by chromedriver,
// loads a page from one origin that fetches privately from `obscura serve` on another (so CORS
// is exercised), and the test reads what the page wrote. Run by scripts/test: OBSCURA_CLI and
// OBSCURA_WASM_PKG name the CLI and the package; CHROMIUM and CHROMEDRIVER the browser.

import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { createServer } from "node:http";
import { mkdtempSync, readFileSync, existsSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, extname, resolve } from "node:path";
import { buildDatabases, records, serve } from "./fixtures.mjs";

const cli = process.env.OBSCURA_CLI;
const pkg = process.env.OBSCURA_WASM_PKG;
const chromium = process.env.CHROMIUM ?? "/usr/bin/chromium";
const chromedriver = process.env.CHROMEDRIVER ?? "/usr/bin/chromedriver";
assert.ok(cli && pkg, "set OBSCURA_CLI and OBSCURA_WASM_PKG (scripts/test does)");
for (const tool of [chromium, chromedriver]) {
  assert.ok(existsSync(tool), `no ${tool} (scripts/test installs Debian's chromium and chromium-driver)`);
}

const page = resolve(import.meta.dirname, "../browser/lookup.html");
const folder = mkdtempSync(join(tmpdir(), "obscura-browser-"));
const types = { ".html": "text/html", ".js": "text/javascript", ".wasm": "application/wasm" };
let service;
let site;
let driver;
let driverUrl;
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

  driver = spawn(chromedriver, ["--port=0"], { stdio: ["ignore", "pipe", "inherit"] });
  driverUrl = await new Promise((done, fail) => {
    let seen = "";
    driver.stdout.on("data", (chunk) => {
      seen += chunk;
      const found = seen.match(/started successfully on port (\d+)/);
      if (found) done(`http://127.0.0.1:${found[1]}`);
    });
    driver.on("exit", (code) => fail(new Error(`chromedriver exited with ${code}: ${seen}`)));
  });
});

after(() => {
  service?.kill();
  site?.close();
  driver?.kill();
});

/** One WebDriver command: its value, or an error with the driver's message. */
async function webdriver(method, path, body) {
  const reply = await fetch(`${driverUrl}${path}`, {
    method,
    headers: { "Content-Type": "application/json" },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const { value } = await reply.json();
  if (!reply.ok) throw new Error(`webdriver ${path}: ${value.message}`);
  return value;
}

/** What the page at `url` writes into its result element, once it has written it. */
async function pageResult(url) {
  const profile = mkdtempSync(join(tmpdir(), "obscura-chromium-"));
  const { sessionId } = await webdriver("POST", "/session", {
    capabilities: {
      alwaysMatch: {
        "goog:chromeOptions": {
          binary: chromium,
          args: [
            "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
            "--disable-background-networking", "--disable-component-update", "--disable-sync",
            `--user-data-dir=${profile}`,
          ],
        },
      },
    },
  });
  try {
    await webdriver("POST", `/session/${sessionId}/url`, { url });
    const deadline = Date.now() + 60_000;
    for (;;) {
      const text = await webdriver("POST", `/session/${sessionId}/execute/sync`, {
        script: "return document.getElementById('result').textContent",
        args: [],
      });
      if (text !== "running") return JSON.parse(text);
      assert.ok(Date.now() < deadline, "the page did not finish within 60 s");
      await new Promise((wait) => setTimeout(wait, 100));
    }
  } finally {
    await webdriver("DELETE", `/session/${sessionId}`);
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
