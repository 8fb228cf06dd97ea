import t from 'tap';
import { requestHeaders } from '../../lib/http/headers.js';

// lib/http/headers.ts: a case-insensitive, single-valued view of request headers.

t.test('HEADERS: lookups are case-insensitive in the stored name and in the asked name', async (t) => {
  const headers = requestHeaders({ 'Content-Type': 'application/json', authorization: 'Bearer x', 'X-TASK-CLAIM': 'abc' });
  t.equal(headers.get('content-type'), 'application/json');
  t.equal(headers.get('Content-Type'), 'application/json');
  t.equal(headers.get('CONTENT-TYPE'), 'application/json');
  t.equal(headers.get('Authorization'), 'Bearer x');
  t.equal(headers.get('x-task-claim'), 'abc');
  t.equal(headers.get('if-match'), undefined);
});

t.test('HEADERS: repeated headers are joined with ", "', async (t) => {
  t.equal(requestHeaders({ 'if-match': ['"a"', '"b"'] }).get('if-match'), '"a", "b"', 'an array value');
  t.equal(requestHeaders({ Authorization: 'Bearer a', authorization: 'Bearer b' }).get('authorization'), 'Bearer a, Bearer b', 'two spellings of one name');
  t.equal(requestHeaders({ 'X-A': ['1', '2'], 'x-a': '3' }).get('x-a'), '1, 2, 3', 'both at once');
  t.equal(requestHeaders({ accept: ['application/json'] }).get('accept'), 'application/json', 'a one-element array is one value');
});

t.test('HEADERS: undefined values are absent, empty ones present', async (t) => {
  const headers = requestHeaders({ 'x-none': undefined, 'x-empty': '', 'x-list': [] });
  t.equal(headers.get('x-none'), undefined);
  t.equal(headers.get('x-empty'), '');
  t.equal(headers.get('x-list'), '');
});
