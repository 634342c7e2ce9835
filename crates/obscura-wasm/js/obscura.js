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

/** The IndexedDB database of cached setups, or null where there is none (Node.js, or a browser
 * that refuses storage, as private windows may). */
function openCache() {
  if (typeof indexedDB === "undefined") return Promise.resolve(null);
  return new Promise((resolve) => {
    const request = indexedDB.open("obscura-pir", 1);
    request.onupgradeneeded = () => request.result.createObjectStore("setups");
    request.onsuccess = () => resolve(request.result);
    request.onerror = () => resolve(null);
  });
}

/** Runs `action` on the setups store; resolves with its result (undefined on any failure: a
 * cache that fails is no cache). */
function withStore(cache, mode, action) {
  return new Promise((resolve) => {
    try {
      const request = action(cache.transaction("setups", mode).objectStore("setups"));
      request.onsuccess = () => resolve(request.result);
      request.onerror = () => resolve(undefined);
    } catch {
      resolve(undefined);
    }
  });
}

/** A SHA-256 in hex as the client compares it: lower case, without an ETag's quotes. */
function normalized(sha256) {
  return sha256.trim().replace(/^"|"$/g, "").toLowerCase();
}

/** A database served by `obscura serve`, its public setup downloaded and checked. */
export class Database {
  #url;
  #name;
  #options;
  #client;
  #fromCache = false;

  constructor(url, name, options) {
    this.#url = url.replace(/\/+$/, "");
    this.#name = name;
    this.#options = options;
  }

  /**
   * Connects to database `name` of the service at `url`: downloads its public setup and checks
   * it against its SHA-256 (`options.sha256` when pinned, else the reply's ETag). In a browser
   * the setup is kept in IndexedDB and revalidated with its hash (a 304 costs no download);
   * `cache: false` turns that off. Other options: `token` (a bearer token), `maxSetupBytes`,
   * `wasm` (see `load`).
   */
  static async connect(url, name, options = {}) {
    await load(options.wasm);
    const database = new Database(url, name, options);
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

  /** Whether the public setup came from the cache (revalidated with the service). */
  get fromCache() {
    return this.#fromCache;
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

  /** Uses `client` from now on, freeing the one it replaces (its setup's memory). */
  #replaceClient(client) {
    this.#client?.free();
    this.#client = client;
  }

  async #fetchSetup() {
    const url = `${this.#url}/v1/databases/${encodeURIComponent(this.#name)}/setup`;
    const pinned = this.#options.sha256 && normalized(this.#options.sha256);
    const cache = this.#options.cache === false ? null : await openCache();
    const cached = cache ? await withStore(cache, "readonly", (store) => store.get(url)) : undefined;
    const usable = cached && (!pinned || cached.sha256 === pinned);
    const headers = this.#headers(usable ? { "If-None-Match": `"${cached.sha256}"` } : {});
    // With a cache of its own, the client asks the service itself (the browser's HTTP cache
    // would turn a 304 into a 200 with the bytes it kept).
    const reply = await fetch(url, cache ? { headers, cache: "no-store" } : { headers });
    if (reply.status === 304 && usable) {
      this.#replaceClient(new PirClient(cached.bytes, cached.sha256));
      this.#fromCache = true;
      return;
    }
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
    const etag = reply.headers.get("ETag");
    const sha256 = pinned || (etag && normalized(etag));
    if (!sha256) throw new ObscuraError(`${url} sent no ETag and no sha256 is pinned: the setup cannot be checked`);
    this.#replaceClient(new PirClient(setup, sha256));
    this.#fromCache = false;
    if (cache) await withStore(cache, "readwrite", (store) => store.put({ sha256, bytes: setup }, url));
  }

  async #retrieve(makeQuery) {
    const url = `${this.#url}/v1/databases/${encodeURIComponent(this.#name)}/query`;
    for (let attempt = 0; ; attempt++) {
      const query = makeQuery(this.#client);
      try {
        const reply = await fetch(url, {
          method: "POST",
          headers: this.#headers({ "Content-Type": "application/octet-stream" }),
          body: query.bytes,
        });
        // 409: the database was replaced since its setup was fetched; fetch it again, once.
        if (reply.status !== 409 || attempt > 0) {
          if (!reply.ok) throw await refusal(reply, url);
          const answer = new Uint8Array(await reply.arrayBuffer());
          if (answer.length !== query.answerBytes) {
            throw new ObscuraError(`${url} answered ${answer.length} bytes where ${query.answerBytes} were due`);
          }
          return query.decode(answer);
        }
      } finally {
        query.free();
      }
      await this.#fetchSetup();
    }
  }
}

async function refusal(reply, url) {
  const reason = (await reply.text()).trim().split("\n")[0];
  return new ObscuraError(`${url}: ${reply.status} ${reason}`, reply.status);
}
