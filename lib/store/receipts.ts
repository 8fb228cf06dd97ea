import type { Db } from './open.js';
import { batchedPurge } from './purge.js';

export interface Receipt {
  /** SHA-256 (hex) of the request's method, path and canonical body. */
  fingerprint: string;
  status: number;
  headers: string;
  body: string | null;
}

const RECEIPT_LIFETIME_MS = 24 * 60 * 60 * 1000;

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
  return {
    find: (organisationId: number, clientId: number, key: string, now: number) => find.get({ organisationId, clientId, key, now }),
    store(organisationId: number, clientId: number, key: string, now: number, receipt: Receipt): void {
      insert.run({ organisationId, clientId, key, now, expires: now + RECEIPT_LIFETIME_MS, ...receipt });
    },
    /** Expired receipts go on later writes (lookups ignore them anyway: this only bounds the table). */
    purgeExpired: batchedPurge((now, batch) => purge.run({ now, batch }).changes),
  };
}

export type ReceiptStatements = ReturnType<typeof receiptStatements>;
