import t from 'tap';
import { createServer, type AddressInfo } from 'node:net';
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { httpSourceProvider } from '../../lib/sources/http-provider.js';
import { describeFailure, parsePublished, parseSnapshot } from '../../lib/sources/provider.js';
import { withDeadline } from '../../lib/sources/timeout.js';
import { manualClock } from '../../lib/time/clock.js';
import { stubTracker } from '../helpers/stub-tracker.js';

/** Units of contract 9: reading what a provider returns, the deadline, the built-in http provider. */

t.test('SOURCES: parseSnapshot reads title, description, businessStatus and replies, ignores unknown members and fails facts of the wrong type', async (t) => {
  t.strictSame(parseSnapshot({ title: 'A' }), { title: 'A', description: null, businessStatus: null, replies: [] }, 'only a title');
  t.strictSame(
    parseSnapshot({
      title: 'A', description: 'D', businessStatus: 'open', secretToken: 'xyz', nested: { deep: 1 },
      replies: [{ id: 'r1', inReplyTo: 'ref-1', author: 'Grace', text: 'Yes', createdUtc: '2026-11-16T09:00:00.000Z', raw: { a: 1 } }],
    }),
    {
      title: 'A', description: 'D', businessStatus: 'open',
      replies: [{ id: 'r1', inReplyTo: 'ref-1', author: 'Grace', text: 'Yes', createdUtc: '2026-11-16T09:00:00.000Z' }],
    },
    'unknown members are dropped at every level',
  );
  t.strictSame(parseSnapshot({ title: 'A', description: null, businessStatus: null, replies: null }),
    { title: 'A', description: null, businessStatus: null, replies: [] }, 'explicit nulls');
  const numbered = parseSnapshot({ title: 'A', replies: [{ id: 5, inReplyTo: 9, text: 't' }] });
  t.strictSame(numbered?.replies, [{ id: '5', inReplyTo: '9', author: null, text: 't', createdUtc: null }], 'numeric ids become strings');
  const mixed = parseSnapshot({ title: 'A', replies: [null, 'x', { id: 'r', text: 5 }, { text: 'no id' }, { id: 'ok', inReplyTo: null, text: 'kept' }] });
  t.strictSame(mixed?.replies.map((reply) => reply.id), ['ok'], 'malformed replies are skipped, the facts stay');

  for (const [label, value] of [
    ['null', null], ['a string', 'A'], ['an array', [{ title: 'A' }]], ['no title', { description: 'D' }],
    ['a numeric title', { title: 5 }], ['replies not an array', { title: 'A', replies: {} }], ['undefined', undefined],
    ['a numeric description', { title: 'A', description: 7 }], ['a boolean businessStatus', { title: 'A', businessStatus: false }],
    ['an array businessStatus', { title: 'A', businessStatus: ['x'] }],
  ] as const) {
    t.equal(parseSnapshot(value), null, `${label} is not a snapshot`);
  }
});

t.test('SOURCES: parseSnapshot and parsePublished replace lone surrogates with U+FFFD, as SQLite would store them', async (t) => {
  const snapshot = parseSnapshot({
    title: 'a\ud800', description: '\udc00b', businessStatus: 'c\ud83d',
    replies: [{ id: 'r\ud800', inReplyTo: 'ref\udc00', author: 'x\ud800', text: 'y\udfff', createdUtc: null }],
  });
  t.strictSame(snapshot, {
    title: 'a\ufffd', description: '\ufffdb', businessStatus: 'c\ufffd',
    replies: [{ id: 'r\ufffd', inReplyTo: 'ref\ufffd', author: 'x\ufffd', text: 'y\ufffd', createdUtc: null }],
  });
  t.equal(parseSnapshot({ title: 'pair \ud83d\ude00 kept' })?.title, 'pair \ud83d\ude00 kept', 'a surrogate pair is left alone');
  t.equal(parsePublished({ ref: 'ref\udc00' }), 'ref\ufffd', 'a ref matches the inReplyTo of its replies');
});

t.test('SOURCES: parsePublished returns the ref of a publish result and null otherwise', async (t) => {
  t.equal(parsePublished({ ref: 'R-1' }), 'R-1');
  t.equal(parsePublished({ ref: 'R-1', url: 'http://internal/secret' }), 'R-1', 'other members are ignored');
  t.equal(parsePublished({ ref: 42 }), '42', 'a numeric ref becomes a string');
  for (const [label, value] of [
    ['empty ref', { ref: '' }], ['no ref', {}], ['null ref', { ref: null }], ['object ref', { ref: {} }],
    ['null', null], ['a string', 'R-1'], ['an array', ['R-1']],
  ] as const) {
    t.equal(parsePublished(value), null, label);
  }
});

