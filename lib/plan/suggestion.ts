import { epochMsToLocal } from '../time/london.js';
import { HORIZON_DAYS, type ResourcePlan } from './engine.js';

export interface Suggestion {
  readonly suggestedStart: string | null;
  readonly suggestionReason: string | null;
}

/**
 * Where a floating Incoming item could go in its recipient's plan: the earliest free working time
 * that holds the whole estimate without planned work in between. Nothing is reserved: the plan
 * only changes when the recipient plans or starts the item.
 */
export function incomingSuggestion(plan: ResourcePlan, estimatedMinutes: number, recipientName: string): Suggestion {
  const start = plan.suggest(estimatedMinutes);
  if (start === null) {
    return {
      suggestedStart: null,
      suggestionReason: `No free working time of ${recipientName} within ${HORIZON_DAYS} days holds ${estimatedMinutes} minutes.`,
    };
  }
  return {
    suggestedStart: epochMsToLocal(start),
    suggestionReason:
      `Earliest free working time of ${recipientName} that holds ${estimatedMinutes} minutes without interruption, ` +
      'after their planned tasks and accepted Incoming work; a suggestion reserves no capacity.',
  };
}
