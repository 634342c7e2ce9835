// The page of `obscura serve --ui`, driven end to end in headless Chromium as a person would use
// it: pick a database, type a key or an index, click, read the value; and a screenshot of the
// page, checked pixel by pixel where the result is drawn. Run by scripts/test: OBSCURA_CLI names
// a CLI built with the browser client's package (OBSCURA_WASM_PKG at build time).

import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { auditPath, buildDatabases, buildLog, leafHash, leaves, records, serve, treeHash } from "./fixtures.mjs";
import { Driver } from "./webdriver.mjs";
import { decodePng } from "./png.mjs";

const cli = process.env.OBSCURA_CLI;
assert.ok(cli, "set OBSCURA_CLI (scripts/test does)");

const folder = mkdtempSync(join(tmpdir(), "obscura-ui-"));
let service;
let url;
let driver;
let browser;

before(async () => {
  buildDatabases(cli, folder);
  buildLog(cli, folder);
  const files = ["phones", "records", "log"].map((name) => join(folder, `${name}.obs`));
  ({ process: service, url } = await serve(cli, ...files, "--ui"));
  driver = await Driver.start();
  browser = await driver.session(1000, 1000);
  await browser.open(`${url}/`);
});

after(async () => {
  await browser?.close();
  service?.kill();
  driver?.stop();
});

/** Picks database `name` in the page and waits until its setup is there to query. */
async function pick(name) {
  await browser.click(`#database option[value="${name}"]`);
  await browser.waitFor(
    "return document.getElementById('fetch').disabled ? null : document.getElementById('setup-status').textContent",
  );
}

/** Types `text` into the page's field, clicks the button and waits for what the page shows:
 * `{ state, title, value, steps }`. */
async function ask(text) {
  await browser.run("document.getElementById('result').hidden = true");
  await browser.type("#target", text);
  await browser.click("#fetch");
  return browser.waitFor(`
    const error = document.getElementById('error');
    if (!error.hidden) return { state: 'error', value: error.textContent };
    const result = document.getElementById('result');
    if (result.hidden) return null;
    return {
      state: result.dataset.state,
      title: document.getElementById('result-title').textContent,
      value: document.getElementById('value').textContent,
      steps: Array.from(document.querySelectorAll('#steps tbody tr'), (row) => Array.from(row.cells, (cell) => cell.textContent)),
    };`);
}

test("a person picks a database, types a key and reads its value", async () => {
  const names = await browser.waitFor(
    "const options = Array.from(document.querySelectorAll('#database option'), (o) => o.value); return options.length ? options : null",
  );
  assert.deepEqual(names, ["log", "phones", "records"]);
  await pick("phones");
  const status = await browser.run("return document.getElementById('setup-status').textContent");
  assert.match(status, /Public setup downloaded: .* SHA-256 checked/);
  assert.equal(await browser.run("const bar = document.getElementById('setup-progress'); return bar.value === bar.max"), true);

  const found = await ask("+15550042");
  assert.equal(found.state, "found", found.value);
  assert.equal(found.value, "caller 42");
  assert.deepEqual(found.steps.map((row) => row[0]), [
    "public setup (downloaded once)",
    "query: made in the browser",
    "answer: sent, answered, received",
    "decoded in the browser",
    "click to value",
    "the client's WebAssembly memory (its peak)",
  ]);
  assert.ok(found.steps.slice(0, -1).every((row) => /\d ms$/.test(row[2])), JSON.stringify(found.steps));
  assert.match(found.steps.at(-1)[1], /^\d+(\.\d+)? MB$/);

  const absent = await ask("+15559999");
  assert.equal(absent.state, "absent");
  assert.match(absent.value, /no such key/);
});

test("records by index, and a Merkle audit path verified against the root", async () => {
  await pick("records");
  const record = await ask("123");
  assert.equal(record.title, "Record 123");
  assert.equal(record.value, `${records.subarray(123 * 64, 124 * 64).toString("hex")}  (hex)`);
  const wrong = await ask("300");
  assert.equal(wrong.state, "error");
  assert.match(wrong.value, /out of range/);

  await pick("log");
  const proof = await ask("7");
  assert.equal(proof.title, "Audit path of leaf 7, verified against the root");
  const lines = proof.value.split("\n");
  assert.equal(lines[0], `leaf hash ${leafHash(leaves[7]).toString("hex")}`);
  assert.deepEqual(lines.slice(1, -1).map((line) => line.split(/\s+/).at(-1)), auditPath(7, leaves).map((h) => h.toString("hex")));
  assert.equal(lines.at(-1).split(/\s+/).at(-1), treeHash(leaves).toString("hex"));
  assert.match(proof.steps[1][0], /2 requests/);
});

test("a second visit takes the setup from the browser's cache, revalidated", async () => {
  await browser.open(`${url}/`);
  await pick("phones");
  const status = await browser.run("return document.getElementById('setup-status').textContent");
  assert.match(status, /from this browser's cache, revalidated/);
  const found = await ask("+15550007");
  assert.equal(found.value, "caller 7");
  assert.equal(found.steps[0][0], "public setup (cached, revalidated)");
});

test("a screenshot shows the value found, drawn as the page means it", async (t) => {
  await pick("phones");
  await ask("+15550042");
  const png = await browser.screenshot();
  const path = join(folder, "ui.png");
  writeFileSync(path, png);
  t.diagnostic(`screenshot: ${path}`);
  const image = decodePng(png);
  assert.deepEqual([image.width, image.height], await browser.run("return [innerWidth, innerHeight]"));
  const near = (pixel, expected) => pixel.every((c, i) => Math.abs(c - expected[i]) <= 8);

  // The page's background, the result's green bar (a value found) down its left side, and
  // dark text where the value is written.
  assert.ok(near(image.pixel(3, 3), [0xf6, 0xf8, 0xfa]), `background ${image.pixel(3, 3)}`);
  const result = await browser.rect("#result");
  for (const y of [0.25, 0.5, 0.75].map((f) => Math.round(result.y + f * result.height))) {
    const bar = image.pixel(Math.round(result.x) + 2, y);
    assert.ok(near(bar, [0x1a, 0x7f, 0x37]), `the result's bar at y=${y} is ${bar}`);
  }
  const value = await browser.rect("#value");
  let ink = 0;
  for (let y = Math.ceil(value.y); y < value.y + value.height; y++) {
    for (let x = Math.ceil(value.x); x < value.x + value.width; x++) {
      if (image.pixel(x, y).every((c) => c < 120)) ink++;
    }
  }
  assert.ok(ink > 40, `only ${ink} dark pixels where the value is written`);
});

test("a database behind a token appears, and answers, once the person gives the token", async () => {
  const tokens = join(folder, "tokens.txt");
  writeFileSync(tokens, "phones token-for-the-phones-db\n");
  const files = ["phones", "records"].map((name) => join(folder, `${name}.obs`));
  const guarded = await serve(cli, ...files, "--ui", "--tokens", tokens);
  try {
    await browser.open(`${guarded.url}/`);
    const names = () =>
      browser.run("return Array.from(document.querySelectorAll('#database option'), (o) => o.value)");
    await browser.waitFor("return document.getElementById('fetch').disabled ? null : true");
    assert.deepEqual(await names(), ["records"]);
    await browser.click("#access summary");
    await browser.type("#token", "token-for-the-phones-db\uE004"); // then Tab: the field is done
    await browser.waitFor("return document.querySelector('#database option[value=phones]') ? true : null");
    await pick("phones");
    const found = await ask("+15550042");
    assert.equal(found.value, "caller 42");
  } finally {
    guarded.process.kill();
  }
});
