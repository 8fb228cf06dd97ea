/** A header as hosts deliver it: Node gives arrays for repeated headers. */
export type HeaderValue = string | readonly string[] | undefined;

/** What a host adapter hands to `handle()`. */
export interface ServiceRequest {
  readonly method: string;
  /** Path and query as sent, e.g. `/api/v1/tasks/7?x=1`. */
  readonly url: string;
  /** Header names in any case; the service compares them case-insensitively. */
  readonly headers: Readonly<Record<string, HeaderValue>>;
  /** Raw body bytes (or text); absent, null or empty when there is none. */
  readonly body?: Uint8Array | string | null | undefined;
}

/** Facts about a handled request for the host's own logs; never part of what a client is sent. */
export interface ResponseMeta {
  /** The authenticated client, once authentication has passed. */
  clientId?: number;
  /** The operation's path template, e.g. `/api/v1/tasks/{id}`, once the operation is known. */
  route?: string;
  /**
   * The method as sent, set by the node adapter only where the host has no request object to read
   * it from: a method node:http cannot parse, whose answer goes to `onClientError`.
   */
  method?: string;
}

/** What `handle()` answers. Header names are lowercase; `body` is absent when there is none. */
export interface ServiceResponse {
  status: number;
  headers: Record<string, string>;
  body?: string;
  /** For request logs only: adapters never send it. */
  meta?: ResponseMeta;
}
