/**
 * A server on PostgreSQL whose database stops and starts again under it: every read and write
 * answers 503 STORE_UNAVAILABLE naming host:port/db, /health answers 503 degraded, and both recover
 * by themselves when PostgreSQL is back (no restart of the server); a scan cycle run meanwhile is
 * kept and stored once it is back. The password is in no answer and no log line, at any point.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { fakeArpScanEnv, writeFakeArpScan } from '../../helpers/fake-arp-scan.js';
import { eventually } from '../../helpers/processes.js';
import { postgresMissing, startPostgres, type PostgresServer } from '../../helpers/postgres.js';
import { requireAll, skipUnlessCi } from '../../helpers/requirements.js';
import { TestServer, type TestResponse } from '../../helpers/server.js';

const skip = skipUnlessCi(postgresMissing(), 'PostgreSQL store-down tests');

describe('a server on PostgreSQL when PostgreSQL stops', { skip }, () => {
  let pg: PostgresServer;
  let server: TestServer;
  let tools: string;
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
    tools = mkdtempSync(join(tmpdir(), 'netkeep-store-down-'));
    writeFakeArpScan(tools, 3);
    server = await TestServer.start({
      env: { DATABASE_URL: pg.url, LOG_LEVEL: 'debug', ...fakeArpScanEnv(tools), SCAN_INTERVAL: '5' },
    });
  });
  after(async () => {
    await server.stop();
    await pg.stop();
    rmSync(tools, { recursive: true, force: true });
  });
  const logged = (event: string): number =>
    server.logs.filter((line) => line.includes(`"event":"${event}"`)).length;

  test('503 STORE_UNAVAILABLE and /health degraded while down; both recover by themselves', async () => {
    const mac = 'aa:bb:cc:00:00:01';
    assert.equal((await ask('GET', '/health')).status, 200);
    const settings = await ask('GET', '/settings');
    assert.equal(settings.status, 200);
    assert.match(settings.text, /DATABASE_URL/, 'the settings show the variable, its password hidden');
    assert.equal((await ask('POST', `/device/${mac}`, { devName: 'printer', createNew: true })).status, 200);
    assert.equal((await ask('GET', `/device/${mac}/events`)).status, 200);

    // PostgreSQL stops right after a cycle was stored, SCAN_INTERVAL (5 s) before the next: a cycle
    // observed just before the stop and kept when its write failed would carry a time before
    // `downAt`, and the check of its events below would miss them (seen once on a loaded machine).
    const cyclesStored = logged('scan-cycle');
    assert.ok(await eventually(() => logged('scan-cycle') > cyclesStored, 400), 'a cycle is stored');
    await pg.down();
    const downAt = new Date();
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

    // The scan loop's next cycle (SCAN_INTERVAL 5 s) cannot be stored: it is kept.
    assert.ok(
      await eventually(() => logged('scan-cycle-kept') >= 1, 400),
      `a cycle is kept: ${server.logs.filter((l) => l.includes('scan')).join('\n')}`,
    );
    await pg.up();
    const upAt = new Date();
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
    // The kept cycle is stored with the time it was observed (while PostgreSQL was down).
    assert.ok(await eventually(() => logged('scan-kept-stored') >= 1, 400), 'the kept cycle is stored');
    const events = await ask('GET', `/history/events?since=${downAt.toISOString()}&limit=100`);
    const times = (events.json.events as { eve_DateTime: string }[]).map((e) => e.eve_DateTime);
    const keptAt = /"event":"scan-cycle-kept"/;
    assert.ok(server.logs.some((line) => keptAt.test(line)));
    assert.ok(times.length >= 6, `the kept cycle's events are stored: ${times.join(', ')}`);
    const asDate = (t: string): Date => new Date(t.includes('T') ? t : `${t.replace(' ', 'T')}Z`);
    assert.ok(
      times.some((t) => asDate(t) < upAt),
      `stored with the time it was observed, before PostgreSQL came back: ${times.join(', ')}`,
    );

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
