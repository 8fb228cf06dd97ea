import type { Db } from './open.js';

export interface Receipt {
  fingerprint: string;
  status: number;
  headers: string;
  body: string | null;
}

const RECEIPT_LIFETIME_MS = 24 * 60 * 60 * 1000;
const PURGE_INTERVAL_MS = 60_000;
/**
 * Receipts one purge deletes at most: a backlog (a day without writes, a restart after one) goes
 * a batch per write, never as one long delete that holds every other write back and leaves the
 * WAL file at its size.
 */
export const PURGE_BATCH = 1000;

/** Idempotency receipts: stored in the transaction of the mutation they record. */
export function receiptStatements(db: Db) {
  const find = db.prepare<[{ organisationId: number; clientId: number; key: string; now: number }], Receipt>(`
    SELECT fingerprint, status, headers, body FROM idempotency_receipts
     WHERE organisation_id = @organisationId AND client_id = @clientId AND key = @key AND expires_utc > @now`);
  const insert = db.prepare(`
    INSERT INTO idempotency_receipts (organisation_id, client_id, key, fingerprint, status, headers, body, created_utc, expires_utc)
    VALUES (@organisationId, @clientId, @key, @fingerprint, @status, @headers, @body, @now, @expires)
    ON CONFLICT (organisation_id, client_id, key) DO UPDATE SET fingerprint = excluded.fingerprint,
      status = excluded.status, headers = excluded.headers, body = excluded.body,
      created_utc = excluded.created_utc, expires_utc = excluded.expires_utc`);
  const purge = db.prepare<[{ now: number; batch: number }]>(`
    DELETE FROM idempotency_receipts WHERE (organisation_id, client_id, key) IN (
      SELECT organisation_id, client_id, key FROM idempotency_receipts WHERE expires_utc <= @now LIMIT @batch)`);
  let lastPurge = Number.NEGATIVE_INFINITY;
  return {
    find: (organisationId: number, clientId: number, key: string, now: number) => find.get({ organisationId, clientId, key, now }),
    store(organisationId: number, clientId: number, key: string, now: number, receipt: Receipt): void {
      insert.run({ organisationId, clientId, key, now, expires: now + RECEIPT_LIFETIME_MS, ...receipt });
    },
    /**
     * Expired receipts go on a later write, a batch at most once a minute, or on every write
     * while a backlog lasts (lookups ignore expired rows anyway, so this only bounds the table);
     * no scheduled job is needed.
     */
    purgeExpired(now: number): void {
      if (now >= lastPurge && now - lastPurge < PURGE_INTERVAL_MS) return;
      const deleted = purge.run({ now, batch: PURGE_BATCH }).changes;
      lastPurge = deleted < PURGE_BATCH ? now : Number.NEGATIVE_INFINITY;
    },
  };
}

export type ReceiptStatements = ReturnType<typeof receiptStatements>;
