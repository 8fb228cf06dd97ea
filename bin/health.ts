import type { Handler } from '../adapters/shared.js';
import { newTraceId, problemResponse } from '../lib/http/problem.js';
import type { ServiceResponse } from '../lib/http/types.js';
import { databaseFileCheck, type Db } from '../lib/store/open.js';

/** The standalone server's liveness path, outside `/api/v1`. */
const HEALTH_PATH = '/healthz';

export interface HealthOptions {
  readonly db: Db;
  /** True once the server is shutting down: the check then answers 503 so balancers move on. */
  readonly stopping?: () => boolean;
}

// Every response of the server carries X-Trace-Id (contract 1), the health check's too.
function status(code: 200 | 503, value: 'ok' | 'unavailable'): ServiceResponse {
  return {
    status: code,
    headers: { 'content-type': 'application/json', 'cache-control': 'no-store', 'x-trace-id': newTraceId() },
    body: JSON.stringify({ status: value }),
    meta: { route: HEALTH_PATH },
  };
}

/**
 * Puts `GET /healthz` in front of the service: 200 `{"status":"ok"}` while the database answers
 * a trivial query and its file is still at its path, 503 `{"status":"unavailable"}` otherwise.
 * Neither authenticated nor rate limited; everything else goes to the service unchanged.
 */
export function withHealthCheck(service: Handler, options: HealthOptions): Handler {
  let probe: { get(): unknown } | undefined;
  // A database file removed while serving still answers reads, from the unlinked file.
  const fileInPlace = databaseFileCheck(options.db);
  const databaseAnswers = (): boolean => {
    try {
      probe ??= options.db.prepare('SELECT id FROM organisations LIMIT 1');
      probe.get();
      return fileInPlace();
    } catch {
      return false;
    }
  };

  return {
    handle(request) {
      const url = typeof request.url === 'string' ? request.url : '';
      const queryAt = url.indexOf('?');
      if ((queryAt === -1 ? url : url.slice(0, queryAt)) !== HEALTH_PATH) return service.handle(request);
      if (request.method !== 'GET' && request.method !== 'HEAD') {
        return { ...problemResponse('method_not_allowed', newTraceId(), { allow: 'GET, HEAD' }), meta: { route: HEALTH_PATH } };
      }
      return options.stopping?.() !== true && databaseAnswers() ? status(200, 'ok') : status(503, 'unavailable');
    },
  };
}
