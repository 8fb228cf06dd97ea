import Database from 'better-sqlite3';
import { createService, type Service } from '../../lib/service.js';
import type { ServiceOptions } from '../../lib/options.js';
import { loadFixture } from '../../lib/fixtures/load.js';
import { manualClock, type ManualClock } from '../../lib/time/clock.js';
import type { ServiceResponse } from '../../lib/http/types.js';
import type { Logger } from '../../lib/logger.js';
import { baseFixture, TEST_NOW, type FixtureShape } from './fixture.js';
import { openApiProblems, openApiRequestProblems } from './openapi-check.js';

export interface CallOptions {
  token?: string | null;
  headers?: Record<string, string | string[]>;
  body?: unknown;
  /** Sent verbatim (string or bytes) instead of JSON-encoding `body`. */
  raw?: string | Uint8Array;
}

export interface CallResult {
  status: number;
  headers: Record<string, string>;
  text: string | undefined;
  json: any;
}

export interface Harness {
  service: Service;
  db: Database.Database;
  clock: ManualClock;
  errors: Record<string, unknown>[];
  call(method: string, url: string, options?: CallOptions): Promise<CallResult>;
}

/**
 * Further options of createService a harness may pass (linked sources); `logger` replaces the
 * harness's, and so does `clock` (the harness's `clock` then moves nothing the service reads).
 */
export type HarnessServiceOptions = Pick<ServiceOptions, 'sources' | 'sourceTimeoutMs' | 'sourceMaxAgeMs' | 'logger' | 'clock'>;

/**
 * A fresh in-memory service over the shared test world. Every response, and every request body
 * the service accepts, is checked against the OpenAPI document; a mismatch throws, failing the
 * test that made the call.
 */
export function harness(options: {
  fixture?: FixtureShape; now?: string; rateLimit?: number; defaultToken?: string; serviceOptions?: HarnessServiceOptions;
} = {}): Harness {
  const db = new Database(':memory:');
  const clock = manualClock(options.now ?? TEST_NOW);
  loadFixture(db, options.fixture ?? baseFixture(), { now: clock.now() });
  const errors: Record<string, unknown>[] = [];
  const logger: Logger = { error: (entry) => errors.push(entry) };
  const service = createService({
    db, clock, logger, ...(options.rateLimit === undefined ? {} : { rateLimit: options.rateLimit }), ...options.serviceOptions,
  });
  return {
    service,
    db,
    clock,
    errors,
    async call(method, url, call = {}) {
      const headers: Record<string, string | string[]> = { ...call.headers };
      const token = call.token === undefined ? options.defaultToken : call.token;
      if (token !== null && token !== undefined) headers['authorization'] ??= `Bearer ${token}`;
      let body: string | Uint8Array | undefined = call.raw;
      if (body === undefined && call.body !== undefined) {
        body = JSON.stringify(call.body);
        headers['content-type'] ??= 'application/json';
      }
      const response: ServiceResponse = await service.handle({ method, url, headers, body });
      const problems = [...openApiProblems(method, url, response), ...openApiRequestProblems(method, url, body, response.status)];
      if (problems.length > 0) throw new Error(`the exchange does not match the OpenAPI document:\n${problems.join('\n')}`);
      let json: unknown;
      if (response.body !== undefined && response.body !== '') {
        try {
          json = JSON.parse(response.body);
        } catch {
          json = undefined;
        }
      }
      return { status: response.status, headers: response.headers, text: response.body, json };
    },
  };
}
