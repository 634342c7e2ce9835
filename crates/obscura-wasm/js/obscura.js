// Obscura's PIR client for web pages and Node.js: fetches records and keys' values from
// `obscura serve` without the server learning which. The WebAssembly module does the
// cryptography; this file carries its bytes over `fetch`.

import init, { PirClient } from "./obscura_wasm.js";

/** The largest public setup accepted unless told otherwise (1 GiB). */
export const DEFAULT_MAX_SETUP_BYTES = 2 ** 30;

let loading;

/**
 * Loads the WebAssembly module, once: from `wasm` (its bytes, a URL or a Response), or from
 * `obscura_wasm_bg.wasm` beside this file.
 */
export function load(wasm) {
  loading ??= init(wasm === undefined ? undefined : { module_or_path: wasm });
  return loading;
}

/** An error of the service or of the client, with the service's one-line reason. */
export class ObscuraError extends Error {
  constructor(message, status) {
    super(message);
    this.name = "ObscuraError";
    this.status = status;
  }
}

/** A database served by `obscura serve`, its public setup downloaded and checked. */
export class Database {
  #url;
  #name;
  #options;
  #client;

  constructor(url, name, options, client) {
    this.#url = url.replace(/\/+$/, "");
    this.#name = name;
    this.#options = options;
    this.#client = client;
  }

  /**
   * Connects to database `name` of the service at `url`: downloads its public setup and checks
   * it against its SHA-256 (`options.sha256` when pinned, else the reply's ETag).
   * Options: `token` (a bearer token), `sha256` (hex), `maxSetupBytes`, `wasm` (see `load`).
   */
  static async connect(url, name, options = {}) {
    await load(options.wasm);
    const database = new Database(url, name, options, null);
    await database.#fetchSetup();
    return database;
  }

  /** What the database serves: `"index"` or `"keyword"`. */
  get lookup() {
    return this.#client.lookup;
  }

  /** Its records (index) or keys (keyword). */
  get items() {
    return this.#client.items;
  }

  /** Fetches record `index` (from 0) of an index database privately. */
  async get(index) {
    return this.#retrieve((client) => client.queryIndex(index));
  }

  /**
   * Fetches the value under `key` (a string, as UTF-8, or bytes) of a keyword database
   * privately; `undefined` when the key is absent.
   */
  async getKey(key) {
    const bytes = typeof key === "string" ? new TextEncoder().encode(key) : key;
    return this.#retrieve((client) => client.queryKey(bytes));
  }

  #headers(extra = {}) {
    const headers = { ...extra };
    if (this.#options.token) headers.Authorization = `Bearer ${this.#options.token}`;
    return headers;
  }

  async #fetchSetup() {
    const url = `${this.#url}/v1/databases/${encodeURIComponent(this.#name)}/setup`;
    const reply = await fetch(url, { headers: this.#headers() });
    if (!reply.ok) throw await refusal(reply, url);
    const limit = this.#options.maxSetupBytes ?? DEFAULT_MAX_SETUP_BYTES;
    const length = Number(reply.headers.get("Content-Length") ?? NaN);
    if (length > limit) {
      throw new ObscuraError(`the setup of ${this.#name} is ${length} bytes, more than the ${limit} allowed (maxSetupBytes)`);
    }
    const setup = new Uint8Array(await reply.arrayBuffer());
    if (setup.length > limit) {
      throw new ObscuraError(`the setup of ${this.#name} is more than the ${limit} bytes allowed (maxSetupBytes)`);
    }
    const sha256 = this.#options.sha256 ?? reply.headers.get("ETag");
    if (!sha256) throw new ObscuraError(`${url} sent no ETag and no sha256 is pinned: the setup cannot be checked`);
    this.#client = new PirClient(setup, sha256);
  }

  async #retrieve(makeQuery) {
    for (let attempt = 0; ; attempt++) {
      const query = makeQuery(this.#client);
      const url = `${this.#url}/v1/databases/${encodeURIComponent(this.#name)}/query`;
      const reply = await fetch(url, {
        method: "POST",
        headers: this.#headers({ "Content-Type": "application/octet-stream" }),
        body: query.bytes,
      });
      // 409: the database was replaced since its setup was fetched; fetch it again, once.
      if (reply.status === 409 && attempt === 0) {
        query.free();
        await this.#fetchSetup();
        continue;
      }
      if (!reply.ok) throw await refusal(reply, url);
      const answer = new Uint8Array(await reply.arrayBuffer());
      if (answer.length !== query.answerBytes) {
        throw new ObscuraError(`${url} answered ${answer.length} bytes where ${query.answerBytes} were due`);
      }
      try {
        return query.decode(answer);
      } finally {
        query.free();
      }
    }
  }
}

async function refusal(reply, url) {
  const reason = (await reply.text()).trim().split("\n")[0];
  return new ObscuraError(`${url}: ${reply.status} ${reason}`, reply.status);
}
