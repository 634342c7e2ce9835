// The browser client's JavaScript API, run in Node.js against a real `obscura serve`: the
// WebAssembly module makes every query and decodes every answer, fetch carries them.
// Run by scripts/test: OBSCURA_CLI and OBSCURA_WASM_PKG name the CLI and the built package.

import { execFileSync } from "node:child_process";
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { auditPath, build as buildWith, buildDatabases, buildLog, leafHash, leaves, records, serve, treeHash } from "./fixtures.mjs";

const cli = process.env.OBSCURA_CLI;
const pkg = process.env.OBSCURA_WASM_PKG;
assert.ok(cli && pkg, "set OBSCURA_CLI and OBSCURA_WASM_PKG (scripts/test does)");
const { Database, ObscuraError } = await import(join(pkg, "obscura.js"));
const wasm = readFileSync(join(pkg, "obscura_wasm_bg.wasm"));

const folder = mkdtempSync(join(tmpdir(), "obscura-wasm-"));
let server;
let url;
let setupSha256;

const build = (...args) => buildWith(cli, ...args);

before(async () => {
  const report = buildDatabases(cli, folder);
  setupSha256 = report.match(/setup sha256 ([0-9a-f]{64})/)[1];
  build("--input", join(folder, "records.bin"), "--record-size", "64", "--scheme", "ypir", "--out", join(folder, "ypir.obs"));
  build("--input", join(folder, "records.bin"), "--record-size", "64", "--scheme", "double", "--out", join(folder, "double.obs"));
  // The trivial scheme that scripts/test registers in the CLI and this package by one line.
  build("--input", join(folder, "records.bin"), "--record-size", "64", "--scheme", "whole", "--out", join(folder, "whole.obs"));
  buildLog(cli, folder);
  // The same tree with room to grow to 256 leaves.
  execFileSync(cli, ["merkle", "build", "--leaves", join(folder, "leaves.txt"), "--capacity", "256", "--out", join(folder, "grow.obs")]);
  const values = Array.from({ length: 300 }, (_, i) => `value ${i}`);
  writeFileSync(join(folder, "values.csv"), ["value", ...values].join("\n") + "\n");
  build("--input", join(folder, "values.csv"), "--column", "value", "--value-bytes", "32", "--out", join(folder, "values.obs"));
  const callers = Array.from({ length: 200 }, (_, i) => `+1555${String(i).padStart(4, "0")},caller ${i}`);
  writeFileSync(join(folder, "callers.csv"), ["phone,name", ...callers].join("\n") + "\n");
  build("--input", join(folder, "callers.csv"), "--key-column", "phone", "--value-column", "name", "--out", join(folder, "callers.obs"));
  const files = ["phones", "records", "ypir", "double", "whole", "log", "values", "grow", "callers"].map((name) => join(folder, `${name}.obs`));
  ({ process: server, url } = await serve(cli, ...files, "--cors-origin", "*"));
});

after(() => server?.kill());

test("keyword lookups find values and report absent keys", async () => {
  const phones = await Database.connect(url, "phones", { wasm });
  assert.equal(phones.lookup, "keyword");
  assert.equal(phones.items, 1000);
  assert.equal(new TextDecoder().decode(await phones.getKey("+15550042")), "caller 42");
  assert.equal(await phones.getKey("+15559999"), undefined);
  await assert.rejects(phones.get(0), /keyword database/);
});

test("every index scheme returns its records, a scheme registered in one line among them", async () => {
  for (const name of ["records", "ypir", "double", "whole"]) {
    const database = await Database.connect(url, name, { wasm });
    assert.equal(database.lookup, "index");
    for (const index of [0, 123, 299]) {
      const record = await database.get(index);
      assert.deepEqual(Buffer.from(record), records.subarray(index * 64, index * 64 + 64), `${name} ${index}`);
    }
    await assert.rejects(database.get(300), /out of range/);
  }
});

test("audit paths of a Merkle tree are fetched privately and verified", async () => {
  const log = await Database.connect(url, "log", { wasm });
  assert.equal(log.lookup, "audit-path");
  assert.equal(log.items, leaves.length);
  assert.deepEqual(Buffer.from(log.root), treeHash(leaves));
  for (const leaf of [0, 37, 99]) {
    // Knowing only the index: the leaf's hash is fetched privately too, in a request of its own.
    const proof = await log.auditPath(leaf);
    assert.deepEqual(Buffer.from(proof.leafHash), leafHash(leaves[leaf]));
    assert.deepEqual(proof.path.map((hash) => Buffer.from(hash)), auditPath(leaf, leaves), `leaf ${leaf}`);
    assert.equal(log.lastLookup.requests, 2);
    const known = await log.auditPath(leaf, { leafHash: leafHash(leaves[leaf]) });
    assert.deepEqual(known.path, proof.path);
    assert.equal(log.lastLookup.requests, 1);
  }
  await assert.rejects(log.auditPath(1, { leafHash: leafHash("not a leaf") }), /does not verify/);
  await assert.rejects(log.auditPath(100), /out of range/);
  await assert.rejects(log.getKey("cert 1"), /Merkle tree/);
});

