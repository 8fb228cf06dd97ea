import type { Principal } from '../auth/authenticate.js';
import type { IdentityView } from '../schemas/resources.js';

/** GET /identity: who the credential is, with the resource as `{id, name}` or null. */
export function identityView(principal: Principal): IdentityView {
  return {
    clientId: principal.clientId,
    clientName: principal.clientName,
    organisation: { id: principal.organisationId, name: principal.organisationName },
    resource: principal.resource === null ? null : { id: principal.resource.id, name: principal.resource.name },
    scopes: [...principal.scopes],
  };
}
