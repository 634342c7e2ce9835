// Loading the WebAssembly module: an engine that cannot compile it gets an ObscuraError that
// names what the module needs, and a later load can still succeed.

import { test } from "node:test";
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { join } from "node:path";

const pkg = process.env.OBSCURA_WASM_PKG;
assert.ok(pkg, "set OBSCURA_WASM_PKG (scripts/test does)");
const { load, wasmMemoryBytes, ObscuraError } = await import(join(pkg, "obscura.js"));

test("a module the engine cannot compile is an ObscuraError naming WebAssembly SIMD", async () => {
  // A module header with a section this engine does not know, as an engine without SIMD sees
  // the client's SIMD instructions.
  const unknown = new Uint8Array([0, 0x61, 0x73, 0x6d, 1, 0, 0, 0, 0x7f, 0]);
  await assert.rejects(load(unknown), (error) => error instanceof ObscuraError && /WebAssembly SIMD/.test(error.message));
  assert.equal(wasmMemoryBytes(), 0);
  await load(readFileSync(join(pkg, "obscura_wasm_bg.wasm")));
  assert.ok(wasmMemoryBytes() > 0);
});
