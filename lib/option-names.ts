// No imports: the adapters use this too, and must not load the store (better-sqlite3) for it.

/**
 * The options object of a public function, checked to hold only names it knows: a misspelt
 * option would otherwise be ignored without a word. Throws a TypeError naming `caller`.
 */
export function knownOptions(options: unknown, caller: string, known: readonly string[]): Readonly<Record<string, unknown>> {
  if (typeof options !== 'object' || options === null || Array.isArray(options)) {
    throw new TypeError(`${caller}: options must be an object`);
  }
  const given = options as Record<string, unknown>;
  for (const name of Object.keys(given)) {
    if (!known.includes(name)) throw new TypeError(`${caller}: unknown option "${name}"`);
  }
  return given;
}
