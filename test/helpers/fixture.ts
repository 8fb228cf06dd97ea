/**
 * The shared test world: two organisations, an agent with every scope, clients that lack scopes,
 * an identity-only client, a revoked one, and tasks in each state the read rules distinguish.
 * Tests copy and extend it with `world({...})`.
 */
export const TOKENS = {
  ada: 'wta_test_ada_full_scopes',
  readOnly: 'wta_test_ada_read_only',
  identityOnly: 'wta_test_identity_only',
  bob: 'wta_test_bob_other_resource',
  revoked: 'wta_test_revoked_client',
  otherOrg: 'wta_test_other_organisation',
  inactiveSponsor: 'wta_test_inactive_sponsor',
  inactiveResource: 'wta_test_inactive_resource',
  inactiveOrg: 'wta_test_inactive_organisation',
} as const;

export const ALL_SCOPES: readonly string[] = ['tasks:read', 'tasks:update', 'tasks:time', 'tasks:notes', 'human-requests:create', 'human-requests:read'];

/** The fixture's live lease of ada-bot on task 11, expiring 10:10Z. */
export const LEASE_11 = '6f1c8a52-3f7e-4a8e-9d1e-2b7f0c4d9a10';

/** The token of ada-twin (client 109), a second client of Ada's resource that `withTwin` adds. */
export const TWIN = 'wta_test_ada_twin_client';

export interface FixtureShape {
  organisations: Record<string, unknown>[];
  staff: Record<string, unknown>[];
  clients: Record<string, unknown>[];
  projects: Record<string, unknown>[];
  tasks: Record<string, unknown>[];
  claims: Record<string, unknown>[];
}

export function baseFixture(): FixtureShape {
  return {
    organisations: [
      { id: 1, name: 'Acme', isActive: true },
      { id: 2, name: 'Globex', isActive: true },
      { id: 3, name: 'Dormant', isActive: false },
    ],
    staff: [
      { id: 10, organisationId: 1, name: 'Ada', kind: 'agent', isActive: true },
      { id: 11, organisationId: 1, name: 'Grace', kind: 'human', isActive: true },
      { id: 12, organisationId: 1, name: 'Bob', kind: 'agent', isActive: true },
      { id: 13, organisationId: 1, name: 'Retired', kind: 'human', isActive: false },
      { id: 14, organisationId: 1, name: 'Parked', kind: 'agent', isActive: false },
      { id: 20, organisationId: 2, name: 'Gus', kind: 'agent', isActive: true },
      { id: 21, organisationId: 2, name: 'Gail', kind: 'human', isActive: true },
      { id: 30, organisationId: 3, name: 'Dora', kind: 'human', isActive: true },
    ],
    clients: [
      { id: 100, organisationId: 1, name: 'ada-bot', token: TOKENS.ada, sponsorId: 11, resourceId: 10, isActive: true, scopes: ALL_SCOPES },
      { id: 101, organisationId: 1, name: 'ada-reader', token: TOKENS.readOnly, sponsorId: 11, resourceId: 10, isActive: true, scopes: ['tasks:read'] },
      { id: 102, organisationId: 1, name: 'directory', token: TOKENS.identityOnly, sponsorId: 11, resourceId: null, isActive: true, scopes: ['tasks:read'] },
      { id: 103, organisationId: 1, name: 'bob-bot', token: TOKENS.bob, sponsorId: 11, resourceId: 12, isActive: true, scopes: ALL_SCOPES },
      { id: 104, organisationId: 1, name: 'revoked', token: TOKENS.revoked, sponsorId: 11, resourceId: 10, isActive: false, scopes: ALL_SCOPES },
      { id: 105, organisationId: 2, name: 'gus-bot', token: TOKENS.otherOrg, sponsorId: 21, resourceId: 20, isActive: true, scopes: ALL_SCOPES },
      { id: 106, organisationId: 1, name: 'orphan', token: TOKENS.inactiveSponsor, sponsorId: 13, resourceId: 10, isActive: true, scopes: ALL_SCOPES },
      { id: 107, organisationId: 1, name: 'parked-bot', token: TOKENS.inactiveResource, sponsorId: 11, resourceId: 14, isActive: true, scopes: ALL_SCOPES },
      { id: 108, organisationId: 3, name: 'dormant-bot', token: TOKENS.inactiveOrg, sponsorId: 30, resourceId: null, isActive: true, scopes: ['tasks:read'] },
    ],
    projects: [
      { id: 1, organisationId: 1, name: 'Relaunch', priorityName: 'high', targetDate: '2026-12-01T17:00:00', hardDeadline: null, deadlineReason: null, isActive: true },
      { id: 2, organisationId: 1, name: 'Backlog', priorityName: 'low', isActive: true },
      { id: 3, organisationId: 1, name: 'Firefight', priorityName: 'critical', isActive: true },
      { id: 4, organisationId: 1, name: 'Shelved', priorityName: 'normal', isActive: false },
      { id: 9, organisationId: 2, name: 'Globex work', isActive: true },
    ],
    tasks: [
      { id: 1, projectId: 1, title: 'Write copy', sequence: 10, estimatedMinutes: 120, assignees: [{ staffMemberId: 10, estimatedMinutes: null }] },
      { id: 2, projectId: 1, title: 'Review copy', sequence: 20, estimatedMinutes: 60, assignees: [{ staffMemberId: 10 }], dependencyIds: [1] },
      { id: 3, projectId: 2, title: 'Tidy backlog', sequence: 5, estimatedMinutes: 30, assignees: [{ staffMemberId: 10 }] },
      { id: 4, projectId: 3, title: 'Fix outage', sequence: 1, estimatedMinutes: 45, assignees: [{ staffMemberId: 10 }, { staffMemberId: 12 }], resourceMode: 'Collaboration' },
      { id: 5, projectId: 1, title: 'Wait for vendor', sequence: 30, estimatedMinutes: 15, isWaiting: true, assignees: [{ staffMemberId: 10 }] },
      { id: 6, projectId: 1, title: 'Shipped', status: 'Done', estimatedMinutes: 10, startedAt: '2026-11-02T09:00:00', completedAt: '2026-11-02T10:00:00', assignees: [{ staffMemberId: 10 }],
        actualIntervals: [{ staffMemberId: 10, start: '2026-11-02T09:00:00', end: '2026-11-02T09:50:00' }] },
      { id: 7, projectId: 1, title: "Bob's task", estimatedMinutes: 30, assignees: [{ staffMemberId: 12 }] },
      { id: 8, projectId: 1, title: 'Reconcile', sequence: 40, estimatedMinutes: 0, assignees: [{ staffMemberId: 10 }] },
      { id: 9, projectId: 1, title: 'Not yet', sequence: 50, estimatedMinutes: 30, earliestStart: '2027-01-04T09:00:00', assignees: [{ staffMemberId: 10 }] },
      { id: 10, projectId: 4, title: 'On a shelved project', estimatedMinutes: 30, assignees: [{ staffMemberId: 10 }] },
      { id: 11, projectId: 1, title: 'Claimed', sequence: 60, estimatedMinutes: 30, assignees: [{ staffMemberId: 10 }] },
      { id: 90, projectId: 9, title: 'Globex task', estimatedMinutes: 30, assignees: [{ staffMemberId: 20 }] },
    ],
    claims: [
      { taskId: 11, clientId: 100, token: LEASE_11, expiresUtc: '2026-11-16T10:10:00.000Z' },
    ],
  };
}

