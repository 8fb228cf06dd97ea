/** The scopes of the spec, in the order the spec lists them. */
export const SCOPES = [
  'tasks:read',
  'tasks:update',
  'tasks:time',
  'tasks:notes',
  'human-requests:create',
  'human-requests:read',
] as const;

export type Scope = (typeof SCOPES)[number];

const scopeSet: ReadonlySet<string> = new Set(SCOPES);

export function isScope(value: string): value is Scope {
  return scopeSet.has(value);
}
