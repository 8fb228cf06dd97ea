import { type Principal, workerOf } from '../../auth/authenticate.js';
import type { AssistanceStatements } from '../../store/assistance.js';
import { ServiceError } from '../errors.js';

/**
 * Step 7 for `/human-requests/{id}`: a stage that is missing or of another organisation is 404;
 * one whose originating task is not (or no longer) assigned to the caller is 403.
 */
export function assertStageVisible(principal: Principal, stageId: number, assistance: AssistanceStatements): void {
  const resource = workerOf(principal);
  const access = assistance.stageAccess(stageId, resource.id);
  if (access === undefined || access.organisationId !== principal.organisationId) throw new ServiceError('request_not_found');
  if (access.assigned !== 1) throw new ServiceError('task_not_owned');
}

/** Step 7 for `/incoming/{id}/...`: only the recipient sees an item; for anyone else it does not exist. */
export function assertIncomingAddressed(principal: Principal, incomingId: number, assistance: AssistanceStatements): void {
  const item = assistance.incoming(incomingId);
  if (item === undefined || item.organisationId !== principal.organisationId || item.recipientId !== principal.resource?.id) {
    throw new ServiceError('incoming_not_found');
  }
}
