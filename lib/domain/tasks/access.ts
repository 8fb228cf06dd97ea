import type { Principal } from '../../auth/authenticate.js';
import type { TaskReadStatements } from '../../store/task-reads.js';
import { ServiceError } from '../errors.js';

/**
 * Step 7 for task paths: a task of another organisation is indistinguishable from a missing one
 * (404), while one of the caller's organisation assigned only to others is 403.
 */
export function assertTaskOwned(principal: Principal, taskId: number, reads: TaskReadStatements): void {
  const resource = principal.resource;
  if (resource === null) throw new ServiceError('permission_denied', 'identity-only client');
  const access = reads.access(taskId, resource.id);
  if (access === undefined || access.organisationId !== principal.organisationId) {
    throw new ServiceError('task_not_found');
  }
  if (access.assigned !== 1) throw new ServiceError('task_not_owned');
}
