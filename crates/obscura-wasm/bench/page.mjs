// Benchmark of the lookup page (`obscura serve --ui`) in headless Chromium: a keyword database
// of 2^20 keys and 1 KiB values (built once, kept in the work folder), the setup downloaded
// once, then lookups with the setup cached as a person makes them: click to value, read from
// the page's own timing, and the client's WebAssembly memory at its peak. Also the package's
// size gzipped, and a screenshot of the page after the last lookup (page.png in the work
// folder). Run by hand:
//
//   scripts/build-wasm && OBSCURA_WASM_PKG=$PWD/target/obscura-wasm-pkg cargo build --release --bin obscura
//   OBSCURA_CLI=target/release/obscura node crates/obscura-wasm/bench/page.mjs [work folder]
//
// KEYS and VALUE_BYTES change the database; LOOKUPS the lookups timed (default 20).

import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { createWriteStream, existsSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { cpus } from "node:os";
import { join, resolve } from "node:path";
import { gzipSync } from "node:zlib";
import { serve } from "../tests/node/fixtures.mjs";
import { Driver } from "../tests/node/webdriver.mjs";

const cli = process.env.OBSCURA_CLI;
assert.ok(cli, "set OBSCURA_CLI to an obscura built with OBSCURA_WASM_PKG");
const root = resolve(import.meta.dirname, "../../..");
const folder = resolve(process.argv[2] ?? join(root, "target/wasm-bench"));
const keys = Number(process.env.KEYS ?? 2 ** 20);
const valueBytes = Number(process.env.VALUE_BYTES ?? 1024);
const lookups = Number(process.env.LOOKUPS ?? 20);
const name = `keys${keys}x${valueBytes}`;
mkdirSync(folder, { recursive: true });

const key = (i) => `+1${String(i).padStart(10, "0")}`;
const value = (i) => `value ${i} `.repeat(Math.ceil(valueBytes / 8)).slice(0, valueBytes);

const database = join(folder, `${name}.obs`);
if (!existsSync(database)) {
  const csv = join(folder, `${name}.csv`);
  const out = createWriteStream(csv);
  out.write("key,value\n");
  for (let i = 0; i < keys; i++) {
    if (!out.write(`${key(i)},${value(i)}\n`)) await new Promise((drained) => out.once("drain", drained));
  }
  await new Promise((closed) => out.end(closed));
  execFileSync(cli, ["build", "--input", csv, "--key-column", "key", "--value-column", "value", "--out", database], { stdio: "inherit" });
}

const { process: service, url } = await serve(cli, database, "--ui");
const driver = await Driver.start();
const browser = await driver.session(1000, 1000);
try {
  const ready = `return document.getElementById('fetch').disabled ? null : document.getElementById('setup-status').textContent`;
  await browser.open(`${url}/`);
  const download = await browser.waitFor(ready, 600);
  await browser.open(`${url}/`); // a second visit: the setup from IndexedDB, revalidated
  const cached = await browser.waitFor(ready, 600);
  assert.match(cached, /from this browser's cache/);

  const clickToValue = [];
  const steps = [[], [], []]; // making the query, its round trip, decoding
  let memory;
  for (let n = 0; n < lookups; n++) {
    const i = Math.floor(Math.random() * keys);
    await browser.run("document.getElementById('result').hidden = true");
    await browser.type("#target", key(i));
    await browser.click("#fetch");
    const shown = await browser.waitFor(`
      const result = document.getElementById('result');
      if (!document.getElementById('error').hidden) return { error: document.getElementById('error').textContent };
      if (result.hidden) return null;
      const rows = document.querySelectorAll('#steps tbody tr');
      const ms = (row) => parseFloat(rows[row].cells[2].textContent);
      return { value: document.getElementById('value').textContent, ms: Number(rows[rows.length - 2].dataset.ms), steps: [ms(1), ms(2), ms(3)], memory: rows[rows.length - 1].cells[1].textContent };`, 120);
    assert.equal(shown.error, undefined, shown.error);
    assert.equal(shown.value, value(i), `the value of ${key(i)}`);
    clickToValue.push(shown.ms);
    shown.steps.forEach((ms, step) => steps[step].push(ms));
    memory = shown.memory;
  }
  writeFileSync(join(folder, "page.png"), await browser.screenshot());
  const median = (values) => values.sort((a, b) => a - b)[values.length >> 1];
  clickToValue.sort((a, b) => a - b);
  const pkg = join(root, "target/obscura-wasm-pkg");
  const gz = (files) => files.reduce((sum, file) => sum + gzipSync(readFileSync(join(pkg, file)), { level: 9 }).length, 0);
  const info = (await (await fetch(`${url}/v1/databases`)).json())[0];
  const report = {
    machine: `${cpus()[0].model}, ${cpus().length} cores`,
    database: `${keys} keys, ${valueBytes}-byte values`,
    setupBytes: info.hint_bytes,
    queryBytes: info.query_bytes,
    answerBytes: info.answer_bytes,
    firstVisit: download,
    cachedVisit: cached,
    clickToValueMs: { median: clickToValue[clickToValue.length >> 1], min: clickToValue[0], max: clickToValue.at(-1), lookups },
    medianStepsMs: { makeQuery: median(steps[0]), roundTrip: median(steps[1]), decode: median(steps[2]) },
    wasmMemoryPeak: memory,
    packageGzipBytes: { wasm: gz(["obscura_wasm_bg.wasm"]), js: gz(["obscura.js", "obscura_wasm.js"]) },
  };
  console.log(JSON.stringify(report, null, 2));
} finally {
  await browser.close();
  driver.stop();
  service.kill();
}
