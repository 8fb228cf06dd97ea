import type { SourceStatements } from '../../store/sources.js';

/**
 * What the assistance use cases need of publishing: queueing, inside their own transaction, so
 * a request and its pending publication commit together. The actual call to the source happens
 * after the commit (see lib/sources/publisher.ts).
 */
export interface Publications {
  /** Queues publishing a new request to the originating task's first linked source. */
  enqueueRequest(stageId: number, originTaskId: number, now: number): void;
  /** Queues a follow-up question, if the request was published. */
  enqueueFollowUp(stageId: number, message: string, now: number): void;
}

export function publicationsOf(sources: SourceStatements): Publications {
  return {
    enqueueRequest(stageId, originTaskId, now) {
      const sourceItemId = sources.firstSourceOf(originTaskId);
      if (sourceItemId !== undefined) sources.enqueuePublication(stageId, sourceItemId, now, null);
    },
    enqueueFollowUp(stageId, message, now) {
      const publication = sources.publicationOf(stageId);
      if (publication === undefined) return;
      // If the source never took the request, sending only the follow-up would lose the original
      // question: publish the whole request instead (its details carry the follow-up by then).
      if (publication.externalRef === null) {
        sources.enqueuePublication(stageId, publication.sourceItemId, now, null);
        return;
      }
      // A follow-up not yet confirmed sent (failed, or still on its way) goes again with this one:
      // replaced, it would never reach the source. One on its way that arrives is sent twice,
      // which publishing allows (not exactly-once); a lost question is not.
      const pending = publication.pendingMessage === null ? message : `${publication.pendingMessage}\n\nFollow-up: ${message}`;
      sources.enqueuePublication(stageId, publication.sourceItemId, now, pending);
    },
  };
}
