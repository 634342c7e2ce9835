// What both Node.js test files share: the databases they build with the CLI, and a running
// `obscura serve`.

import { spawn, execFileSync } from "node:child_process";
import { writeFileSync } from "node:fs";
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
