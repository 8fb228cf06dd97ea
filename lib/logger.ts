/** Where the service reports what it cannot tell the client. */
export interface Logger {
  error(entry: Record<string, unknown>): void;
  /** Side effects worth a line in the server log (publications to linked sources). */
  info?(entry: Record<string, unknown>): void;
  debug?(entry: Record<string, unknown>): void;
}
