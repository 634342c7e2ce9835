/** Loads the WebAssembly module, once: from `wasm`, or from the file beside the package. */
export function load(wasm?: BufferSource | URL | string | Response | WebAssembly.Module): Promise<unknown>;

/** The largest public setup accepted unless told otherwise (1 GiB). */
export const DEFAULT_MAX_SETUP_BYTES: number;

/** An error of the service or of the client, with the service's one-line reason. */
export class ObscuraError extends Error {
  /** The HTTP status, when the service refused. */
  status?: number;
}

/** How to reach and check a database. */
export interface ConnectOptions {
  /** A bearer token, for databases behind tokens. */
  token?: string;
  /** The SHA-256 the public setup must have, in hex (else the reply's ETag is trusted). */
  sha256?: string;
  /** The largest public setup accepted, in bytes. */
  maxSetupBytes?: number;
  /** Keep the public setup in IndexedDB, revalidated by its hash (default: true in browsers). */
  cache?: boolean;
  /** Where the WebAssembly module comes from (see `load`). */
  wasm?: BufferSource | URL | string | Response | WebAssembly.Module;
}

/** A database served by `obscura serve`, its public setup downloaded and checked. */
export class Database {
  /** Connects to database `name` of the service at `url`. */
  static connect(url: string, name: string, options?: ConnectOptions): Promise<Database>;
  /** What the database serves. */
  readonly lookup: "index" | "keyword";
  /** Its records (index) or keys (keyword). */
  readonly items: number;
  /** Whether the public setup came from the cache (revalidated with the service). */
  readonly fromCache: boolean;
  /** Fetches record `index` of an index database privately. */
  get(index: number): Promise<Uint8Array>;
  /** Fetches the value under `key` of a keyword database privately; undefined when absent. */
  getKey(key: string | Uint8Array): Promise<Uint8Array | undefined>;
}
