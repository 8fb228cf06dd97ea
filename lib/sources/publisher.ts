import type { Logger } from '../logger.js';
import { callQuietly } from '../quiet-call.js';
import { outsideBatch, type GroupCommit } from '../store/group-commit.js';
import type { SourceStatements } from '../store/sources.js';
import { formatUtc } from '../time/london.js';
import { describeFailure, parsePublished, SOURCE_BOUNDS, type SourceProvider } from './provider.js';
import { withDeadline } from './timeout.js';
import type { Clock } from '../time/clock.js';

type DuePublication = ReturnType<SourceStatements['duePublications']>[number];

export interface PublisherOptions {
  readonly sources: SourceStatements;
  readonly providers: ReadonlyMap<string, SourceProvider>;
  readonly timeoutMs: number;
  readonly logger: Logger;
  /** The service's clock: what is due and when to retry, and the deadlines of provider calls. */
  readonly clock: Clock;
  /** True while a (group) transaction is open: what it holds is not committed yet. */
  readonly inTransaction: () => boolean;
  readonly batches: Pick<GroupCommit, 'open' | 'settled'>;
  /** True once the service is closed: an outcome arriving then is not recorded. */
  readonly closed: () => boolean;
  /** Aborted when the service is closed: a provider call still under way ends at once. */
  readonly stop: AbortSignal;
}

/** First retry after 30 s, doubling up to an hour. */
function retryDelayMs(attempts: number): number {
  return Math.min(60 * 60_000, 30_000 * 2 ** Math.min(attempts, 10));
}

/** How often a request may look for due publications (a cheap indexed query). */
export const CHECK_INTERVAL_MS = 5000;

/**
 * How long a publication taken for sending stays taken beyond the provider's deadline: time to
 * record the outcome (a commit, a lock held by another process). A process that dies with it
 * taken leaves it due again after that (at least once, never lost).
 */
const TAKEN_MARGIN_MS = 60_000;

/**
 * Publishes assistance requests to linked sources after the local request is committed
 * (contract 9): the request is valid whether or not the source takes it. Failures are logged and
 * retried later with back-off, driven by later traffic rather than a scheduler.
 */
