import { randomUUID } from 'node:crypto';
import type { Logger } from '../logger.js';
import { outsideBatch, type GroupCommit } from '../store/group-commit.js';
import type { Db } from '../store/open.js';
import type { OrganisationStatements } from '../store/organisations.js';
import type { SourceItemRow, SourceStatements } from '../store/sources.js';
import { parseInstant } from '../time/london.js';
import { describeFailure, parseSnapshot, type SourceProvider, type SourceSnapshot } from './provider.js';
import { CallGate } from './gate.js';
import { withDeadline } from './timeout.js';
import type { Clock } from '../time/clock.js';

/**
 * New replies recorded per item and refresh. A source answer may list thousands (4 MiB of them):
 * the rest are recorded by the next refreshes, as they are not yet marked seen.
 */
export const MAX_NEW_REPLIES_PER_REFRESH = 100;

/**
 * Refreshes under way at once per provider. Those waiting for a slot count against their deadline:
 * an item that cannot be asked in time fails like one that did not answer in time.
 */
export const REFRESHES_AT_ONCE = 16;

export interface RefreshOptions {
  readonly db: Db;
  readonly sources: SourceStatements;
  readonly organisations: OrganisationStatements;
  readonly providers: ReadonlyMap<string, SourceProvider>;
  readonly timeoutMs: number;
  /** The service's clock: deadlines of provider calls run on it. */
  readonly clock: Clock;
  readonly logger: Logger;
  /** The service's group commit: providers are called only while no batch is open. */
  readonly batches: Pick<GroupCommit, 'open' | 'settled'>;
  /** True once the service is closed: what a refresh brings back is then not recorded. */
  readonly closed: () => boolean;
  /** Aborted when the service is closed: provider calls still under way end at once. */
  readonly stop: AbortSignal;
}

export interface RefreshResult {
  /** Items whose refresh failed (or that have no provider). */
  readonly failedItems: ReadonlySet<number>;
  /** Tasks for which this refresh recorded a source change (facts that changed). */
  readonly changedTasks: ReadonlySet<number>;
}

/** Refresh steps remembered per organisation: a claim more steps behind than this is refused anyway. */
const REFRESH_STEPS_KEPT = 64;

/** A workspace version a committed refresh reached, and what it recorded. */
interface RefreshStep {
  readonly organisationId: number;
  readonly version: number;
  /** Whether it recorded changed facts of any item (of open tasks or none): not replies alone. */
  readonly factsChanged: boolean;
  /** The tasks whose facts it recorded as changed. */
  readonly changedTasks: readonly number[];
}

/** A provider call of one item; refreshes asking while it runs share it. */
interface Call {
  /** Rises with every call this service starts: a later call has a higher number. */
  readonly asked: number;
  readonly answer: Promise<SourceSnapshot | null>;
}

type Outcome = { readonly item: SourceItemRow; readonly snapshot: SourceSnapshot | null; readonly asked: number };

const factsOf = (facts: { title: string; description: string | null; businessStatus: string | null }) => ({
  title: facts.title,
  description: facts.description,
  businessStatus: facts.businessStatus,
});

/**
 * Refreshes linked source items (contract 9): providers are called concurrently (up to
 * REFRESHES_AT_ONCE per provider) and outside any transaction, each under a deadline; the results
 * are then applied in one transaction that records changed facts, new replies and activations,
 * and bumps the workspace version when it recorded anything. Concurrent refreshes of the same
 * item share one provider call.
 */