t.test('SOURCES: withDeadline passes results and failures through, cuts off work that never settles at the deadline, and refuses a late answer', async (t) => {
  const clock = manualClock(0);
  t.equal(await withDeadline(async () => 'done', 1000, clock), 'done', 'work that finishes in time');
  await t.rejects(withDeadline(async () => {
    throw new Error('provider broke');
  }, 1000, clock), /provider broke/, 'a rejection passes through');
  await t.rejects(withDeadline(() => {
    throw new Error('thrown synchronously');
  }, 1000, clock), /thrown synchronously/, 'a synchronous throw is a rejection, not an exception');

  let seen: AbortSignal | undefined;
  const hung = withDeadline((signal) => {
    seen = signal;
    return new Promise<never>(() => {}); // never settles and ignores the signal
  }, 50, clock);
  clock.advance(49);
  t.equal(seen?.aborted, false, 'not cut off before the deadline');
  clock.advance(1);
  await t.rejects(hung, /no answer within 50 ms/, 'work that never settles is cut off at the deadline');
  t.equal(seen?.aborted, true, 'and its signal is aborted');

  let answer: ((value: string) => void) | undefined;
  const late = withDeadline(() => new Promise<string>((resolve) => { answer = resolve; }), 20, clock);
  clock.advance(20);
  answer?.('late');
  await t.rejects(late, /no answer/, 'an answer after the deadline does not count');
  // A non-promise result is accepted too (an embedder's provider may be synchronous).
  t.equal(await withDeadline(() => 'plain' as unknown as Promise<string>, 100, clock), 'plain');
  // An after() that returns no cancel function is tolerated.
  t.equal(await withDeadline(async () => 'fine', 100, { now: () => 0, after: () => 5 as unknown as () => void }), 'fine');
  // Without timers of its own, a clock leaves the deadline to real time.
  await t.rejects(withDeadline(() => new Promise<never>(() => {}), 1, { now: () => 0 }), /no answer within 1 ms/);
});

t.test('SOURCES: withDeadline refuses a result that settles after the deadline, even before the timer fires', async (t) => {
  let now = 0;
  // A clock whose timers have not had their turn: only the check of the settled result is left.
  const clock = { now: () => now, after: () => () => undefined };
  // Work that blocks past the deadline (a huge body parsed synchronously) settles before the timer's turn.
  await t.rejects(withDeadline(async () => { now += 5001; return 'late'; }, 5000, clock), /no answer within 5000 ms/);
  now = 0;
  t.equal(await withDeadline(async () => { now += 5000; return 'on time'; }, 5000, clock), 'on time', 'the deadline itself is in time');
});

