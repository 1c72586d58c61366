/**
 * HTTP logic in process (app.inject, no child process): authentication, routing, validation, the
 * error body with its code, and device CRUD, on both stores (test/helpers/stores.ts).
 */
import assert from 'node:assert/strict';
import { readFileSync, readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { DomainError, errorKinds } from '../../src/errors.js';
import { ApiError, errorResponse } from '../../src/http/errors.js';
import type { InProcessServer } from '../helpers/inject.js';
import { notAuthorizedBody } from '../helpers/server.js';
import { onEachStore } from '../helpers/stores.js';

const repoRoot = fileURLToPath(new URL('../../../', import.meta.url));

onEachStore('HTTP in process', (_store, start) => {
  let app: InProcessServer;
  before(async () => {
    app = await start();
  });
  after(async () => {
    await app.stop();
  });

  test('a missing or wrong token is 403 FORBIDDEN, before routing and body parsing', async () => {
    for (const token of [null, 'wrong']) {
      const res = await app.request('POST', '/no-such-route', {
        token,
        rawBody: '{bad',
        contentType: 'text/plain',
      });
      assert.equal(res.status, 403);
      assert.deepEqual(res.body, notAuthorizedBody);
    }
  });

  test('unknown route 404 NOT_FOUND; wrong method 405 METHOD_NOT_ALLOWED with Allow, also for plugin routes', async () => {
    const missing = await app.request('GET', '/no-such-route');
    assert.deepEqual(
      [missing.status, missing.json.code, missing.json.error],
      [404, 'NOT_FOUND', 'Not Found'],
    );
    for (const [method, path, allow] of [
      ['PUT', '/devices', 'GET'],
      ['DELETE', '/nettools/scan', 'GET, POST'],
      ['GET', '/nettools/nmap', 'POST'],
      ['PATCH', '/device/02:00:00:00:00:01', 'GET, POST'],
    ] as const) {
      const res = await app.request(method, path);
      assert.equal(res.status, 405, `${method} ${path}`);
      assert.equal(res.json.code, 'METHOD_NOT_ALLOWED');
      assert.equal(res.headers.get('allow'), allow, `${method} ${path}`);
    }
  });

  test('bodies: invalid JSON 400 INVALID_JSON, not JSON 415, too large 413, schema 400 VALIDATION_FAILED', async () => {
    const cases: [Parameters<InProcessServer['request']>[2], number, string][] = [
      [{ rawBody: '{"devName":' }, 400, 'INVALID_JSON'],
      [{ rawBody: '{"__proto__":{"x":1}}' }, 400, 'INVALID_JSON'],
      [
        { rawBody: 'devName=x', contentType: 'application/x-www-form-urlencoded' },
        415,
        'UNSUPPORTED_MEDIA_TYPE',
      ],
      [{ rawBody: JSON.stringify({ devName: 'x'.repeat(70_000) }) }, 413, 'PAYLOAD_TOO_LARGE'],
      [{ body: { devName: 5 } }, 400, 'VALIDATION_FAILED'],
      [{ body: { noSuchField: 'x' } }, 400, 'VALIDATION_FAILED'],
    ];
    for (const [options, status, code] of cases) {
      const res = await app.request('POST', '/device/02:00:00:00:00:01', options);
      assert.deepEqual(
        [res.status, res.json.code, res.json.success],
        [status, code, false],
        JSON.stringify(options),
      );
      assert.equal(typeof res.json.message, 'string');
    }
  });

  test('device CRUD, with the codes of each refusal', async () => {
    const mac = '02:00:00:00:00:42';
    const absent = await app.request('GET', `/device/${mac}`);
    assert.deepEqual([absent.status, absent.json.code], [404, 'DEVICE_NOT_FOUND']);
    assert.equal(absent.json.message, `Device ${mac} not found.`);

    const created = await app.request('POST', '/device/02-00-00-00-00-42', {
      body: { createNew: true, devName: 'nas' },
    });
    assert.deepEqual([created.status, created.body], [200, { success: true }]);
    const again = await app.request('POST', `/device/${mac}`, { body: { createNew: true } });
    assert.deepEqual([again.status, again.json.code, again.json.error], [409, 'DEVICE_EXISTS', 'Conflict']);

    const column = await app.request('POST', `/device/${mac}/update-column`, {
      body: { columnName: 'devOwner', columnValue: 'alice' },
    });
    assert.equal(column.status, 200);
    const got = await app.request('GET', `/device/${mac}`);
    assert.deepEqual([got.json.devName, got.json.devOwner, got.json.devMac], ['nas', 'alice', mac]);

    const refusals: [string, string, unknown, string][] = [
      ['POST', '/device/not-a-mac', { devName: 'x' }, 'INVALID_MAC'],
      ['POST', `/device/${mac}`, { devMac: '02:00:00:00:00:43' }, 'MAC_MISMATCH'],
      ['POST', `/device/${mac}`, { devFirstConnection: '2024-02-31' }, 'INVALID_FIELD'],
      ['POST', `/device/${mac}/update-column`, { columnName: 'devGUID', columnValue: 'x' }, 'UNKNOWN_COLUMN'],
      [
        'POST',
        `/device/${mac}/update-column`,
        { columnName: 'devFavorite', columnValue: 'yes' },
        'INVALID_COLUMN_VALUE',
      ],
      ['POST', '/device/copy', { macFrom: mac, macTo: mac }, 'SAME_DEVICE'],
      ['GET', `/device/${mac}?period=fortnight`, undefined, 'INVALID_PERIOD'],
      ['GET', '/devices?limit=0', undefined, 'INVALID_LIMIT'],
      ['GET', '/devices?offset=-1', undefined, 'INVALID_OFFSET'],
      ['GET', '/devices?status=Sleeping', undefined, 'INVALID_STATUS'],
    ];
    for (const [method, path, body, code] of refusals) {
      const res = await app.request(method, path, body === undefined ? {} : { body });
      assert.deepEqual([res.status, res.json.code], [400, code], `${method} ${path} ${JSON.stringify(body)}`);
    }
    const unchanged = await app.request('GET', `/device/${mac}`);
    assert.deepEqual(unchanged.body, got.body, 'the refusals changed nothing');

    const copied = await app.request('POST', '/device/copy', {
      body: { macFrom: mac, macTo: '02:00:00:00:00:43' },
    });
    assert.equal(copied.status, 200);
    const list = await app.request('GET', '/devices');
    assert.deepEqual(
      (list.json.devices as { devMac: string }[]).map((d) => d.devMac),
      [mac, '02:00:00:00:00:43'],
    );
    const deleted = await app.request('DELETE', `/device/${mac}/delete`);
    assert.equal(deleted.status, 200);
    assert.equal((await app.request('GET', `/device/${mac}`)).json.code, 'DEVICE_NOT_FOUND');
  });

  test('tool input is refused with its code before any command runs', async () => {
    const cases: [string, unknown, string][] = [
      ['/nettools/nmap', { scan: '127.0.0.1', mode: 'FAST' }, 'INVALID_MODE'],
      ['/nettools/nmap', { scan: '127.0.0.1/-1', mode: 'fast' }, 'INVALID_SCAN_TARGET'],
      ['/nettools/nmap', { scan: '10.0.0.0/8', mode: 'fast' }, 'SCAN_RANGE_TOO_LARGE'],
      ['/nettools/traceroute', { devLastIP: 'example.com' }, 'INVALID_ADDRESS'],
      ['/nettools/nslookup', { devLastIP: '-x' }, 'INVALID_NAME'],
      ['/nettools/wakeonlan', { devMac: 'zz' }, 'INVALID_MAC'],
      ['/nettools/wakeonlan', { devMac: '02:00:00:00:00:01', broadcast: '::1' }, 'INVALID_BROADCAST'],
    ];
    for (const [path, body, code] of cases) {
      const res = await app.request('POST', path, { body });
      assert.deepEqual([res.status, res.json.code], [400, code], `${path} ${JSON.stringify(body)}`);
    }
  });

  test('POST /nettools/scan without SCAN_SUBNETS is 409 SCAN_NOT_CONFIGURED', async () => {
    const res = await app.request('POST', '/nettools/scan');
    assert.deepEqual([res.status, res.json.code], [409, 'SCAN_NOT_CONFIGURED']);
  });

  test('the OpenAPI error schema has the code field', async () => {
    const spec = await app.request('GET', '/openapi.json', { token: null });
    const schemas = (spec.json.components as { schemas: Record<string, { required: string[] }> }).schemas;
    assert.ok(schemas.Error?.required.includes('code'));
  });
});

describe('error mapping (src/http/errors.ts)', () => {
  test('every domain kind has a status, and the body carries its code, reason and details', () => {
    const statuses = new Map<string, number>();
    for (const kind of errorKinds) {
      const { status, body } = errorResponse(new DomainError(kind, 'm'));
      statuses.set(kind, status);
      assert.equal(body.code, kind.toUpperCase().replace(/-/g, '_'));
    }
    assert.deepEqual(Object.fromEntries(statuses), {
      invalid: 400,
      'not-found': 404,
      conflict: 409,
      timeout: 504,
      saturated: 429,
      'tool-missing': 503,
      'command-failed': 500,
      aborted: 499,
      'shutting-down': 503,
      unavailable: 503,
    });
    const saturated = errorResponse(
      new DomainError('saturated', 'busy', {
        code: 'TOOL_QUEUE_FULL',
        retryAfterSeconds: 7,
        reason: 'Too Many Requests',
      }),
    );
    assert.deepEqual(saturated, {
      status: 429,
      headers: { 'Retry-After': '7' },
      body: { success: false, error: 'Too Many Requests', code: 'TOOL_QUEUE_FULL', message: 'busy' },
      unexpected: false,
    });
    const failed = errorResponse(new DomainError('command-failed', 'x failed', { details: 'stderr tail' }));
    assert.equal(failed.body.details, 'stderr tail');
  });

  test('a bug becomes a 500 INTERNAL_ERROR that says nothing of it, flagged as unexpected', () => {
    const res = errorResponse(new TypeError('secret internals'));
    assert.deepEqual(res.body, {
      success: false,
      error: 'Internal Server Error',
      code: 'INTERNAL_ERROR',
      message: 'An unexpected error occurred.',
    });
    assert.equal(res.unexpected, true);
    assert.equal(errorResponse(ApiError.forbidden()).unexpected, false);
  });

  test('every code thrown in src/ is in the table of docs/api.md', () => {
    const table = readFileSync(join(repoRoot, 'docs', 'api.md'), 'utf8');
    const documented = new Set([...table.matchAll(/^\| `([A-Z_]+)`/gm)].map((m) => m[1]));
    const sources = (dir: string): string[] =>
      readdirSync(dir).flatMap((name) => {
        const path = join(dir, name);
        if (statSync(path).isDirectory()) return sources(path);
        return name.endsWith('.ts') ? [path] : [];
      });
    const used = new Set<string>();
    for (const file of sources(join(repoRoot, 'src'))) {
      const text = readFileSync(file, 'utf8');
      for (const m of text.matchAll(/code: '([A-Z_]+)'/g)) if (m[1]) used.add(m[1]);
      // ApiError codes given as the last argument: ..., 'INVALID_JSON')
      for (const m of text.matchAll(/, '([A-Z]+_[A-Z_]+)'\)/g)) if (m[1]) used.add(m[1]);
    }
    assert.ok(used.size > 30, `found ${used.size} codes`);
    for (const code of used) assert.ok(documented.has(code), `${code} is not in docs/api.md's table`);
  });
});
