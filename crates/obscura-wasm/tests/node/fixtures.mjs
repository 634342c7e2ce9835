// What both Node.js test files share: the databases they build with the CLI, and a running
// `obscura serve`.

import { spawn, execFileSync } from "node:child_process";
import { writeFileSync } from "node:fs";
import { createHash } from "node:crypto";
import { join } from "node:path";

/** 300 records of 64 bytes. */
export const records = Buffer.from(Array.from({ length: 64 * 300 }, (_, i) => (i * 37 + 5) % 251));

/** Runs `obscura build` with `args`; returns what it printed. */
export function build(cli, ...args) {
  return execFileSync(cli, ["build", ...args], { encoding: "utf8" });
}

/** Writes, in `folder`, `phones.obs` (1,000 keys `+1555NNNN` with values `caller N`) and
 * `records.obs` ([`records`], 64 bytes each); returns what the second build printed. */
export function buildDatabases(cli, folder) {
  const rows = ["phone,name"];
  for (let i = 0; i < 1000; i++) rows.push(`+1555${String(i).padStart(4, "0")},caller ${i}`);
  writeFileSync(join(folder, "phones.csv"), rows.join("\n") + "\n");
  writeFileSync(join(folder, "records.bin"), records);
  build(cli, "--input", join(folder, "phones.csv"), "--key-column", "phone", "--value-column", "name", "--out", join(folder, "phones.obs"));
  return build(cli, "--input", join(folder, "records.bin"), "--record-size", "64", "--out", join(folder, "records.obs"));
}

/** Starts `obscura serve` with `args` on a free loopback port; resolves with the process and
 * its URL once it serves. */
export async function serve(cli, ...args) {
  const process = spawn(cli, ["serve", ...args, "--listen", "127.0.0.1:0"]);
  const url = await new Promise((done, fail) => {
    let seen = "";
    process.stderr.on("data", (chunk) => {
      seen += chunk;
      const found = seen.match(/serving on (http:\/\/\S+)/);
      if (found) done(found[1]);
    });
    process.on("exit", (code) => fail(new Error(`obscura serve exited with ${code}: ${seen}`)));
  });
  return { process, url };
}

/** The leaves of `log.obs`: `cert 0` to `cert 99`. */
export const leaves = Array.from({ length: 100 }, (_, i) => `cert ${i}`);

/** Writes the Merkle tree of [`leaves`] as `log.obs` in `folder`. */
export function buildLog(cli, folder) {
  writeFileSync(join(folder, "leaves.txt"), leaves.join("\n") + "\n");
  execFileSync(cli, ["merkle", "build", "--leaves", join(folder, "leaves.txt"), "--out", join(folder, "log.obs")]);
}

const sha256 = (...parts) => createHash("sha256").update(Buffer.concat(parts)).digest();
const leafHash = (leaf) => sha256(Buffer.from([0]), Buffer.from(leaf));
const split = (n) => 2 ** Math.ceil(Math.log2(n) - 1); // the largest power of two below n

/** The RFC 6962 root of `data` (strings). */
export function treeHash(data) {
  if (data.length === 1) return leafHash(data[0]);
  const k = split(data.length);
  return sha256(Buffer.from([1]), treeHash(data.slice(0, k)), treeHash(data.slice(k)));
}

/** The RFC 6962 audit path of leaf `m` of `data`, leaf to root, and its leaf hash. */
export function auditPath(m, data) {
  if (data.length === 1) return [];
  const k = split(data.length);
  return m < k
    ? [...auditPath(m, data.slice(0, k)), treeHash(data.slice(k))]
    : [...auditPath(m - k, data.slice(k)), treeHash(data.slice(0, k))];
}

export { leafHash };