t.test('SOURCES: the built-in http provider GETs {base}{encodeURIComponent(itemId)} and POSTs {base}{item}/requests', async (t) => {
  const stub = await stubTracker(t);
  stub.setItem('A/B 1', { title: 'Slash item', extra: true });
  const provider = httpSourceProvider(stub.base);
  const signal = new AbortController().signal;
  t.strictSame(await provider.refresh('A/B 1', signal), { title: 'Slash item', extra: true }, 'the raw JSON comes back');
  t.equal(stub.requests[0]?.method, 'GET');
  t.equal(stub.requests[0]?.path, '/items/A%2FB%201', 'the item id is one encoded path segment');

  await t.rejects(provider.refresh('missing', signal), /404/, 'a non-200 answer is a failure');
  stub.setItem('E', { title: 'x' });
  stub.failRefresh('E', { kind: 'status', status: 204 });
  await t.rejects(provider.refresh('E', signal), /204/, 'another 2xx is a failure for refresh');
  stub.failRefresh('E', { kind: 'invalid-json' });
  const notJson = await Promise.resolve(provider.refresh('E', signal)).then(() => null, (error: unknown) => describeFailure(error));
  t.equal(notJson, 'source answer is not JSON (22 bytes)', 'invalid JSON is a failure, described without quoting what the source sent');

  const published = await provider.publish('E', { title: 'Q', details: null, assistanceKind: 'Question', priority: 'high' }, signal);
  t.equal(parsePublished(published), stub.refs[0]);
  t.strictSame(stub.posts('E')[0]?.body, { title: 'Q', details: null, assistanceKind: 'Question', priority: 'high' });
  stub.failPublish('E', { kind: 'status', status: 500 });
  await t.rejects(provider.publish('E', { title: 'Q', details: null, assistanceKind: 'Question', priority: 'high' }, signal), /500/);

  const quick = httpSourceProvider(stub.base, { timeoutMs: 100 });
  stub.failRefresh('E', { kind: 'hang' });
  await t.rejects(quick.refresh('E', signal), { name: 'TimeoutError' }, 'no answer within its own time-out is a failure');
  // On Node 20 a garbage collection could drop a time-out signal that only AbortSignal.any()
  // held, and the call then waited for the source for ever (nodejs/node#57736).
  const collectGarbage = (): void => {
    setFlagsFromString('--expose-gc');
    (runInNewContext('gc') as () => void)();
  };
  // Collections every 10 ms until the call settles, so one comes after the headers however slow
  // the machine is; the time-out (1 s) leaves room for them. It fires, or the call is still
  // waiting 5 s later.
  const collecting = httpSourceProvider(stub.base, { timeoutMs: 1_000 });
  const afterCollection = async (label: string): Promise<void> => {
    let settled = false;
    const outcome = collecting.refresh('E', signal).then(() => 'answered', (error: unknown) => error).finally(() => { settled = true; });
    const startedAt = performance.now();
    while (!settled && performance.now() - startedAt < 5_000) {
      await new Promise((resolve) => setTimeout(resolve, 10));
      collectGarbage();
    }
    t.match(settled ? await outcome : 'still waiting 5 s later', { name: 'TimeoutError' }, label);
  };
  await afterCollection('its own time-out fires after a garbage collection too');
  // fetch follows its signal only weakly once it has answered: the body read must hold it.
  stub.failRefresh('E', { kind: 'stall-body' });
  await afterCollection('and so it does when the body stalls after the headers');
  stub.failRefresh('E', { kind: 'hang' });
  // A time-out the test will never reach: only the caller's signal can end this call.
  const patient = httpSourceProvider(stub.base, { timeoutMs: 600_000 });
  const aborted = new AbortController();
  const pending = patient.refresh('E', aborted.signal);
  aborted.abort();
  await t.rejects(pending, { name: 'AbortError' }, 'the caller\'s signal aborts the call');

  const small = httpSourceProvider(stub.base, { maxBodyBytes: 1000 });
  stub.setItem('Big', { title: 'Big', description: 'x'.repeat(2000) });
  await t.rejects(small.refresh('Big', signal), /over 1000 bytes/, 'a body over the cap is a failure');
  stub.setItem('Fits', { title: 'Fits', description: 'x'.repeat(900) });
  t.equal((await small.refresh('Fits', signal) as { title: string }).title, 'Fits', 'a body under the cap is read');
});

t.test('SOURCES: the http provider refuses item ids `.` and `..`, which the URL parser would resolve to another resource, without calling the source', async (t) => {
  const stub = await stubTracker(t);
  const provider = httpSourceProvider(stub.base);
  const signal = new AbortController().signal;
  const request = { title: 'Q', details: null, assistanceKind: 'Question', priority: 'normal' } as const;
  for (const itemId of ['.', '..']) {
    await t.rejects(provider.refresh(itemId, signal), /cannot be a path segment/, `refresh ${itemId}`);
    await t.rejects(provider.publish(itemId, request, signal), /cannot be a path segment/, `publish ${itemId}`);
  }
  t.equal(stub.requests.length, 0, 'the source was never called');
  stub.setItem('...', { title: 'Three dots' });
  t.match(await provider.refresh('...', signal), { title: 'Three dots' }, 'three dots are an ordinary segment');
  t.equal(stub.requests[0]?.path, '/items/...');
  const inQuery = httpSourceProvider(`${stub.base.replace(/items\/$/, '')}lookup?id=`);
  await t.rejects(inQuery.refresh('.', signal), /404/, 'in a query string a dot is just a value: the source is asked');
  t.equal(stub.requests[1]?.path, '/lookup', 'asked at the base path, the id in the query');
});

