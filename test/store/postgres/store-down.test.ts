/**
 * A server on PostgreSQL whose database stops and starts again under it: every read and write
 * answers 503 STORE_UNAVAILABLE naming host:port/db, /health answers 503 degraded, and both recover
 * by themselves when PostgreSQL is back (no restart of the server). The password is in no answer and
 * no log line, at any point.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { postgresMissing, startPostgres, type PostgresServer } from '../../helpers/postgres.js';
import { requireAll, skipUnlessCi } from '../../helpers/requirements.js';
import { TestServer, type TestResponse } from '../../helpers/server.js';

const skip = skipUnlessCi(postgresMissing(), 'PostgreSQL store-down tests');

describe('a server on PostgreSQL when PostgreSQL stops', { skip }, () => {
  let pg: PostgresServer;
  let server: TestServer;
  /** Every answer of the test, to grep for the password at the end. */
  const answers: string[] = [];
  const ask = async (method: string, path: string, body?: unknown): Promise<TestResponse> => {
    const response = await server.request(method, path, body === undefined ? {} : { body });
    answers.push(`${method} ${path} ${response.status} ${[...response.headers].join(' ')} ${response.text}`);
    return response;
  };

  before(async () => {
    requireAll(postgresMissing());
    pg = await startPostgres();
    server = await TestServer.start({ env: { DATABASE_URL: pg.url, LOG_LEVEL: 'debug' } });
  });
  after(async () => {
    await server.stop();
    await pg.stop();
  });

  test('503 STORE_UNAVAILABLE and /health degraded while down; both recover by themselves', async () => {
    const mac = 'aa:bb:cc:00:00:01';
    assert.equal((await ask('GET', '/health')).status, 200);
    const settings = await ask('GET', '/settings');
    assert.equal(settings.status, 200);
    assert.match(settings.text, /DATABASE_URL/, 'the settings show the variable, its password hidden');
    assert.equal((await ask('POST', `/device/${mac}`, { devName: 'printer', createNew: true })).status, 200);
    assert.equal((await ask('GET', `/device/${mac}/events`)).status, 200);

    await pg.down();
    for (const [method, path, body] of [
      ['POST', `/device/${mac}`, { devName: 'scanner' }],
      ['POST', `/device/${mac}/update-column`, { columnName: 'devOwner', columnValue: 'me' }],
      ['GET', `/device/${mac}/events`, undefined],
      ['GET', '/history/events', undefined],
    ] as const) {
      const response = await ask(method, path, body);
      assert.equal(response.status, 503, `${method} ${path}: ${response.text}`);
      assert.equal(response.json.code, 'STORE_UNAVAILABLE');
      assert.match(String(response.json.message), new RegExp(`127\\.0\\.0\\.1:${pg.port}/netkeep`));
    }
    const degraded = await ask('GET', '/health');
    assert.equal(degraded.status, 503);
    assert.deepEqual(degraded.body, { status: 'degraded', store: 'down' });

    await pg.up();
    let health = await ask('GET', '/health');
    for (let i = 0; i < 200 && health.status !== 200; i++) {
      await new Promise((resolve) => setTimeout(resolve, 50));
      health = await ask('GET', '/health');
    }
    assert.deepEqual(health.body, { status: 'ok' });
    const written = await ask('POST', `/device/${mac}/update-column`, {
      columnName: 'devOwner',
      columnValue: 'me',
    });
    assert.equal(written.status, 200, written.text);
    assert.equal((await ask('GET', `/device/${mac}/events`)).status, 200);

    await server.logsCaughtUp();
    assert.ok(
      server.logs.some((line) => line.includes(`127.0.0.1:${pg.port}/netkeep`)),
      'the log names the store that was lost',
    );
    for (const text of [...answers, ...server.logs]) {
      assert.equal(text.includes(pg.password), false, `the password leaked: ${text.slice(0, 200)}`);
    }
  });
});