test("the setup's download reports its progress, and each lookup its cost", async () => {
  const seen = [];
  const records = await Database.connect(url, "records", { wasm, onProgress: (received, total) => seen.push([received, total]) });
  assert.ok(seen.length > 0);
  assert.deepEqual(seen.at(-1), [records.setupBytes, records.setupBytes]);
  assert.ok(seen.every(([received], i) => i === 0 || received > seen[i - 1][0]));
  await records.get(3);
  const cost = records.lastLookup;
  const info = (await (await fetch(`${url}/v1/databases`)).json()).find((entry) => entry.name === "records");
  assert.deepEqual([cost.requests, cost.queryBytes, cost.answerBytes], [1, info.query_bytes, info.answer_bytes]);
  assert.ok([cost.queryMs, cost.roundTripMs, cost.decodeMs].every((ms) => ms >= 0 && ms < 60_000));
});

test("a pinned setup hash is enforced", async () => {
  const pinned = await Database.connect(url, "records", { wasm, sha256: setupSha256 });
  assert.equal((await pinned.get(7)).length, 64);
  await assert.rejects(Database.connect(url, "records", { wasm, sha256: "00".repeat(32) }), /the pinned SHA-256 says 0{64}: refused/);
  await assert.rejects(Database.connect(url, "records", { wasm, maxSetupBytes: 1000 }), /maxSetupBytes/);
});

test("a database replaced while connected is fetched again, once", async () => {
  const database = await Database.connect(url, "double", { wasm });
  assert.deepEqual(Buffer.from(await database.get(5)), records.subarray(5 * 64, 6 * 64));
  const replaced = Buffer.from(records.map((byte) => byte ^ 0xff));
  writeFileSync(join(folder, "replaced.bin"), replaced);
  build("--input", join(folder, "replaced.bin"), "--record-size", "64", "--scheme", "double", "--out", join(folder, "double.obs"));
  await reload("double");
  assert.deepEqual(Buffer.from(await database.get(5)), replaced.subarray(5 * 64, 6 * 64));
});

test("a database updated while connected serves its changes, a deleted record undefined", async () => {
  const database = await Database.connect(url, "values", { wasm });
  const text = (bytes) => new TextDecoder().decode(bytes);
  assert.equal(text(await database.get(3)), "value 3");
  const changes = join(folder, "changes.jsonl");
  writeFileSync(changes, '{"op":"set","index":3,"value":"value 3, changed"}\n{"op":"delete","index":4}\n');
  execFileSync(cli, ["update", "--db", join(folder, "values.obs"), "--changes", changes]);
  await reload("values");
  // The setup held is version 0's: the first query is refused and the new setup fetched.
  assert.equal(text(await database.get(3)), "value 3, changed");
  assert.equal(await database.get(4), undefined);
  assert.equal(text(await database.get(5)), "value 5");
  assert.equal((await (await fetch(`${url}/v1/databases`)).json()).find((e) => e.name === "values").version, 1);
});

test("a YPIR database updated while connected keeps its setup and serves the new records", async () => {
  const database = await Database.connect(url, "ypir", { wasm });
  const held = await setupHash("ypir");
  const changed = Buffer.alloc(64, 7);
  const changes = join(folder, "ypir-changes.jsonl");
  writeFileSync(changes, `{"op":"set","index":5,"value_hex":"${changed.toString("hex")}"}\n`);
  execFileSync(cli, ["update", "--db", join(folder, "ypir.obs"), "--changes", changes]);
  server.kill("SIGHUP");
  // The setup held names the new version too: the same session reads the new record once the
  // service has reloaded the file.
  for (let waited = 0; !Buffer.from(await database.get(5)).equals(changed); waited += 50) {
    assert.ok(waited < 30_000, "the service did not reload the file");
    await new Promise((wait) => setTimeout(wait, 50));
  }
  assert.deepEqual(Buffer.from(await database.get(6)), records.subarray(6 * 64, 7 * 64));
  assert.equal(await setupHash("ypir"), held);
});

