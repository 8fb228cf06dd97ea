import { existsSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

/**
 * Finds a file shipped at the package root (schema.sql, fixtures/). The code runs both from
 * `lib/` (tests, via tsx) and from `dist/lib/` (built), so the depth differs: walk up instead of
 * hard-coding it.
 */
export function packageFile(relativePath: string): string {
  let directory = dirname(fileURLToPath(import.meta.url));
  for (let depth = 0; depth < 5; depth += 1) {
    const candidate = join(directory, relativePath);
    if (existsSync(candidate)) return candidate;
    directory = dirname(directory);
  }
  throw new Error(`worker-task-api: cannot find ${relativePath} in the package`);
}
