/**
 * What a write use case decides. The write runner (lib/http/write-runner.ts) makes the answer
 * from it: the operation's success status, the new ETag, the receipt of an idempotent request.
 */
export interface MutationOutcome {
  /** False for a write that changes nothing (`PATCH {}`): the workspace version stays. */
  readonly changed: boolean;
  /** What the operation answers with (a lease, a release, the created request). */
  readonly body?: unknown;
  /** The id of what the write created, for the answer to locate it. */
  readonly createdId?: number;
  /** Set when the request used a deprecated input: what the answer warns its sender. */
  readonly deprecation?: string;
}
