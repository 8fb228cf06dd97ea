import { epochMsToLocal } from '../time/london.js';
import type { ResourcePlan } from './engine.js';

export interface Suggestion {
  readonly suggestedStart: string | null;
  readonly suggestionReason: string | null;
}

/**
 * Where a floating Incoming item could go in its recipient's plan: the earliest free working time
 * from `now` on that holds the whole estimate without planned work in between. Nothing is
 * reserved: the plan only changes when the recipient plans or starts the item. A plan may be
 * reused for a while, so `now` (default: when the plan was computed) keeps a suggestion out of
 * the past.
 */
export function incomingSuggestion(plan: ResourcePlan, estimatedMinutes: number, recipientName: string, now = plan.computedAt): Suggestion {
  const start = plan.suggest(estimatedMinutes, now);
  if (start === null) {
    return {
      suggestedStart: null,
      suggestionReason: `No free working time of ${recipientName} within ${plan.horizonDays} days holds ${estimatedMinutes} minutes.`,
    };
  }
  return {
    suggestedStart: epochMsToLocal(start),
    suggestionReason:
      `Earliest free working time of ${recipientName} that holds ${estimatedMinutes} minutes without interruption, ` +
      'clear of their planned tasks and accepted Incoming work; a suggestion reserves no capacity.',
  };
}
