import { sameData, type ReadEpoch } from '../store/snapshots.js';

/** A rendered read answer: the JSON text and, for a task, its ETag. */
export interface RenderedRead {
  readonly body: string;
  readonly etag?: string;
}

interface Entry extends RenderedRead {
  readonly epoch: ReadEpoch;
  /** The answer holds for clock readings in [from, until). */
  readonly from: number;
  readonly until: number;
}

/** Rendered bytes a service keeps by default; the oldest entries go first. */
const RESPONSE_CACHE_BYTES = 32 * 1024 * 1024;

/**
 * Rendered answers of the read operations, reused while nothing they were read from has changed
 * (the same data epoch: no write by this connection, no commit by another) and the clock is still
 * inside the interval the use case declared them valid for (leases expiring, start dates arriving,
 * elapsed time, plan age and source freshness all end it). Readers with different views of the
 * same resource (scopes, resource) use different keys. Entries are bounded by their total size.
 */
export class ResponseCache {
  readonly #entries = new Map<string, Entry>();
  readonly #maxBytes: number;
  #bytes = 0;

  constructor(maxBytes = RESPONSE_CACHE_BYTES) {
    this.#maxBytes = maxBytes;
  }

  /** The answer stored under `key` if it still holds at `epoch` and `now`. */
  get(key: string, epoch: ReadEpoch, now: number): RenderedRead | undefined {
    const entry = this.#entries.get(key);
    if (entry === undefined) return undefined;
    if (sameData(entry.epoch, epoch) && now >= entry.from && now < entry.until) return entry;
    this.#remove(key, entry);
    return undefined;
  }

  /** Stores an answer read at `epoch` and `now`, valid until `until` (exclusive). */
  set(key: string, epoch: ReadEpoch, now: number, until: number, read: RenderedRead): void {
    const previous = this.#entries.get(key);
    if (previous !== undefined) this.#remove(key, previous);
    if (!(until > now) || read.body.length > this.#maxBytes) return;
    this.#entries.set(key, { ...read, epoch, from: now, until });
    this.#bytes += read.body.length;
    for (const [oldKey, oldEntry] of this.#entries) {
      if (this.#bytes <= this.#maxBytes) break;
      this.#remove(oldKey, oldEntry);
    }
  }

  /** Number of answers held (for tests of the bound). */
  get size(): number {
    return this.#entries.size;
  }

  #remove(key: string, entry: Entry): void {
    this.#entries.delete(key);
    this.#bytes -= entry.body.length;
  }
}
