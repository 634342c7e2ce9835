/** Loads the WebAssembly module, once: from `wasm`, or from the file beside the package. */
export function load(wasm?: BufferSource | URL | string | Response | WebAssembly.Module): Promise<unknown>;

/** Bytes of the WebAssembly module's memory: the most it has held so far (0 before `load`). */
export function wasmMemoryBytes(): number;

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
  /** Bytes of the WebAssembly module's memory: the most it has held so far (0 before `load`). */
export function wasmMemoryBytes(): number;

/** The largest public setup accepted, in bytes. */
  maxSetupBytes?: number;
  /** Keep the public setup in IndexedDB, revalidated by its hash (default: true in browsers). */
  cache?: boolean;
  /** Called as the public setup arrives; `total` is undefined when the service does not say. */
  onProgress?: (received: number, total: number | undefined) => void;
  /** Where the WebAssembly module comes from (see `load`). */
  wasm?: BufferSource | URL | string | Response | WebAssembly.Module;
}

/** What a lookup cost: sums over its requests (two for an audit path whose leaf hash is
 * fetched too). */
export interface LookupCost {
  /** Requests sent. */
  requests: number;
  /** Bytes of the queries sent. */
  queryBytes: number;
  /** Bytes of the answers received. */
  answerBytes: number;
  /** Milliseconds spent making the queries. */
  queryMs: number;
  /** Milliseconds from sending each query to holding its answer. */
  roundTripMs: number;
  /** Milliseconds spent decoding the answers. */
  decodeMs: number;
}

/** A leaf's audit path, verified against the tree's root. */
/** A verified consistency proof: the tree of `first` leaves is a prefix of the one served. */
export interface Consistency {
  /** The earlier version's leaves. */
  first: number;
  /** The served tree's leaves. */
  second: number;
  /** The served tree's root. */
  root: Uint8Array;
  /** The proof's hashes (RFC 6962). */
  proof: Uint8Array[];
}

export interface AuditPath {
  /** The leaf's index. */
  leaf: number;
  /** The leaf's hash, SHA-256(0x00 ‖ data). */
  leafHash: Uint8Array;
  /** The path's hashes, leaf to root (RFC 6962). */
  path: Uint8Array[];
  /** The tree's root. */
  root: Uint8Array;
}

/** A database served by `obscura serve`, its public setup downloaded and checked. */
export class Database {
  /** Connects to database `name` of the service at `url`. */
  static connect(url: string, name: string, options?: ConnectOptions): Promise<Database>;
  /** What the database serves. */
  readonly lookup: "index" | "batch" | "keyword" | "audit-path";
  /** Its records (index), keys (keyword) or leaves (Merkle tree). */
  readonly items: number;
  /** The root of a Merkle tree; undefined for other databases. */
  readonly root: Uint8Array | undefined;
  /** Bytes of the public setup. */
  readonly setupBytes: number;
  /** What the last lookup cost. */
  readonly lastLookup: LookupCost | undefined;
  /** Whether the public setup came from the cache (revalidated with the service). */
  readonly fromCache: boolean;
  /** Bytes of the patches that brought the cached setup up to date, when they did. */
  readonly patchBytes: number | undefined;
  /** Fetches record `index` of an index database privately; undefined when it was deleted. */
  get(index: number): Promise<Uint8Array | undefined>;
  /** Fetches the value under `key` of a keyword database privately; undefined when absent. */
  getKey(key: string | Uint8Array): Promise<Uint8Array | undefined>;
  /** Fetches the audit path of leaf `leaf` of a Merkle tree privately, verified against its
   * root; without `leafHash` the leaf's hash is fetched privately first. */
  auditPath(leaf: number, options?: { leafHash?: Uint8Array; root?: Uint8Array }): Promise<AuditPath>;
  /** Proves that the tree's earlier version of `first` leaves, with root `firstRoot`, is a
   * prefix of the tree served (RFC 6962 consistency: the log only grew). */
  consistency(first: number, firstRoot: Uint8Array): Promise<Consistency>;
}
