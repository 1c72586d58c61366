/**
 * The one log line per answer: successful reads at debug, writes and every error at info, and the
 * token never in it.
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { TestServer } from '../helpers/server.js';

/** The request lines the server logged for `path`, parsed. */
function requestLines(server: TestServer, path: string): { level: number; status: number; method: string }[] {
  return server.logs
    .filter((line) => line.includes('"msg":"request"') && line.includes(`"url":"${path}"`))
    .map((line) => JSON.parse(line) as { level: number; status: number; method: string });
}

describe('request log lines', () => {
  test('LOG_LEVEL=info: no line for a successful read; one for an error and for a write', async () => {
    const server = await TestServer.start({ env: { LOG_LEVEL: 'info' } });
    try {
      assert.equal((await server.request('GET', '/device/new')).status, 200);
      assert.equal((await server.request('GET', '/device/02:00:00:00:00:99')).status, 404);
      const create = await server.request('POST', '/device/02:00:00:00:00:98', { body: { createNew: true } });
      assert.equal(create.status, 200);
      await server.logsCaughtUp();
      assert.deepEqual(requestLines(server, '/device/new'), []);
      assert.deepEqual(
        requestLines(server, '/device/02:00:00:00:00:99').map((l) => [l.level, l.status]),
        [[30, 404]],
      );
      assert.deepEqual(
        requestLines(server, '/device/02:00:00:00:00:98').map((l) => [l.level, l.method, l.status]),
        [[30, 'POST', 200]],
      );
      assert.ok(!server.logs.some((line) => line.includes(server.token)), 'the token is never logged');
    } finally {
      await server.stop();
    }
  });

  test('LOG_LEVEL=debug: a successful read has its line, at debug', async () => {
    const server = await TestServer.start({ env: { LOG_LEVEL: 'debug' } });
    try {
      assert.equal((await server.request('GET', '/device/new')).status, 200);
      await server.logsCaughtUp();
      assert.deepEqual(
        requestLines(server, '/device/new').map((l) => [l.level, l.status]),
        [[20, 200]],
      );
    } finally {
      await server.stop();
    }
  });
});
