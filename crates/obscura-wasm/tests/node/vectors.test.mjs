// The WebAssembly build of the client against the native build's vectors
// (tests/vectors/queries.json, made by tests/vectors.rs): fed the same secret stream through
// crypto.getRandomValues, it makes the same queries byte for byte and decodes the recorded
// answers to the same values. The databases' setups and answers come from the native test's
// run (OBSCURA_VECTORS_DIR, by default target/tmp/wasm-vectors; scripts/test runs that first).

import { test } from "node:test";
import assert from "node:assert/strict";
import { createCipheriv, createHash } from "node:crypto";
import { existsSync, readFileSync } from "node:fs";
import { join, resolve } from "node:path";

const pkg = process.env.OBSCURA_WASM_PKG;
assert.ok(pkg, "set OBSCURA_WASM_PKG (scripts/test does)");
const root = resolve(import.meta.dirname, "../../../..");
const folder = process.env.OBSCURA_VECTORS_DIR ?? join(root, "target/tmp/wasm-vectors");
const vectors = JSON.parse(readFileSync(resolve(import.meta.dirname, "../vectors/queries.json"), "utf8"));
const { load } = await import(join(pkg, "obscura.js"));
const { Client } = await import(join(pkg, "obscura_wasm.js"));
await load(readFileSync(join(pkg, "obscura_wasm_bg.wasm")));

const sha256 = (bytes) => createHash("sha256").update(bytes).digest("hex");
const hex = (text) => Uint8Array.from(Buffer.from(text, "hex"));

/** Runs `action` with crypto.getRandomValues drawing from the AES-128-CTR keystream of `key`
 * (a zero IV), the stream the native test installs in place of the OS generator. */
function withSecretStream(key, action) {
  const stream = createCipheriv("aes-128-ctr", hex(key), Buffer.alloc(16));
  const crypto = globalThis.crypto;
  crypto.getRandomValues = (array) => {
    const bytes = new Uint8Array(array.buffer, array.byteOffset, array.byteLength);
    bytes.set(stream.update(Buffer.alloc(bytes.length)));
    return array;
  };
  try {
    return action();
  } finally {
    delete crypto.getRandomValues; // the prototype's, the real one, again
  }
}

/** Starts the exchange a page starts for `target`. */
function begin(client, target) {
  if ("index" in target) return client.get(target.index);
  if ("key" in target) return client.getKey(new TextEncoder().encode(target.key));
  if ("auditPath" in target) return client.auditPath(target.auditPath, hex(target.leafHash));
  return client.auditPath(target.leafHash);
}

for (const vector of vectors) {
  test(`${vector.database} ${JSON.stringify(vector.target)}: the native client's query and value`, () => {
    const setupFile = join(folder, `${vector.database}.setup`);
    assert.ok(existsSync(setupFile), `no ${setupFile}: run cargo test -p obscura-wasm --test vectors first`);
    const setup = readFileSync(setupFile);
    assert.equal(sha256(setup), vector.setupSha256, "the setup file is not the vectors' (run the native test again)");
    // The client and its session are made in the stream too, as the native vectors are.
    const { client, exchange } = withSecretStream(vector.secretKey, () => {
      const client = new Client(vector.database, vector.setupSha256, 2 ** 30);
      client.acceptSetup("vectors", 200, undefined, setup, undefined);
      return { client, exchange: begin(client, vector.target) };
    });
    const bytes = exchange.body;
    assert.equal(bytes.length, vector.queryBytes);
    assert.equal(sha256(bytes), vector.querySha256, "the query differs from the native client's");
    const answer = readFileSync(join(folder, vector.answer));
    assert.equal(sha256(answer), vector.answerSha256);
    client.receive(exchange, "vectors", 200, answer);
    // A leaf hash request is the first of an audit path's two: its value is the hash learnt.
    const value = "auditPath" in vector.target || !("leafHash" in vector.target) ? exchange.value : exchange.leafHash;
    assert.equal(value === undefined ? null : Buffer.from(value).toString("hex"), vector.value);
    exchange.free();
    client.free();
  });
}

test("the secret stream is gone after each vector: secrets come from the OS again", () => {
  const a = new Uint8Array(32);
  const b = new Uint8Array(32);
  crypto.getRandomValues(a);
  crypto.getRandomValues(b);
  assert.notDeepEqual(a, b);
  assert.equal(Object.hasOwn(crypto, "getRandomValues"), false);
});