t.test('SOURCES: httpSourceProvider sends a user and password of its base URL as Basic authentication, never in the URL', async (t) => {
  const stub = await stubTracker(t);
  stub.setItem('T-1', { title: 'Locked' });
  const signal = new AbortController().signal;
  const withCredentials = stub.base.replace('http://', 'http://svc%40corp:S3cret%3Apass@');
  t.strictSame(await httpSourceProvider(withCredentials).refresh('T-1', signal), { title: 'Locked' }, 'the request is made');
  t.equal(stub.requests[0]?.authorization, `Basic ${Buffer.from('svc@corp:S3cret:pass').toString('base64')}`, 'decoded, as Basic credentials');
  t.equal(stub.requests[0]?.path, '/items/T-1');
  await httpSourceProvider(withCredentials).publish('T-1', { title: 'Q', details: null, assistanceKind: 'Question', priority: 'high' }, signal);
  t.equal(stub.requests[1]?.authorization, stub.requests[0]?.authorization, 'publish sends them too');
  await httpSourceProvider(stub.base).refresh('T-1', signal);
  t.equal(stub.requests[2]?.authorization, undefined, 'a base without credentials sends none');
  stub.failRefresh('T-1', { kind: 'status', status: 500 });
  const failure = await httpSourceProvider(withCredentials).refresh('T-1', signal).catch((error: unknown) => String(error));
  t.notMatch(failure, /S3cret/, 'a failure names no password');
  t.throws(() => httpSourceProvider('http://a%ZZ:b@127.0.0.1:9/items/'),
    new TypeError('httpSourceProvider: the user and password in baseUrl must be percent-encoded'), 'a bad escape is refused at once');
  t.throws(() => httpSourceProvider('http://svc%3Aadmin:b@127.0.0.1:9/items/'),
    new TypeError('httpSourceProvider: the user in baseUrl must not contain ":" (RFC 7617)'), 'a user with ":" cannot be sent');
});

t.test('SOURCES: httpSourceProvider refuses a base that is no http(s) URL and limits that are no positive integers', async (t) => {
  for (const base of ['ftp://tracker.example/items/', 'not a url', '', 'file:///etc/']) {
    t.throws(() => httpSourceProvider(base), new TypeError('httpSourceProvider: baseUrl must be an http: or https: URL'), base);
  }
  for (const [name, value] of [['timeoutMs', -1], ['timeoutMs', 0], ['timeoutMs', 'x'], ['maxBodyBytes', 1.5]] as const) {
    t.throws(() => httpSourceProvider('https://tracker.example/items/', { [name]: value } as { timeoutMs?: number }),
      new TypeError(`httpSourceProvider: options.${name} must be a positive integer`), `${name} ${String(value)}`);
  }
  t.throws(() => httpSourceProvider('https://tracker.example/items/', { timeout: 5 } as { timeoutMs?: number }),
    new TypeError('httpSourceProvider: unknown option "timeout"'), 'a misspelt option');
  t.throws(() => httpSourceProvider('https://tracker.example/items/', 'fast' as { timeoutMs?: number }),
    new TypeError('httpSourceProvider: options must be an object'));
  t.doesNotThrow(() => httpSourceProvider('http://127.0.0.1:9/items/', { timeoutMs: 1, maxBodyBytes: 1 }));
});

t.test('SOURCES: a failure is logged with its cause, so a refused connection says so rather than only "fetch failed"', async (t) => {
  t.equal(describeFailure(new TypeError('fetch failed', { cause: new Error('getaddrinfo ENOTFOUND tracker.invalid') })),
    'fetch failed: getaddrinfo ENOTFOUND tracker.invalid');
  t.equal(describeFailure(new Error('plain')), 'plain');
  // Several addresses (::1 and 127.0.0.1, say), each refused: node's AggregateError has no message of its own.
  const both = new AggregateError([new Error('connect ECONNREFUSED ::1:8080'), new Error('connect ECONNREFUSED 127.0.0.1:8080')], '');
  t.equal(describeFailure(new TypeError('fetch failed', { cause: both })),
    'fetch failed: connect ECONNREFUSED ::1:8080; connect ECONNREFUSED 127.0.0.1:8080');
  t.equal(describeFailure(new TypeError('fetch failed', { cause: Object.assign(new Error(''), { code: 'ECONNRESET' }) })), 'fetch failed: ECONNRESET');
  t.equal(describeFailure('a string'), 'a string');
  // A real refused connection: a port that was just given up.
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  await new Promise<void>((resolve) => server.close(() => resolve()));
  const provider = httpSourceProvider(`http://127.0.0.1:${port}/items/`);
  const refused = await Promise.resolve(provider.refresh('T-1', new AbortController().signal)).then(() => null, (error: unknown) => error);
  t.match(describeFailure(refused), /^fetch failed: .*ECONNREFUSED/);
});
