import t from 'tap';

/**
 * Checks the run itself: tap starts test files with the loaders of the plugin set it was built
 * with, and `npm ci` installs it built with @tapjs/typescript. Without `npm test`'s pretest
 * (scripts/tap-plugins.mjs), the first run after an install loads ts-node beside tsx in every
 * test file, about two seconds more CPU each.
 */
t.test('TEST RUN: test files start with tsx only, not @tapjs/typescript (npm test built tap for the configured plugins)', async (tt) => {
  const loaders = process.execArgv.filter((arg) => arg.startsWith('--import') || arg.startsWith('--loader'));
  tt.ok(loaders.some((arg) => arg.includes('tsx')), `tsx is a loader: ${loaders.join(' ')}`);
  tt.notOk(
    loaders.some((arg) => arg.includes('@tapjs/typescript')),
    `no @tapjs/typescript loader: ${loaders.join(' ')} (run npm test, not tap, after an install)`,
  );
});
