// Headless Chromium driven over WebDriver by chromedriver (Debian's chromium and
// chromium-driver; CHROMIUM and CHROMEDRIVER name others), for the browser tests.

import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { mkdtempSync, existsSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

const chromium = process.env.CHROMIUM ?? "/usr/bin/chromium";
const chromedriver = process.env.CHROMEDRIVER ?? "/usr/bin/chromedriver";

/** A running chromedriver; `session()` opens a browser. */
export class Driver {
  #process;
  #url;

  /** Starts chromedriver on a free port. */
  static async start() {
    for (const tool of [chromium, chromedriver]) {
      assert.ok(existsSync(tool), `no ${tool} (scripts/test installs Debian's chromium and chromium-driver)`);
    }
    const driver = new Driver();
    driver.#process = spawn(chromedriver, ["--port=0"], { stdio: ["ignore", "pipe", "inherit"] });
    driver.#url = await new Promise((done, fail) => {
      let seen = "";
      driver.#process.stdout.on("data", (chunk) => {
        seen += chunk;
        const found = seen.match(/started successfully on port (\d+)/);
        if (found) done(`http://127.0.0.1:${found[1]}`);
      });
      driver.#process.on("exit", (code) => fail(new Error(`chromedriver exited with ${code}: ${seen}`)));
    });
    return driver;
  }

  /** One WebDriver command: its value, or an error with the driver's message. */
  async command(method, path, body) {
    const reply = await fetch(`${this.#url}${path}`, {
      method,
      headers: { "Content-Type": "application/json" },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    const { value } = await reply.json();
    if (!reply.ok) throw new Error(`webdriver ${path}: ${value.message}`);
    return value;
  }

  /** A new headless browser of a fresh profile, its window `width` x `height`. */
  async session(width = 1000, height = 1000) {
    const profile = mkdtempSync(join(tmpdir(), "obscura-chromium-"));
    const { sessionId } = await this.command("POST", "/session", {
      capabilities: {
        alwaysMatch: {
          "goog:chromeOptions": {
            binary: chromium,
            args: [
              "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
              "--disable-background-networking", "--disable-component-update", "--disable-sync",
              "--hide-scrollbars", "--force-device-scale-factor=1", `--window-size=${width},${height}`,
              `--user-data-dir=${profile}`,
            ],
          },
        },
      },
    });
    return new Session(this, sessionId);
  }

  stop() {
    this.#process?.kill();
  }
}

/** One browser. */
export class Session {
  #driver;
  #id;

  constructor(driver, id) {
    this.#driver = driver;
    this.#id = id;
  }

  #command(method, path, body) {
    return this.#driver.command(method, `/session/${this.#id}${path}`, body);
  }

  open(url) {
    return this.#command("POST", "/url", { url });
  }

  /** Runs `script` (a function body) in the page with `args`; its return value. */
  run(script, ...args) {
    return this.#command("POST", "/execute/sync", { script, args });
  }

  /** Polls `script` until it returns something other than null or undefined, for at most
   * `seconds`; returns that. */
  async waitFor(script, seconds = 60, ...args) {
    const deadline = Date.now() + seconds * 1000;
    for (;;) {
      const value = await this.run(script, ...args);
      if (value !== null && value !== undefined) return value;
      assert.ok(Date.now() < deadline, `the page did not get there within ${seconds} s: ${script}`);
      await new Promise((wait) => setTimeout(wait, 50));
    }
  }

  /** The element that `css` selects: its WebDriver reference. */
  async element(css) {
    const found = await this.#command("POST", "/element", { using: "css selector", value: css });
    return Object.values(found)[0];
  }

  /** Types `text` into the element `css` selects, as a person would, after clearing it. */
  async type(css, text) {
    const element = await this.element(css);
    await this.#command("POST", `/element/${element}/clear`, {});
    await this.#command("POST", `/element/${element}/value`, { text });
  }

  async click(css) {
    await this.#command("POST", `/element/${await this.element(css)}/click`, {});
  }

  /** Where the element `css` selects is on the page: `{ x, y, width, height }` (CSS pixels). */
  async rect(css) {
    return this.#command("GET", `/element/${await this.element(css)}/rect`);
  }

  /** A screenshot of the window, as PNG bytes. */
  async screenshot() {
    return Buffer.from(await this.#command("GET", "/screenshot"), "base64");
  }

  close() {
    return this.#command("DELETE", "");
  }
}