test("a keyword database updated while connected serves its upserts, a deleted key undefined", async () => {
  const callers = await Database.connect(url, "callers", { wasm });
  const text = (bytes) => new TextDecoder().decode(bytes);
  assert.equal(text(await callers.getKey("+15550007")), "caller 7");
  const changes = join(folder, "caller-changes.jsonl");
  writeFileSync(changes, ['{"op":"upsert","key":"+15550007","value":"a spammer"}', '{"op":"upsert","key":"+15559999","value":"new"}', '{"op":"delete","key":"+15550003"}'].join("\n") + "\n");
  execFileSync(cli, ["update", "--db", join(folder, "callers.obs"), "--changes", changes]);
  await reload("callers");
  // The setup held is version 0's, without a delta table: the first query is refused as stale.
  assert.equal(text(await callers.getKey("+15550007")), "a spammer");
  assert.equal(text(await callers.getKey("+15559999")), "new");
  assert.equal(await callers.getKey("+15550003"), undefined);
  assert.equal(text(await callers.getKey("+15550004")), "caller 4");
  assert.equal(await callers.getKey("+15558888"), undefined);
});

test("a Merkle tree grown while connected proves it only grew", async () => {
  const grow = await Database.connect(url, "grow", { wasm });
  const firstRoot = grow.root;
  assert.deepEqual(Buffer.from(firstRoot), treeHash(leaves));
  const more = Array.from({ length: 30 }, (_, i) => `cert ${100 + i}`);
  const changes = join(folder, "more-leaves.txt");
  writeFileSync(changes, more.join("\n") + "\n");
  execFileSync(cli, ["update", "--db", join(folder, "grow.obs"), "--changes", changes]);
  await reload("grow");
  // The setup held is of 100 leaves: the proof to 130 makes the client fetch the new one.
  const proved = await grow.consistency(100, firstRoot);
  const all = [...leaves, ...more];
  assert.equal(proved.second, 130);
  assert.deepEqual(Buffer.from(proved.root), treeHash(all));
  assert.deepEqual(Buffer.from(grow.root), treeHash(all));
  const path = await grow.auditPath(120, { leafHash: leafHash(all[120]) });
  assert.deepEqual(path.path.map((hash) => Buffer.from(hash)), auditPath(120, all));
  await assert.rejects(grow.consistency(100, treeHash(all)), /not proved a prefix/);
  await assert.rejects(grow.consistency(131, firstRoot), (error) => error instanceof ObscuraError && error.status === 400);
  const log = await Database.connect(url, "records", { wasm });
  await assert.rejects(log.consistency(1, firstRoot), /not a Merkle tree/);
});

// Sends the service SIGHUP and waits until it serves database `name`'s file as it now is.
async function reload(name) {
  const before = await setupHash(name);
  server.kill("SIGHUP");
  for (let waited = 0; (await setupHash(name)) === before; waited += 50) {
    assert.ok(waited < 30_000, "the service did not reload the file");
    await new Promise((wait) => setTimeout(wait, 50));
  }
}

async function setupHash(name) {
  const list = await (await fetch(`${url}/v1/databases`)).json();
  return list.find((entry) => entry.name === name).setup_sha256;
}

test("the service's refusals are ObscuraErrors with its reason", async () => {
  await assert.rejects(Database.connect(url, "absent", { wasm }), (error) => error instanceof ObscuraError && error.status === 404);
});

test("a sharded database is fetched through its gateway as one", async () => {
  const manifest = join(folder, "sharded.shards.json");
  const input = ["--input", join(folder, "records.bin"), "--record-size", "64"];
  build(...input, "--plan-shards", "2", "--out", manifest);
  const shards = [0, 1].map((i) => join(folder, `sharded.${i}.obs`));
  shards.forEach((shard, i) => build(...input, "--manifest", manifest, "--shard", `${i}/2`, "--out", shard));
  execFileSync(cli, ["shards", "seal", manifest, ...shards]);
  const servers = await serve(cli, ...shards);
  try {
    const gateway = await serve(cli, "--gateway", manifest, "--shard", `0=${servers.url}`, "--shard", `1=${servers.url}`, "--cors-origin", "*");
    try {
      const database = await Database.connect(gateway.url, "sharded", { wasm });
      assert.equal(database.lookup, "index");
      for (const index of [0, 150, 299]) {
        assert.deepEqual(Buffer.from(await database.get(index)), records.subarray(index * 64, (index + 1) * 64));
      }
    } finally {
      gateway.process.kill();
    }
  } finally {
    servers.process.kill();
  }
});
