import t from 'tap';
import { readFileSync } from 'node:fs';
import { toFetchHandler } from '../../adapters/fetch.js';
import { createNodeServer, toNodeHandler } from '../../adapters/node-http.js';
import type { ServiceResponse } from '../../lib/http/types.js';
import { OPENSSL_MISSING, selfSignedPair } from '../helpers/tls.js';

// adapters/shared.ts: each adapter checks its options when it is made, with exact messages.

const service = { handle: (): ServiceResponse => ({ status: 204, headers: {} }) };
type Make = (options: unknown) => unknown;

const makers: [string, Make][] = [
  ['toNodeHandler', (options) => toNodeHandler(service, options as Parameters<typeof toNodeHandler>[1])],
  ['toFetchHandler', (options) => toFetchHandler(service, options as Parameters<typeof toFetchHandler>[1])],
  ['createNodeServer', (options) => createNodeServer(service, options as Parameters<typeof createNodeServer>[1])],
];

function thrown(make: Make, options: unknown): string | undefined {
  try {
    make(options);
  } catch (error) {
    return error instanceof TypeError ? error.message : `not a TypeError: ${String(error)}`;
  }
  return undefined;
}

t.test('ADAPTERS: something other than a service throws a TypeError when the adapter is made, not a 500 on every request', async (t) => {
  const adapters: [string, (service: unknown) => unknown][] = [
    ['toNodeHandler', (candidate) => toNodeHandler(candidate as typeof service)],
    ['toFetchHandler', (candidate) => toFetchHandler(candidate as typeof service)],
    ['createNodeServer', (candidate) => createNodeServer(candidate as typeof service)],
  ];
  for (const [caller, make] of adapters) {
    for (const candidate of [undefined, null, {}, { handle: 'yes' }, () => undefined]) {
      t.equal(thrown(() => make(candidate), undefined), `${caller}: service must be a service from createService (an object with a handle() method)`,
        `${caller}(${String(candidate)})`);
    }
  }
});

t.test('ADAPTERS: a misspelt option or a wrong type throws a TypeError naming it, when the adapter is made', async (t) => {
  for (const [caller, make] of makers) {
    t.equal(thrown(make, { prefx: '/app' }), `${caller}: unknown option "prefx"`);
    t.equal(thrown(make, 'app'), `${caller}: options must be an object`);
    t.equal(thrown(make, { prefix: 5 }), `${caller}: options.prefix must be a string starting with "/"`);
    t.equal(thrown(make, { prefix: 'app' }), `${caller}: options.prefix must start with "/"`);
    for (const prefix of ['/a b', '/é', '/a?b', '/a#b', '/a\\b', '/a"b', '/a<b', '/a`b', '/a{b', '/a/./b', '/a/../b', '/a/..']) {
      t.equal(thrown(make, { prefix }), `${caller}: options.prefix must hold only characters a URL path carries as they are (percent-encode others)`, `${caller}: ${prefix}`);
    }
    for (const prefix of ['/a%20b', '/%C3%A9', "/v1.2/~team/a-b_c/x:y@z!$&'()*+,;=", '/a|b[c]^d', '/a..b/.c']) t.equal(thrown(make, { prefix }), undefined, `${caller}: ${prefix}`);
    t.equal(thrown(make, { onResponse: 5 }), `${caller}: options.onResponse must be a function`);
    t.equal(thrown(make, { prefix: '/app/', onResponse: () => undefined }), undefined, `${caller}: valid options`);
    t.equal(thrown(make, undefined), undefined, `${caller}: no options`);
  }
  t.equal(thrown(makers[0]![1], { tls: { cert: 'x', key: 'y' } }), 'toNodeHandler: unknown option "tls"', 'tls is a server option');
  const server: Make = makers[2]![1];
  t.equal(thrown(server, { onClientError: 'log' }), 'createNodeServer: options.onClientError must be a function');
  for (const tls of [{}, { cert: 'PEM' }, { cert: 5, key: 'PEM' }, null, 'PEM']) {
    t.equal(thrown(server, { tls }), 'createNodeServer: options.tls must be { cert, key }, each a PEM string or Buffer', JSON.stringify(tls));
  }
});

t.test('ADAPTERS: createNodeServer names a tls cert or key that is no PEM, or a key of another certificate, in a TypeError (not an OpenSSL code)', { skip: OPENSSL_MISSING }, async (t) => {
  const dir = t.testdir();
  const pair = (name: string): { cert: string; key: string } => {
    const files = selfSignedPair(t, dir, name);
    return { cert: readFileSync(files.cert, 'utf8'), key: readFileSync(files.key, 'utf8') };
  };
  const one = pair('one');
  const two = pair('two');
  const server: Make = makers[2]![1];
  t.equal(thrown(server, { tls: { cert: 'x', key: 'y' } }), 'createNodeServer: options.tls.cert is not a PEM certificate');
  t.equal(thrown(server, { tls: { cert: '', key: '' } }), 'createNodeServer: options.tls.cert is not a PEM certificate', 'empty');
  t.equal(thrown(server, { tls: { cert: one.cert, key: '' } }), 'createNodeServer: options.tls.key is not a PEM private key (without a passphrase)', 'an empty key');
  t.equal(thrown(server, { tls: { cert: one.key, key: one.cert } }), 'createNodeServer: options.tls.cert is not a PEM certificate', 'swapped');
  t.equal(thrown(server, { tls: { cert: one.cert, key: 'y' } }), 'createNodeServer: options.tls.key is not a PEM private key (without a passphrase)');
  t.equal(thrown(server, { tls: { cert: one.cert, key: two.key } }), 'createNodeServer: options.tls.key is not the private key of options.tls.cert');
  t.equal(thrown(server, { tls: { cert: Buffer.from(one.cert), key: Buffer.from(one.key) } }), undefined, 'a pair that goes together');
});
