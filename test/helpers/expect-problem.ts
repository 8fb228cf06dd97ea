import { ServiceError, type ErrorCode } from '../../lib/domain/errors.js';
import { ERROR_CATALOGUE } from '../../lib/http/problem.js';
import type { TapTest } from './api.js';

export const TRACE_ID = /^[0-9a-f]{32}$/;

/** A response from the harness (`text`) or straight from `handle()` (`body`). */
export interface AnyResponse {
  status: number;
  headers: Record<string, string>;
  text?: string | undefined;
  body?: string | undefined;
}

/**
 * Asserts the contract-1 error shape: `application/problem+json`, exactly the members type
 * (`about:blank`), title, status, code and traceId, the catalogue's status and title, and a
 * traceId of 32 lowercase hex characters equal to the `X-Trace-Id` header.
 */
export function expectProblem(tt: TapTest, response: AnyResponse, code: ErrorCode, what: string = code): void {
  const entry = ERROR_CATALOGUE[code];
  tt.equal(response.status, entry.status, `${what}: status ${entry.status}`);
  tt.equal(response.headers['content-type'], 'application/problem+json', `${what}: problem+json`);
  let body: Record<string, unknown> = {};
  try {
    body = JSON.parse(response.text ?? response.body ?? '') as Record<string, unknown>;
  } catch {
    tt.fail(`${what}: body is not JSON`);
    return;
  }
  tt.same(Object.keys(body).sort(), ['code', 'status', 'title', 'traceId', 'type'], `${what}: exactly the five members`);
  tt.equal(body['type'], 'about:blank', `${what}: type`);
  tt.equal(body['title'], entry.title, `${what}: title`);
  tt.equal(body['status'], entry.status, `${what}: status member`);
  tt.equal(body['code'], code, `${what}: code ${code}`);
  tt.match(body['traceId'], TRACE_ID, `${what}: traceId is 32 lowercase hex`);
  tt.equal(response.headers['x-trace-id'], body['traceId'], `${what}: X-Trace-Id equals traceId`);
}

/** Runs a unit of the pipeline and answers the code of the ServiceError it throws, or 'ok'; other errors propagate. */
export function codeOf(run: () => unknown): ErrorCode | 'ok' {
  try {
    run();
    return 'ok';
  } catch (error) {
    if (error instanceof ServiceError) return error.code;
    throw error;
  }
}
