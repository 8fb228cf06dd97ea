import type { PublishRequest, SourceProvider } from './provider.js';

export const HTTP_SOURCE_TIMEOUT_MS = 5000;

/**
 * The built-in `http` provider (contract 9): `refresh` is `GET {base}{encodeURIComponent(itemId)}`
 * expecting 200 JSON; `publish` is `POST {base}{encodeURIComponent(itemId)}/requests` expecting
 * 2xx JSON `{ref}`. Anything else, or no answer within 5 seconds, is a failure. Uses Node's own
 * fetch, so no connection settings or credentials of the source ever pass through the service's
 * data: they stay in the base URL the operator configured.
 */
export function httpSourceProvider(baseUrl: string, options: { timeoutMs?: number } = {}): SourceProvider {
  const base = new URL(baseUrl).toString();
  const timeoutMs = options.timeoutMs ?? HTTP_SOURCE_TIMEOUT_MS;

  async function call(url: string, init: RequestInit, signal: AbortSignal, accept: (status: number) => boolean): Promise<unknown> {
    const response = await fetch(url, {
      ...init,
      headers: { accept: 'application/json', ...(init.body === undefined ? {} : { 'content-type': 'application/json' }) },
      signal: AbortSignal.any([signal, AbortSignal.timeout(timeoutMs)]),
      redirect: 'error',
    });
    if (!accept(response.status)) {
      await response.body?.cancel();
      throw new Error(`source answered ${response.status}`);
    }
    return response.json();
  }

  return {
    refresh: (itemId, signal) => call(`${base}${encodeURIComponent(itemId)}`, { method: 'GET' }, signal, (status) => status === 200),
    publish: (itemId, request: PublishRequest, signal) =>
      call(
        `${base}${encodeURIComponent(itemId)}/requests`,
        { method: 'POST', body: JSON.stringify(request) },
        signal,
        (status) => status >= 200 && status < 300,
      ),
  };
}
