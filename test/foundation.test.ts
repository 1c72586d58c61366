import assert from 'node:assert/strict';
import { readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { loadConfig, parseDotEnv, variables } from '../src/config.js';
import { tokenChecker } from '../src/http/auth.js';
import { notAuthorizedBody, TestServer } from './helpers/server.js';

describe('foundation over HTTP', () => {
  let server: TestServer;
  before(async () => {
    server = await TestServer.start();
  });
  after(async () => {
    await server.stop();
  });

  test('GET /health needs no token and answers ok as JSON', async () => {
    const res = await server.request('GET', '/health', { token: null });
    assert.equal(res.status, 200);
    assert.deepEqual(res.body, { status: 'ok' });
    assert.equal(res.headers.get('content-type'), 'application/json; charset=utf-8');
  });

  test('protected routes answer 403 with the fixed body for a missing, malformed or wrong token', async () => {
    for (const headers of [
      {} as Record<string, string>,
      { authorization: 'Bearer' },
      { authorization: 'Basic abc' },
      { authorization: 'Bearer wrong' },
    ]) {
      const res = await server.request('GET', '/no-such-route', { token: null, headers });
      assert.equal(res.status, 403);
      assert.deepEqual(res.body, notAuthorizedBody);
    }
  });

  test('the token is checked before the body is read: a bad body without a token is still 403', async () => {
    const res = await server.request('POST', '/anything', {
      token: null,
      rawBody: '{not json',
      contentType: 'text/plain',
    });
    assert.equal(res.status, 403);
  });

  test('unknown routes are 404 and wrong methods 405 with Allow, both with the error body', async () => {
    const missing = await server.request('GET', '/no-such-route');
    assert.equal(missing.status, 404);
    assert.equal(missing.json.success, false);
    assert.equal(missing.json.error, 'Not Found');
    const wrongMethod = await server.request('DELETE', '/openapi.json');
    assert.equal(wrongMethod.status, 405);
    assert.equal(wrongMethod.headers.get('allow'), 'GET');
    assert.equal(wrongMethod.json.error, 'Method Not Allowed');
  });

  test('OpenAPI 3 document and docs page are public', async () => {
    const spec = await server.request('GET', '/openapi.json', { token: null });
    assert.equal(spec.status, 200);
    assert.match(String(spec.json.openapi), /^3\./);
    const docs = await server.request('GET', '/docs', { token: null });
    assert.equal(docs.status, 200);
    assert.match(docs.headers.get('content-type') ?? '', /text\/html/);
  });

  test('the token never appears in the logs', () => {
    assert.ok(!server.logs.join('\n').includes(server.token));
  });
});

describe('generated token', () => {
  test('is created with mode 0600 on first start, reused on the next, and accepted', async () => {
    const first = await TestServer.start({ generateToken: true });
    const file = join(first.dataDir, 'api_token');
    const token = readFileSync(file, 'utf8').trim();
    assert.ok(Buffer.from(token, 'base64url').length >= 32);
    assert.equal(statSync(file).mode & 0o777, 0o600);
    assert.ok(
      first.logs.some((line) => line.includes(file)),
      'start-up says where the token is',
    );
    assert.ok(!first.logs.join('\n').includes(token), 'the token itself is not logged');
    await first.stop({ keepData: true });
    const second = await TestServer.start({ generateToken: true, dataDir: first.dataDir });
    assert.equal(readFileSync(file, 'utf8').trim(), token);
    assert.equal((await second.request('GET', '/no-such', { token })).status, 404);
    assert.equal((await second.request('GET', '/no-such', { token: '' })).status, 403);
    await second.stop();
  });

  test('SIGTERM exits 0', async () => {
    const server = await TestServer.start();
    assert.equal(await server.stop(), 0);
  });
});

describe('configuration', () => {
  test('defaults match the design contract', () => {
    const config = loadConfig({}, '/nonexistent');
    assert.equal(config.PORT, 20212);
    assert.equal(config.HOST, '0.0.0.0');
    assert.equal(config.DATA_DIR, './data');
    assert.equal(config.NMAP_MAX_HOSTS, 4096);
    assert.equal(config.TOOL_CONCURRENCY, 4);
    assert.equal(config.tokenFromFile, true);
  });

  test('bad numbers are refused with the variable named', () => {
    assert.throws(() => loadConfig({ PORT: 'eighty' }, '/nonexistent'), /PORT must be a whole number/);
    assert.throws(
      () => loadConfig({ MAX_STREAMS: '256' }, '/nonexistent'),
      /MAX_STREAMS must be below MAX_CONNECTIONS \(256\)/,
    );
    assert.equal(loadConfig({}, '/nonexistent').MAX_STREAMS, 64);
    assert.equal(loadConfig({ MAX_CONNECTIONS: '40' }, '/nonexistent').MAX_STREAMS, 10);
    assert.equal(loadConfig({ MAX_CONNECTIONS: '3' }, '/nonexistent').MAX_STREAMS, 1);
    assert.throws(
      () => loadConfig({ TOOL_CONCURRENCY: '0' }, '/nonexistent'),
      /TOOL_CONCURRENCY must be between/,
    );
  });

  test('.env parsing: comments, quotes, export', () => {
    assert.deepEqual(parseDotEnv('# c\nexport A=1\nB="x y"\nC=z # trailing\n'), { A: '1', B: 'x y', C: 'z' });
  });

  test('every variable is documented in README and docs/configuration.md, with its default and meaning', () => {
    const root = fileURLToPath(new URL('../../', import.meta.url));
    for (const doc of ['README.md', 'docs/configuration.md']) {
      const rows = readFileSync(join(root, doc), 'utf8')
        .split('\n')
        .map((line) => line.split('|').map((cell) => cell.trim()));
      for (const [name, spec] of Object.entries(variables)) {
        const row = rows.find((cells) => cells[1] === `\`${name}\``);
        assert.ok(row, `${doc} documents ${name}`);
        const shownDefault = spec.default === '' ? '(empty)' : `\`${spec.default}\``;
        assert.deepEqual(row.slice(2, 4), [shownDefault, spec.description], `${doc}: ${name}`);
      }
    }
  });

  test('an empty token authorises nothing', () => {
    assert.equal(tokenChecker('')('Bearer '), false);
    assert.equal(tokenChecker('abc')('Bearer abc'), true);
    assert.equal(tokenChecker('abc')('Bearer abcd'), false);
  });
});
