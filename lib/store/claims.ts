import type { Db } from './open.js';
import { batchedPurge } from './purge.js';

/** How long an ended lease is kept (for an operator looking into one), after its expiry. */
const LEASE_HISTORY_MS = 24 * 60 * 60 * 1000;

export interface LeaseRow {
  id: number;
  taskId: number;
  clientId: number;
  token: string;
  expiresUtc: number;
  releasedUtc: number | null;
}

/**
 * Contract 2: a lease is live while it is unreleased and unexpired at `@now`. `alias` names the
 * claims table where the query has several.
 */
export const liveLeaseAt = (alias = ''): string => `${alias}released_utc IS NULL AND ${alias}expires_utc > @now`;

/**
 * Ends a task's unreleased leases for good, an expired one at its expiry (so its history stays
 * true): a lease ended so cannot come back to life when the clock is set back. `narrower` is
 * further SQL conditions; `@taskId` and `@now` are bound.
 */
export const endLeasesOfTask = (narrower = ''): string =>
  `UPDATE claims SET released_utc = min(expires_utc, @now) WHERE task_id = @taskId AND released_utc IS NULL${narrower}`;

const LEASE_COLUMNS = `id, task_id AS taskId, client_id AS clientId, token, expires_utc AS expiresUtc, released_utc AS releasedUtc`;

/** Task leases. A lease is live while it is unreleased and unexpired. */
export function claimStatements(db: Db) {
  const live = db.prepare<[{ taskId: number; now: number }], LeaseRow>(`
    SELECT ${LEASE_COLUMNS} FROM claims
     WHERE task_id = @taskId AND ${liveLeaseAt()} ORDER BY id DESC LIMIT 1`);
  const liveByToken = db.prepare<[{ token: string; now: number }], LeaseRow>(
    `SELECT ${LEASE_COLUMNS} FROM claims WHERE token = @token AND ${liveLeaseAt()}`);
  const insert = db.prepare(`INSERT INTO claims (task_id, client_id, token, acquired_utc, expires_utc)
    VALUES (@taskId, @clientId, @token, @now, @expiresUtc)`);
  // All have expired when a claim is granted: a lease another claim has followed must never be
  // live beside it, whatever the clock does next.
  const endEarlier = db.prepare<[{ taskId: number; now: number }]>(endLeasesOfTask());
  const extend = db.prepare<[{ id: number; expiresUtc: number }]>('UPDATE claims SET expires_utc = @expiresUtc WHERE id = @id');
  const release = db.prepare<[{ id: number; now: number }]>('UPDATE claims SET released_utc = @now WHERE id = @id');
  // Ended a day ago or more: a lease released early still waits for its expiry.
  const purge = db.prepare<[{ before: number; batch: number }]>(`
    DELETE FROM claims WHERE id IN (SELECT id FROM claims WHERE expires_utc <= @before LIMIT @batch)`);
  const releaseClients = db.prepare<[{ clientId: number; now: number }]>(
    `UPDATE claims SET released_utc = @now WHERE client_id = @clientId AND ${liveLeaseAt()}`);
  return {
    liveLease: (taskId: number, now: number) => live.get({ taskId, now }),
    liveLeaseByToken: (token: string, now: number) => liveByToken.get({ token, now }),
    /** A new lease on the task; every earlier one counts as ended for good. */
    insert: (taskId: number, clientId: number, token: string, now: number, expiresUtc: number) => {
      endEarlier.run({ taskId, now });
      insert.run({ taskId, clientId, token, now, expiresUtc });
    },
    extend: (id: number, expiresUtc: number) => extend.run({ id, expiresUtc }),
    release: (id: number, now: number) => release.run({ id, now }),
    /**
     * Leases over for a day go on later writes, so the table holds the last day's, not every lease
     * ever taken; a token of a deleted lease is answered as an expired one's (claim_expired).
     */
    purgeEnded: batchedPurge((now, batch) => purge.run({ before: now - LEASE_HISTORY_MS, batch }).changes),
    /** Releases every live lease of a client; how many there were. */
    releaseLiveOfClient: (clientId: number, now: number): number => releaseClients.run({ clientId, now }).changes,
  };
}

export type ClaimStatements = ReturnType<typeof claimStatements>;
