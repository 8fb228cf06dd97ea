import type { TapTest } from './api.js';

/** The process warnings emitted while the test runs (they still print on stderr, as in an app). */
export function watchWarnings(tt: TapTest): Error[] {
  const seen: Error[] = [];
  const listener = (warning: Error): void => {
    seen.push(warning);
  };
  process.on('warning', listener);
  tt.teardown(() => {
    process.off('warning', listener);
  });
  return seen;
}
