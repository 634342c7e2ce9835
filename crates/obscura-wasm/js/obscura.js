// Obscura's PIR client for web pages and Node.js: fetches records and keys' values from
// `obscura serve` without the server learning which. The WebAssembly module is the client
// session (it accepts the setup, makes every request, decodes every reply and says when to
// fetch the setup again); this file carries its bytes over `fetch` and keeps setups in
// IndexedDB.

import init, { Client } from "./obscura_wasm.js";

/** The largest public setup accepted unless told otherwise (1 GiB). */
export const DEFAULT_MAX_SETUP_BYTES = 2 ** 30;

let loading;
let exports;

/**
 * Loads the WebAssembly module, once: from `wasm` (its bytes, a URL or a Response), or from
 * `obscura_wasm_bg.wasm` beside this file.
 */
export function load(wasm) {
  loading ??= init(wasm === undefined ? undefined : { module_or_path: wasm }).then(
    (loaded) => (exports = loaded),
    (error) => {
      loading = undefined;
      if (!(error instanceof WebAssembly.CompileError)) throw error;
      throw new ObscuraError(`this engine cannot run the client's WebAssembly, which needs WebAssembly SIMD (Chrome 91, Firefox 89, Safari 16.4, Node.js 16.4 or later): ${error.message}`);
    },
  );
  return loading;
}

/** Bytes of the WebAssembly module's memory: the most it has held so far, as a module's memory
 * grows and never shrinks (0 before `load`). */
