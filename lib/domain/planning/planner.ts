import type { CalendarStatements } from '../../store/calendars.js';
import type { OrganisationStatements } from '../../store/organisations.js';
import type { PlanInputStatements } from '../../store/plan-inputs.js';
import { localToEpochMs } from '../../time/london.js';
import { planResource, type PlanItem, type ResourcePlan } from '../../plan/engine.js';
import { assigneeRemaining, elapsedSinceUntilChange, elapsedUntilChange, incomingRemaining } from '../../plan/remaining.js';

/** How long a plan may be reused at the same workspace version while time moves on. */
export const PLAN_MAX_AGE_MS = 60_000;
const MAX_CACHED_PLANS = 4096;
/**
 * What all cached plans may hold together, in entries of about 100 bytes (`ResourcePlan.size`:
 * placements and timeline segments): the count of plans alone would let 4,096 resources with a
 * long backlog, or a calendar of many short intervals, each hold gigabytes.
 */
export const MAX_CACHED_PLAN_ENTRIES = 1_000_000;

/** A resource's plan and the instant before which it stays the current one. */
export interface CurrentPlan extends ResourcePlan {
  /**
   * At most PLAN_MAX_AGE_MS after `computedAt`, and no later than the first instant a started
   * task could run out of remaining minutes: such a task leaves the plan (contract 5 places only
   * work with remaining minutes > 0), so a plan kept past that would still offer it.
   */
  readonly validUntil: number;
}

interface CachedPlan {
  readonly version: number;
  readonly plan: CurrentPlan;
}

export interface PlannerDependencies {
  readonly inputs: PlanInputStatements;
  readonly calendars: CalendarStatements;
  readonly organisations: OrganisationStatements;
  /** The cache's bound in plan entries (MAX_CACHED_PLAN_ENTRIES unless given: tests give less). */
  readonly maxCachedEntries?: number;
  /**
   * Whether what is read now is committed. A plan read inside a write batch is not kept: were
   * the batch rolled back, the next commit could bring the workspace version to the same number
   * with other data, and the plan would be taken for current.
   */
  readonly committedOnly?: () => boolean;
}

const instantOrZero = (local: string | null): number => (local === null ? 0 : localToEpochMs(local));

/**
 * Plans are computed lazily, per resource, and reused while the organisation's workspace version
 * is unchanged (any mutation bumps it) and the plan is under a minute old. A request therefore
 * costs one resource's plan at most, never the whole organisation's.
 */
export function createPlanner(deps: PlannerDependencies) {
  const cache = new Map<number, CachedPlan>();
  const maxEntries = deps.maxCachedEntries ?? MAX_CACHED_PLAN_ENTRIES;
  let entries = 0;
  const forget = (resourceId: number): void => {
    const cached = cache.get(resourceId);
    if (cached === undefined) return;
    cache.delete(resourceId);
    entries -= cached.plan.size;
  };

  function compute(resourceId: number, now: number): CurrentPlan {
    const calendar = deps.calendars.calendarOf(resourceId);
    const tasks: PlanItem[] = [];
    let validUntil = now + PLAN_MAX_AGE_MS;
    for (const row of deps.inputs.tasks(resourceId)) {
      if (row.blocked === 1) continue;
      const elapsed = elapsedUntilChange(calendar, row.startedAt, now);
      const minutes = assigneeRemaining(row, row.ownEstimate, row.assigneeCount, elapsed.minutes);
      if (minutes > 0 && Number.isFinite(elapsed.until)) {
        // Remaining time falls by at most one minute per elapsed working minute.
        validUntil = Math.min(validUntil, elapsed.until + ((minutes - 1) * 60_000) / elapsed.minutesPerMinute);
      }
      tasks.push({
        id: row.id,
        minutes,
        notBefore: Math.max(instantOrZero(row.earliestStart), instantOrZero(row.releaseDate)),
      });
    }
    const reservations = deps.inputs.acceptedIncoming(resourceId).map((item): PlanItem => ({
      id: item.id,
      // In progress: what is left after the working time since it started, from now; planned: all
      // of it from plannedStart. An item reopened by an evaluation may be in progress without
      // ever having been started: its old plannedStart no longer says when it is worked on.
      minutes: incomingRemaining(item, (startedAtMs) => elapsedSinceUntilChange(calendar, startedAtMs, now).minutes),
      notBefore: item.lifecycle === 'inprogress' ? now : instantOrZero(item.plannedStart),
    }));
    return { ...planResource({ now, calendar, reservations, tasks }), validUntil };
  }

  return {
    /** The plan of one resource at the organisation's current workspace version. */
    planFor(organisationId: number, resourceId: number, now: number): CurrentPlan {
      const version = deps.organisations.workspaceVersion(organisationId);
      const cached = cache.get(resourceId);
      if (cached !== undefined && cached.version === version && now >= cached.plan.computedAt && now < cached.plan.validUntil) {
        return cached.plan;
      }
      const plan = compute(resourceId, now);
      if (deps.committedOnly?.() === false) return plan;
      forget(resourceId);
      // Oldest first, until the new plan fits; one larger than the whole budget is not kept.
      for (const oldest of cache.keys()) {
        if (cache.size < MAX_CACHED_PLANS && entries + plan.size <= maxEntries) break;
        forget(oldest);
      }
      if (plan.size <= maxEntries) {
        cache.set(resourceId, { version, plan });
        entries += plan.size;
      }
      return plan;
    },
  };
}

export type Planner = ReturnType<typeof createPlanner>;
