import type { CalendarStatements } from '../store/calendars.js';
import type { OrganisationStatements } from '../store/organisations.js';
import type { PlanInputStatements } from '../store/plan-inputs.js';
import { localToEpochMs } from '../time/london.js';
import { workingMinutesBetween } from './calendar.js';
import { planResource, type PlanItem, type ResourcePlan } from './engine.js';
import { assigneeRemaining, elapsedPlannedMinutes, ELAPSED_MINUTES_LIMIT } from './remaining.js';

/** How long a plan may be reused at the same workspace version while time moves on. */
export const PLAN_MAX_AGE_MS = 60_000;
const MAX_CACHED_PLANS = 4096;

interface CachedPlan {
  readonly version: number;
  readonly plan: ResourcePlan;
}

export interface PlannerDependencies {
  readonly inputs: PlanInputStatements;
  readonly calendars: CalendarStatements;
  readonly organisations: OrganisationStatements;
}

const instantOrZero = (local: string | null): number => (local === null ? 0 : localToEpochMs(local));

/**
 * Plans are computed lazily, per resource, and reused while the organisation's workspace version
 * is unchanged (any mutation bumps it) and the plan is under a minute old. A request therefore
 * costs one resource's plan at most, never the whole organisation's.
 */
export function createPlanner(deps: PlannerDependencies) {
  const cache = new Map<number, CachedPlan>();

  function compute(resourceId: number, now: number): ResourcePlan {
    const calendar = deps.calendars.calendarOf(resourceId);
    const tasks: PlanItem[] = [];
    for (const row of deps.inputs.tasks(resourceId)) {
      if (row.blocked === 1) continue;
      const elapsed = elapsedPlannedMinutes(calendar, row.startedAt, now);
      tasks.push({
        id: row.id,
        minutes: assigneeRemaining(row, row.ownEstimate, row.assigneeCount, elapsed),
        notBefore: Math.max(instantOrZero(row.earliestStart), instantOrZero(row.releaseDate)),
      });
    }
    const reservations = deps.inputs.acceptedIncoming(resourceId).map((item): PlanItem => {
      // In progress: what is left after the working time since it started; planned: all of it.
      const startedAt = item.lifecycle === 'inprogress' ? item.actualStartUtc : null;
      const elapsed = startedAt === null ? 0 : Math.floor(workingMinutesBetween(calendar, startedAt, now, ELAPSED_MINUTES_LIMIT));
      return {
        id: item.id,
        minutes: Math.max(0, item.estimatedMinutes - elapsed),
        notBefore: startedAt ?? instantOrZero(item.plannedStart),
      };
    });
    return planResource({ now, calendar, reservations, tasks });
  }

  return {
    /** The plan of one resource at the organisation's current workspace version. */
    planFor(organisationId: number, resourceId: number, now: number): ResourcePlan {
      const version = deps.organisations.workspaceVersion(organisationId);
      const cached = cache.get(resourceId);
      if (cached !== undefined && cached.version === version && now >= cached.plan.computedAt && now - cached.plan.computedAt < PLAN_MAX_AGE_MS) {
        return cached.plan;
      }
      const plan = compute(resourceId, now);
      cache.delete(resourceId);
      if (cache.size >= MAX_CACHED_PLANS) {
        const oldest = cache.keys().next();
        if (oldest.done !== true) cache.delete(oldest.value);
      }
      cache.set(resourceId, { version, plan });
      return plan;
    },
  };
}

export type Planner = ReturnType<typeof createPlanner>;