export function wasmMemoryBytes() {
  return exports?.memory.buffer.byteLength ?? 0;
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

/** Runs `action` on the setups store; resolves with its result once the transaction has
 * committed, so that a setup written is there for the next visit even if this page is left at
 * once (undefined on any failure: a cache that fails is no cache). */
function withStore(cache, mode, action) {
  return new Promise((resolve) => {
    try {
      const transaction = cache.transaction("setups", mode);
      const request = action(transaction.objectStore("setups"));
      transaction.oncomplete = () => resolve(request.result);
      transaction.onabort = () => resolve(undefined);
    } catch {
      resolve(undefined);
    }
  });
}

/** The bytes of `hex`, a hash the service sent. */
function bytesOfHex(hex) {
  if (typeof hex !== "string" || !/^([0-9a-f]{2})*$/.test(hex)) throw new ObscuraError(`${hex} is not hex`);
  return Uint8Array.from(hex.match(/../g) ?? [], (pair) => parseInt(pair, 16));
}

/** A database served by `obscura serve`, its public setup downloaded and checked. */
export class Database {
  #url;
  #name;
  #options;
  #client;
  #lastLookup;
  #patchBytes;

  constructor(url, name, options) {
    this.#url = url.replace(/\/+$/, "");
    this.#name = name;
    this.#options = options;
    this.#client = new Client(name, options.sha256, options.maxSetupBytes ?? DEFAULT_MAX_SETUP_BYTES);
  }

  /**
   * Connects to database `name` of the service at `url`: downloads its public setup and checks
   * it against its SHA-256 (`options.sha256` when pinned, else the reply's ETag). In a browser
   * the setup is kept in IndexedDB and revalidated with its hash (a 304 costs no download; a
   * copy of an earlier version is brought up to date by the service's patches when it keeps
   * them);
   * `cache: false` turns that off. Other options: `token` (a bearer token), `maxSetupBytes`,
   * `onProgress(received, total)` (called as the setup arrives; `total` is undefined when the
   * service does not say), `wasm` (see `load`).
   */
  static async connect(url, name, options = {}) {
    await load(options.wasm);
    const database = new Database(url, name, options);
    await database.#fetchSetup();
    return database;
  }

  /** What the database serves: `"index"`, `"batch"`, `"keyword"` or `"audit-path"`. */
  get lookup() {
    return this.#client.lookup;
  }

  /** Its records (index), keys (keyword) or leaves (Merkle tree). */
  get items() {
    return this.#client.items;
  }

  /** The root of a Merkle tree (32 bytes); undefined for other databases. */
  get root() {
    return this.#client.root;
  }

  /** Bytes of the public setup. */
  get setupBytes() {
    return this.#client.setupBytes;
  }

  /** Whether the public setup came from the cache (revalidated with the service). */
  get fromCache() {
    return this.#client.fromCache;
  }

  /** Bytes of the patches that brought the cached setup up to date, when they did (the
   * service keeps patches of recent versions); undefined when the setup was cached or
   * downloaded whole. */
  get patchBytes() {
    return this.#patchBytes;
  }

  /** What the last `get`, `getKey` or `auditPath` cost: `{ requests, queryBytes, answerBytes,
   * queryMs, roundTripMs, decodeMs }` (sums over its requests). */
  get lastLookup() {
    return this.#lastLookup && { ...this.#lastLookup };
  }

  /** Fetches record `index` (from 0) of an index database privately; `undefined` when the
   * record was deleted. */
  async get(index) {
    return (await this.#lookup((client) => client.get(index))).value;
  }

  /**
   * Fetches the value under `key` (a string, as UTF-8, or bytes) of a keyword database
   * privately; `undefined` when the key is absent.
   */
  async getKey(key) {
    const bytes = typeof key === "string" ? new TextEncoder().encode(key) : key;
    return (await this.#lookup((client) => client.getKey(bytes))).value;
  }

  /**
   * Fetches the audit path of leaf `leaf` of a Merkle tree privately and verifies it against
   * the tree's root: `{ leaf, leafHash, path, root }`, the path's hashes leaf to root. Without
   * `options.leafHash` (32 bytes) the leaf's hash is fetched privately first, in a request of
   * its own, and proved by the path.
   */
  async auditPath(leaf, options = {}) {
    const found = await this.#lookup((client) => client.auditPath(leaf, options.leafHash, options.root));
    const path = [];
    for (let at = 0; at < found.value.length; at += 32) path.push(found.value.slice(at, at + 32));
    return { leaf, leafHash: found.leafHash, path, root: this.root };
  }

  /**
   * Proves that the Merkle tree's earlier version of `first` leaves, whose root was `firstRoot`
   * (32 bytes), is a prefix of the tree served: the log only grew (an RFC 6962 consistency
   * proof, verified against the root of this client's setup, fetched again first when the
   * served tree has grown since). Resolves `{ first, second, root, proof }`; rejects when the
   * proof fails.
   */
  async consistency(first, firstRoot) {
    for (let attempt = 0; ; attempt++) {
      const url = `${this.#url}/v1/databases/${encodeURIComponent(this.#name)}/consistency?first=${first}`;
      const reply = await fetch(url, { headers: this.#headers() });
      if (!reply.ok) throw new ObscuraError(`${url}: the service answered ${reply.status}: ${(await reply.text()).trim()}`, reply.status);
      const sent = await reply.json();
      const root = bytesOfHex(sent.root);
      const proof = sent.proof.map(bytesOfHex);
      const hashes = new Uint8Array(32 * proof.length);
      proof.forEach((hash, i) => hashes.set(hash, 32 * i));
      let current;
      try {
        current = this.#client.checkConsistency(first, firstRoot, sent.second, root, hashes);
      } catch (error) {
        throw new ObscuraError(error.message);
      }
      if (current) return { first, second: sent.second, root, proof };
      if (attempt > 0) throw new ObscuraError(`the proof goes to a tree of ${sent.second} leaves, not the one of the setup just fetched`);
      await this.#fetchSetup();
    }
  }

  #headers(extra = {}) {
    const headers = { ...extra };
    if (this.#options.token) headers.Authorization = `Bearer ${this.#options.token}`;
    return headers;
  }

  /** Fetches the public setup (offering the cached copy, when there is one, for revalidation
   * or for the patches from it to the current setup) and hands the reply to the client, which
   * checks it; keeps a new setup in the cache. Patches that do not apply cost a download. */
  async #fetchSetup() {
    const url = `${this.#url}/v1/databases/${encodeURIComponent(this.#name)}/setup`;
    const cache = this.#options.cache === false ? null : await openCache();
    const cached = cache ? await withStore(cache, "readonly", (store) => store.get(url)) : undefined;
    const revalidation = cached && this.#client.revalidation(cached.sha256);
    try {
      await this.#requestSetup(url, cache, revalidation ? cached : undefined, revalidation);
    } catch (error) {
      if (!revalidation || error.status !== undefined) throw error;
      await this.#requestSetup(url, cache, undefined, undefined);
    }
  }

  /** One request for the setup at `url`, offering `cached` (with ETag `revalidation`). */
  async #requestSetup(url, cache, cached, revalidation) {
    const offer = revalidation ? { "If-None-Match": revalidation, "A-IM": this.#client.patchIm } : {};
    const headers = this.#headers(offer);
    // With a cache of its own, the client asks the service itself (the browser's HTTP cache
    // would turn a 304 into a 200 with the bytes it kept).
    const reply = await fetch(url, cache ? { headers, cache: "no-store" } : { headers });
    let body;
    if (reply.status === 304) body = new Uint8Array();
    else if (reply.ok) body = await this.#download(reply);
    else body = new TextEncoder().encode(await reply.text());
    let fresh;
    try {
      fresh = this.#client.acceptSetup(url, reply.status, reply.headers.get("ETag") ?? undefined, body, cached?.bytes);
    } catch (error) {
      throw new ObscuraError(error.message, reply.ok ? undefined : reply.status);
    }
    this.#patchBytes = reply.status === 226 ? body.length : undefined;
    const setup = this.#client.takePatchedSetup() ?? body;
    if (fresh && cache) await withStore(cache, "readwrite", (store) => store.put({ sha256: this.#client.setupSha256, bytes: setup }, url));
  }

  /** The body of the setup's `reply`, read as it arrives (reporting progress), within the
   * size limit. */
  async #download(reply) {
    const limit = this.#client.maxSetupBytes;
    const tooLarge = (size) =>
      new ObscuraError(`the setup of ${this.#name} is ${size} bytes, more than the ${limit} allowed (maxSetupBytes)`);
    const announced = Number(reply.headers.get("Content-Length") ?? NaN);
    const total = Number.isSafeInteger(announced) ? announced : undefined;
    if (total > limit) throw tooLarge(total);
    const progress = this.#options.onProgress;
    const chunks = [];
    let received = 0;
    const reader = reply.body.getReader();
    for (;;) {
      const { done, value } = await reader.read();
      if (done) break;
      received += value.length;
      if (received > limit) {
        await reader.cancel();
        throw tooLarge(`more than ${limit}`);
      }
      chunks.push(value);
      progress?.(received, total);
    }
    const setup = new Uint8Array(received);
    let at = 0;
    for (const chunk of chunks) {
      setup.set(chunk, at);
      at += chunk.length;
    }
    return setup;
  }

  /** Runs the exchange `start` begins on the client: posts each request it makes to its
   * route and hands it the reply, fetching the setup again when it says so; returns what it
   * found, `{ value, leafHash }`. */
  async #lookup(start) {
    this.#lastLookup = undefined;
    let started = performance.now();
    const exchange = start(this.#client);
    try {
      for (;;) {
        const state = exchange.state;
        if (state === "done") return { value: exchange.value, leafHash: exchange.leafHash };
        if (state === "refresh") {
          await this.#fetchSetup();
          started = performance.now();
          this.#client.restart(exchange);
          continue;
        }
        const url = `${this.#url}/v1/databases/${encodeURIComponent(this.#name)}/${exchange.route}`;
        const body = exchange.body;
        const sent = performance.now();
        const reply = await fetch(url, {
          method: "POST",
          headers: this.#headers({ "Content-Type": "application/octet-stream" }),
          body,
        });
        const answer = new Uint8Array(await reply.arrayBuffer());
        const received = performance.now();
        try {
          this.#client.receive(exchange, url, reply.status, answer);
        } catch (error) {
          throw new ObscuraError(error.message, reply.ok ? undefined : reply.status);
        }
        const decoded = performance.now();
        this.#count(body.length, answer.length, sent - started, received - sent, decoded - received);
        started = decoded;
      }
    } finally {
      exchange.free();
    }
  }

  /** Adds one request's sizes and times to `lastLookup`. */
  #count(queryBytes, answerBytes, queryMs, roundTripMs, decodeMs) {
    const last = (this.#lastLookup ??= { requests: 0, queryBytes: 0, answerBytes: 0, queryMs: 0, roundTripMs: 0, decodeMs: 0 });
    last.requests += 1;
    last.queryBytes += queryBytes;
    last.answerBytes += answerBytes;
    last.queryMs += queryMs;
    last.roundTripMs += roundTripMs;
    last.decodeMs += decodeMs;
  }
}
