import t from 'tap';
import { claimToken, idempotencyKey, incomingIfMatch, taskIfMatch } from '../../lib/http/preconditions.js';
import { codeOf } from '../helpers/expect-problem.js';

/** Unit rules of the write headers: Idempotency-Key (step 8), If-Match (step 9), X-Task-Claim (step 10). */

const KEY_CHARS = 'abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._:-';

t.test('IDEMPOTENCY-KEY: 1 to 100 characters of [a-zA-Z0-9._:-]; anything else is 422 idempotency_key_required', async (t) => {
  const hundred = KEY_CHARS.repeat(2).slice(0, 100);
  t.equal(hundred.length, 100);
  t.equal(idempotencyKey(hundred, 'required'), hundred, '100 characters of the alphabet');
  t.equal(idempotencyKey('a', 'optional'), 'a', 'one character');
  t.equal(idempotencyKey('A.b_c:d-9', 'required'), 'A.b_c:d-9');
  for (const bad of ['', `${hundred}x`, 'a b', 'ключ', 'a/b', 'a\tb', ' a', 'a+b', 'a\nb']) {
    t.equal(codeOf(() => idempotencyKey(bad, 'required')), 'idempotency_key_required', `required: ${JSON.stringify(bad)}`);
    t.equal(codeOf(() => idempotencyKey(bad, 'optional')), 'idempotency_key_required', `optional: ${JSON.stringify(bad)}`);
  }
});

t.test('IDEMPOTENCY-KEY: missing is 422 where required, null where optional, ignored where not used', async (t) => {
  t.equal(codeOf(() => idempotencyKey(undefined, 'required')), 'idempotency_key_required');
  t.equal(idempotencyKey(undefined, 'optional'), null);
  t.equal(idempotencyKey(undefined, 'none'), null);
  t.equal(idempotencyKey('a b', 'none'), null, 'operations without a key ignore the header');
});

t.test('IF-MATCH: only the exact quoted task ETag parses; missing is 428, anything else 412', async (t) => {
  t.strictSame(taskIfMatch('"task-1-plan-1"'), { taskId: 1, version: 1 });
  t.strictSame(taskIfMatch('"task-2147483647-plan-9007199254"'), { taskId: 2147483647, version: 9007199254 });
  t.equal(codeOf(() => taskIfMatch(undefined)), 'precondition_required');
  for (const bad of [
    '', '*', 'W/"task-1-plan-1"', 'task-1-plan-1', '"task-1-plan-1', "'task-1-plan-1'", '"task-01-plan-1"',
    '"task-1-plan-0"', '"task-0-plan-1"', '"task-1-plan-1", "task-1-plan-2"', '"TASK-1-PLAN-1"', '"task-1-plan-1x"',
    'garbage', '"6f1c8a52-3f7e-4a8e-9d1e-2b7f0c4d9a10"',
  ]) {
    t.equal(codeOf(() => taskIfMatch(bad)), 'stale_update', `malformed ${JSON.stringify(bad)}`);
  }
});

t.test('IF-MATCH: Incoming revisions are a quoted UUID, returned bare and lowercase', async (t) => {
  t.equal(incomingIfMatch('"6F1C8A52-3F7E-4A8E-9D1E-2B7F0C4D9A10"'), '6f1c8a52-3f7e-4a8e-9d1e-2b7f0c4d9a10');
  t.equal(codeOf(() => incomingIfMatch(undefined)), 'precondition_required');
  for (const bad of ['*', '6f1c8a52-3f7e-4a8e-9d1e-2b7f0c4d9a10', 'W/"6f1c8a52-3f7e-4a8e-9d1e-2b7f0c4d9a10"', '"task-1-plan-1"', '""']) {
    t.equal(codeOf(() => incomingIfMatch(bad)), 'stale_update', `malformed ${JSON.stringify(bad)}`);
  }
});

t.test('X-TASK-CLAIM: a UUID other than the all-zero one, lowercased; absent is null; malformed or zero is 400', async (t) => {
  t.equal(claimToken(undefined), null);
  t.equal(claimToken('6F1C8A52-3F7E-4A8E-9D1E-2B7F0C4D9A10'), '6f1c8a52-3f7e-4a8e-9d1e-2b7f0c4d9a10');
  for (const bad of ['', 'nope', '00000000-0000-0000-0000-000000000000', '6f1c8a523f7e4a8e9d1e2b7f0c4d9a10', '{6f1c8a52-3f7e-4a8e-9d1e-2b7f0c4d9a10}', '"6f1c8a52-3f7e-4a8e-9d1e-2b7f0c4d9a10"']) {
    t.equal(codeOf(() => claimToken(bad)), 'validation_failed', `malformed ${JSON.stringify(bad)}`);
  }
});