/** Adds ada-twin (client 109, token `TWIN`): a second client of Ada's resource with the given scopes. */
export function withTwin(fixture: FixtureShape, scopes: readonly string[]): FixtureShape {
  fixture.clients.push({
    id: 109, organisationId: 1, name: 'ada-twin', token: TWIN, sponsorId: 11, resourceId: 10, isActive: true, scopes: [...scopes],
  });
  return fixture;
}

/** Monday 16 November 2026, 10:00 London (GMT). */
export const TEST_NOW = '2026-11-16T10:00:00.000Z';

/** Clients for the humans' Incoming queues: Grace's desk and reader (organisation 1), Gail's desk (organisation 2). */
export const DESK_TOKENS = {
  grace: 'wta_test_grace_desk',
  graceReader: 'wta_test_grace_reader',
  gail: 'wta_test_gail_desk',
} as const;

/** Adds the desk clients of DESK_TOKENS to a fixture. */
export function withDesks(fixture: FixtureShape): FixtureShape {
  fixture.clients.push(
    { id: 110, organisationId: 1, name: 'grace-desk', token: DESK_TOKENS.grace, sponsorId: 11, resourceId: 11, isActive: true, scopes: ['tasks:read', 'tasks:update'] },
    { id: 112, organisationId: 1, name: 'grace-reader', token: DESK_TOKENS.graceReader, sponsorId: 11, resourceId: 11, isActive: true, scopes: ['tasks:read'] },
    { id: 111, organisationId: 2, name: 'gail-desk', token: DESK_TOKENS.gail, sponsorId: 21, resourceId: 21, isActive: true, scopes: ['tasks:read', 'tasks:update'] },
  );
  return fixture;
}
