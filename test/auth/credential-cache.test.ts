import t from 'tap';
import Database from 'better-sqlite3';
import { cachedAuthenticator } from '../../lib/auth/authenticate.js';
import { loadFixture } from '../../lib/fixtures/load.js';
import { clientStatements } from '../../lib/store/clients.js';
import { baseFixture, TOKENS } from '../helpers/fixture.js';

// lib/auth/authenticate.ts: verified credentials are cached by token, not by header text.

t.test('AUTH: one token sent with any scheme case or padding is one cache entry (one lookup), not one per header variant', async (t) => {
  const db = new Database(':memory:');
  loadFixture(db, baseFixture());
  const statements = clientStatements(db);
  let lookups = 0;
  const counting = { credentialByTokenHash: (hash: string) => ((lookups += 1), statements.credentialByTokenHash(hash)) };
  const authenticate = cachedAuthenticator(counting, 2);
  const variants = ['Bearer', 'bearer', 'BEARER', 'BeArEr'].flatMap((scheme) => [1, 5, 5000].map((spaces) => `${scheme}${' '.repeat(spaces)}${TOKENS.ada}`));
  for (const header of variants) t.equal(authenticate(header, 1, true).clientId, 100, JSON.stringify(header.slice(0, 12)));
  t.equal(lookups, 1, 'verified once for all variants');
  // With room for two entries, the variants never pushed out another client's credential.
  authenticate(`Bearer ${TOKENS.bob}`, 1, true);
  for (const header of variants) authenticate(header, 1, true);
  authenticate(`Bearer ${TOKENS.bob}`, 1, true);
  t.equal(lookups, 2, 'the other client stayed cached');
});