export function sourcePublisher(options: PublisherOptions) {
  const { sources, providers, logger } = options;
  let running: Promise<void> | null = null;
  let lastCheck = Number.NEGATIVE_INFINITY;
  /**
   * Outcomes the source gave and not yet recorded: one waiting for a write batch to end, or one
   * the database refused (locked by another process, say). Recorded before anything else is
   * sent, or by close(), so a request the source took is not sent again and its ref (which
   * replies name) is kept.
   */
  const unrecorded = new Set<() => void>();
  /** The publication this process has taken and not yet recorded an outcome for. */
  let held: { readonly stageId: number; readonly generation: number; readonly until: number } | null = null;

  /**
   * Runs `work` in a transaction of its own, never inside a write batch (rolled back, it would
   * take a record with it and the request would be published twice), and never once the service
   * is closed (undefined then): the connection may already serve another service.
   */
  function outside<T>(work: () => T): Promise<T | undefined> {
    return outsideBatch(options.batches, () => (options.closed() ? undefined : work()));
  }

  /** Writes an unrecorded outcome; false once the service is closed. One that throws stays unrecorded. */
  async function write(record: () => void): Promise<boolean> {
    if ((await outside(() => { record(); return true; })) !== true) return false;
    unrecorded.delete(record);
    return true;
  }

  async function publishDue(): Promise<void> {
    for (const record of [...unrecorded]) if (!(await write(record))) return;
    for (const publication of sources.duePublications(options.clock.now())) {
      // A closed service calls no provider: its connection may already serve another service,
      // which will send what is still due itself.
      if (options.closed()) return;
      // Taken first, in a write of its own: another process serving the file (or a run of this
      // one) then leaves it alone, so one request is not posted twice.
      const taken = await outside(() => {
        const now = options.clock.now();
        const until = now + options.timeoutMs + TAKEN_MARGIN_MS;
        if (!sources.takePublication(publication.stageId, publication.generation, now, until)) return false;
        held = { stageId: publication.stageId, generation: publication.generation, until };
        return true;
      });
      if (taken === undefined) return;
      if (!taken) continue;
      const outcome = await publish(publication);
      const record = (): void => {
        outcome();
        if (held?.stageId === publication.stageId && held.generation === publication.generation) held = null;
      };
      unrecorded.add(record);
      if (!(await write(record))) return;
    }
  }

  /** Hands the request to its source; returns how to record the outcome. */
  async function publish(publication: DuePublication): Promise<() => void> {
    const provider = providers.get(publication.providerKey);
    const request = {
      title: publication.title,
      details: publication.pendingMessage ?? publication.details,
      assistanceKind: publication.assistanceKind,
      priority: publication.priorityName,
    };
    try {
      if (provider === undefined) throw new Error(`no provider for ${publication.providerKey}`);
      const ref = parsePublished(await withDeadline((signal) => provider.publish(publication.itemId, request, signal), options.timeoutMs, options.clock, options.stop));
      if (ref === null) throw new Error('the source answered without a ref');
      // No reply can name a longer ref (replies naming one are skipped), so it is not kept: a
      // source could otherwise put megabytes into a key of the database.
      const nameable = ref.length <= SOURCE_BOUNDS.identifier;
      return () => {
        sources.markPublished(publication.stageId, publication.sourceItemId, nameable ? ref : null, publication.generation);
        logger.info?.({ message: 'assistance request published', stageId: publication.stageId, providerKey: publication.providerKey });
        // The source has the request, so it is not posted again (that would repeat it there every
        // hour); but it cannot be answered from the source, which must not pass unseen.
        if (!nameable) {
          logger.error({
            message: `the source's ref for this request is longer than ${SOURCE_BOUNDS.identifier} characters: replies naming it are skipped, so it cannot be answered from the source`,
            stageId: publication.stageId, providerKey: publication.providerKey,
          });
        }
      };
    } catch (error) {
      return () => {
        const retryAt = options.clock.now() + retryDelayMs(publication.attempts);
        sources.markPublishFailed(publication.stageId, retryAt, publication.generation);
        logger.error({
          message: 'publishing an assistance request failed; it will be retried',
          stageId: publication.stageId, providerKey: publication.providerKey, attempt: publication.attempts + 1,
          retryAtUtc: formatUtc(retryAt), error: describeFailure(error),
        });
      };
    }
  }

  /** Never read the queue inside an open transaction: only committed requests are published. */
  function afterCommit(): Promise<void> {
    if (!options.inTransaction()) return Promise.resolve();
    return new Promise((resolve) => setImmediate(resolve)).then(afterCommit);
  }

  /** Set when a kick arrives while a run is in flight: that run may have read the queue already. */
  let rerun = false;

  async function drain(): Promise<void> {
    do {
      rerun = false;
      await afterCommit();
      if (options.closed()) return;
      await publishDue();
    } while (rerun);
  }

  function start(): Promise<void> {
    if (running !== null) {
      // A request committed while this run awaits a provider is not in the rows it read: without
      // another pass it would wait for the next retry check (and traffic to trigger it).
      rerun = true;
      return running;
    }
    running = drain()
      .catch((error: unknown) => logger.error({ message: 'publication run failed', error: String(error) }))
      .finally(() => {
        running = null;
      });
    return running;
  }

  return {
    /** Publishes what is due now (after a request was created or followed up). */
    kick(): void {
      lastCheck = options.clock.now();
      void start();
    },
    /** Called on every request: at most every few seconds, publishes anything due for a retry. */
    kickIfDue(): void {
      const now = options.clock.now();
      if (now - lastCheck < CHECK_INTERVAL_MS && now >= lastCheck) return;
      lastCheck = now;
      const next = sources.nextPublicationDue();
      if (unrecorded.size > 0 || (next !== null && next <= now)) void start();
    },
    /** Resolves when no publication is in flight. */
    idle: (): Promise<void> => running ?? Promise.resolve(),
    /**
     * At close, once no batch is open and before the connection is let go: outcomes still
     * unrecorded are recorded, and a publication still taken (its send cut short) is handed back,
     * so the next service on the file sends it at once rather than after the hold. Best effort:
     * a transaction of the embedder's still open, or a database another process has locked (the
     * caller does not wait for it), leaves them to the hold.
     */
    settleOnClose(): void {
      if (options.inTransaction()) return;
      callQuietly(() => {
        for (const record of [...unrecorded]) {
          record();
          unrecorded.delete(record);
        }
        if (held !== null) sources.returnPublication(held.stageId, held.generation, held.until, options.clock.now());
        held = null;
      });
    },
  };
}

export type SourcePublisher = ReturnType<typeof sourcePublisher>;