export function sourceRefresher(options: RefreshOptions) {
  const { db, sources, organisations, providers } = options;
  const inFlight = new Map<number, Call>();
  let calls = 0;
  /**
   * Per item, the newest call applied, kept while a refresh holding one of its answers has yet to
   * apply it. A refresh applies its items together, after the slowest: one item's answer may wait
   * there while a later call of the same item (a claim's) is applied, and the older answer,
   * applied last, would record the item changing back.
   */
  const appliedCalls = new Map<number, number>();
  /** Per item, the refreshes under way that ask about it: at none, its entry above goes. */
  const holders = new Map<number, number>();
  const gates = new Map<string, CallGate>();
  const gateOf = (providerKey: string): CallGate => {
    let gate = gates.get(providerKey);
    if (gate === undefined) {
      gate = new CallGate(REFRESHES_AT_ONCE);
      gates.set(providerKey, gate);
    }
    return gate;
  };

  /**
   * The provider's answer as a snapshot, or null for a failure. Reading the answer is part of the
   * call: a getter that throws (a lazily loaded record, say) fails this item, not the request.
   */
  async function readSnapshot(provider: SourceProvider, item: SourceItemRow): Promise<SourceSnapshot | null> {
    let snapshot: SourceSnapshot | null;
    try {
      const gate = gateOf(item.providerKey);
      snapshot = parseSnapshot(await withDeadline(
        (signal) => gate.run(signal, () => provider.refresh(item.itemId, signal)), options.timeoutMs, options.clock, options.stop,
      ));
    } catch (error) {
      // Cut short by close(): the source did not fail, and nothing of it is recorded.
      if (options.stop.aborted) return null;
      options.logger.error({ message: 'source refresh failed', providerKey: item.providerKey, itemId: item.itemId, error: describeFailure(error) });
      return null;
    }
    if (snapshot === null) {
      options.logger.error({ message: 'source refresh returned no usable facts', providerKey: item.providerKey, itemId: item.itemId });
    }
    return snapshot;
  }

  function fetchSnapshot(item: SourceItemRow): Call {
    const running = inFlight.get(item.id);
    if (running !== undefined) return running;
    const provider = providers.get(item.providerKey);
    if (provider === undefined) {
      // Counts as failing (the task is not offered); the log says why, as for any other failure.
      options.logger.error({ message: 'source refresh failed', providerKey: item.providerKey, itemId: item.itemId, error: 'no provider is configured for this providerKey' });
    }
    const answer = provider === undefined ? Promise.resolve(null) : readSnapshot(provider, item);
    const call: Call = { asked: (calls += 1), answer: answer.finally(() => inFlight.delete(item.id)) };
    inFlight.set(item.id, call);
    return call;
  }

  function hold(itemIds: readonly number[], by: 1 | -1): void {
    for (const id of itemIds) {
      const count = (holders.get(id) ?? 0) + by;
      if (count > 0) {
        holders.set(id, count);
      } else {
        holders.delete(id);
        appliedCalls.delete(id);
      }
    }
  }

  /**
   * Per organisation, the workspace versions this process's committed refreshes reached, newest
   * last. A claim's If-Match was checked before its refresh; what a refresh records meanwhile is
   * the source's news, not a write: a reply alone must not refuse the claim (contract 9), and a
   * change of the task's facts is a 409, whichever refresh (its own, or a list's sharing the
   * same provider answer) recorded it.
   */
  const refreshSteps = new Map<number, RefreshStep[]>();
  function remember(step: RefreshStep): void {
    let steps = refreshSteps.get(step.organisationId);
    if (steps === undefined) {
      steps = [];
      refreshSteps.set(step.organisationId, steps);
    }
    // Steps at or past this version are from before the database went back: this one replaces them.
    while (steps.length > 0 && (steps.at(-1) as RefreshStep).version >= step.version) steps.pop();
    steps.push(step);
    if (steps.length > REFRESH_STEPS_KEPT) steps.shift();
  }

  const apply = db.transaction((outcomes: readonly Outcome[], now: number): RefreshResult & { steps: RefreshStep[] } => {
    const failedItems = new Set<number>();
    const changedTasks = new Set<number>();
    const activationTasks = new Set<number>();
    /** Tasks whose history grew: trimmed once the refresh has recorded everything. */
    const historyTasks = new Set<number>();
    const touchedOrganisations = new Set<number>();
    const changedByOrganisation = new Map<number, number[]>();
    for (const { item: seen, snapshot, asked } of outcomes) {
      // A later call of this item was applied first: this answer's facts (or failure) are older
      // news and are not recorded. Its replies still are, once each: a provider may hand a reply
      // out only once.
      const superseded = (appliedCalls.get(seen.id) ?? 0) > asked;
      if (!superseded) appliedCalls.set(seen.id, asked);
      // Then the item is as the later call left it: failed when that call failed, so a claim
      // holding an earlier success is not granted on a source last seen failing.
      if (superseded && sources.item(seen.id)?.isAvailable !== 1) failedItems.add(seen.id);
      if (snapshot === null) {
        if (superseded) continue;
        sources.recordFailure(seen.id, now);
        failedItems.add(seen.id);
        continue;
      }
      // Re-read inside the transaction: another request may have applied a refresh meanwhile.
      const item = sources.item(seen.id) ?? seen;
      const before = factsOf(item);
      const after = factsOf(snapshot);
      const changed = !superseded && item.hasBaseline === 1 &&
        (before.title !== after.title || before.description !== after.description || before.businessStatus !== after.businessStatus);
      if (!superseded) sources.recordSuccess(item.id, after, now);
      if (changed) {
        // Kept even when no open task records it: the step is then still no reply alone.
        let organisationChanges = changedByOrganisation.get(item.organisationId);
        if (organisationChanges === undefined) {
          organisationChanges = [];
          changedByOrganisation.set(item.organisationId, organisationChanges);
        }
        for (const taskId of sources.openTasksOfItem(item.id)) {
          sources.insertChange({
            taskId, sourceItemId: item.id, incomingId: null, kind: 'source', before: JSON.stringify(before),
            after: JSON.stringify(after), response: null, author: null, occurred: now, now,
          });
          changedTasks.add(taskId);
          activationTasks.add(taskId);
          organisationChanges.push(taskId);
        }
        touchedOrganisations.add(item.organisationId);
      }
      let newReplies = 0;
      for (const reply of snapshot.replies) {
        if (reply.inReplyTo === null) continue;
        if (newReplies === MAX_NEW_REPLIES_PER_REFRESH) break;
        const target = sources.replyTarget(item.id, reply.inReplyTo);
        if (target === undefined || !sources.markReplySeen(item.id, reply.id)) continue;
        // Any offset is taken as the instant it names; a missing or unreadable time is the receipt time.
        const occurred = (reply.createdUtc === null ? null : parseInstant(reply.createdUtc)) ?? now;
        newReplies += 1;
        sources.insertChange({
          taskId: target.originTaskId, sourceItemId: item.id, incomingId: target.incomingId, kind: 'reply', before: null,
          after: null, response: reply.text, author: reply.author, occurred, now,
        });
        // A reply answers the request but never resolves it: the agent evaluates it.
        sources.respond(target.incomingId, reply.text, now, randomUUID());
        historyTasks.add(target.originTaskId);
        touchedOrganisations.add(item.organisationId);
      }
    }
    for (const taskId of activationTasks) {
      sources.insertActivation(taskId, now, JSON.stringify(sources.availableFacts(taskId).map(factsOf)));
      historyTasks.add(taskId);
    }
    for (const taskId of historyTasks) sources.trimHistory(taskId);
    for (const organisationId of touchedOrganisations) organisations.bumpWorkspaceVersion(organisationId);
    // Read inside the transaction: the version this refresh's own step reached.
    const steps = [...touchedOrganisations].map((organisationId) => ({
      organisationId,
      version: organisations.workspaceVersion(organisationId),
      factsChanged: changedByOrganisation.has(organisationId),
      changedTasks: changedByOrganisation.get(organisationId) ?? [],
    }));
    return { failedItems, changedTasks, steps };
  });

  return {
    /** Refreshes the given items now and applies what came back. */
    async refresh(items: readonly SourceItemRow[], now: () => number): Promise<RefreshResult> {
      // Providers run outside any transaction of the service: a claim made while a write batch
      // is open waits for its commit, so a provider never sees (or joins) uncommitted rows. The
      // offer and waiting lists ask from inside their read transaction, which ends when their
      // synchronous part returns: one turn of the microtask queue, and it has.
      await Promise.resolve();
      const unique = [...new Map(items.map((item) => [item.id, item])).values()];
      const itemIds = unique.map((item) => item.id);
      hold(itemIds, 1);
      try {
        const outcomes = await outsideBatch(options.batches, () => {
          if (options.closed()) throw new Error('the service was closed before a source refresh');
          return Promise.all(unique.map(async (item): Promise<Outcome> => {
            const { asked, answer } = fetchSnapshot(item);
            return { item, snapshot: await answer, asked };
          }));
        });
        // A batch opened while the providers answered: what the refresh records is reported at once
        // (a claim acts on it), so it must not ride on a batch that may yet be rolled back.
        return await outsideBatch(options.batches, () => {
          // The service may have been closed while the providers answered: its connection is not to be written.
          if (options.closed()) throw new Error('the service was closed during a source refresh');
          const appliedBefore = itemIds.map((id) => appliedCalls.get(id) ?? 0);
          try {
            const { steps, ...result } = apply.immediate(outcomes, now());
            // Committed: only now may a claim count on these versions.
            for (const step of steps) remember(step);
            return result;
          } catch (error) {
            // Rolled back: none of its calls was applied after all.
            itemIds.forEach((id, index) => appliedCalls.set(id, appliedBefore[index] ?? 0));
            throw error;
          }
        });
      } finally {
        hold(itemIds, -1);
      }
    },

    /**
     * Forgets steps past `version`, the organisation's version now: the database went back (a
     * restore, SQL of the embedder's, a transaction of its own rolled back), and a later write
     * may reach those numbers again.
     */
    forgetStepsAfter(organisationId: number, version: number): void {
      const steps = refreshSteps.get(organisationId);
      if (steps !== undefined && steps.some((step) => step.version > version)) {
        refreshSteps.set(organisationId, steps.filter((step) => step.version <= version));
      }
    },

    /**
     * If every step to the organisation's workspace version since `version` was a committed
     * refresh of this process: that version, whether the steps recorded replies alone (no item's
     * facts changed), and the tasks whose facts they recorded as changed. Null otherwise (a write,
     * another process's commit), or when there was no step.
     */
    refreshedSince(organisationId: number, version: number): { version: number; repliesOnly: boolean; changedTasks: ReadonlySet<number> } | null {
      const current = organisations.workspaceVersion(organisationId);
      if (current <= version) return null;
      const steps = refreshSteps.get(organisationId) ?? [];
      const changedTasks = new Set<number>();
      let repliesOnly = true;
      for (let reached = version + 1; reached <= current; reached += 1) {
        const step = steps.find((candidate) => candidate.version === reached);
        if (step === undefined) return null;
        if (step.factsChanged) repliesOnly = false;
        for (const taskId of step.changedTasks) changedTasks.add(taskId);
      }
      return { version: current, repliesOnly, changedTasks };
    },
  };
}

export type SourceRefresher = ReturnType<typeof sourceRefresher>;
