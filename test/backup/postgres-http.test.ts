/**
 * GET /backup of a server on PostgreSQL, over HTTP (DESIGN 18, issue 28): the file downloaded from a
 * running server (a real process on DATABASE_URL) is restored by `npm run restore -- --database-url`
 * (the real script) into a new empty database, and a server started on that database answers the
 * same devices, device views, events and sessions through the API. A backup downloaded while other
 * clients write restores to a consistent store: each write is in it whole or not at all. The store
 * level (every row of every table) is test/store/postgres/backup.test.ts.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { after, before, describe, test } from 'node:test';
import { openPostgres } from '../../src/store/postgres/pool.js';
import { dbTime } from '../../src/time.js';
import { postgresMissing, startPostgres, type PostgresServer } from '../helpers/postgres.js';
import { requireAll, skipUnlessCi } from '../helpers/requirements.js';
import { TestServer } from '../helpers/server.js';
import { runCli, type CliRun } from '../helpers/cli.js';

const skip = skipUnlessCi(postgresMissing(), 'GET /backup on PostgreSQL');
const restoreScript = fileURLToPath(new URL('../../../scripts/restore.mjs', import.meta.url));

type Json = Record<string, unknown>;

const mac = (i: number) =>
  `02:bd:00:00:${(i >> 8).toString(16).padStart(2, '0')}:${(i & 255).toString(16).padStart(2, '0')}`;

async function download(server: TestServer, file: string): Promise<void> {
  const res = await fetch(`${server.url}/backup`, { headers: { authorization: `Bearer ${server.token}` } });
  assert.equal(res.status, 200, await res.clone().text());
  assert.equal(res.headers.get('content-type'), 'application/vnd.sqlite3');
  writeFileSync(file, Buffer.from(await res.arrayBuffer()));
}

/** `npm run restore -- --database-url <url> <file>` as a person runs it (scripts/restore.mjs). */
function restore(cwd: string, url: string, file: string): Promise<CliRun> {
  return runCli(restoreScript, cwd, ['--database-url', url, file]);
}

async function get(server: TestServer, path: string): Promise<Json> {
  const res = await server.request('GET', path);
  assert.equal(
    res.status,
    200,
    `${path}: ${res.text}\n${server.logs.filter((l) => l.includes('"level":50')).join('\n')}`,
  );
  return res.json;
}

/** What the API answers about the store: the list, each device's view and history, the totals. */
async function apiDump(server: TestServer): Promise<Json> {
  const list = await get(server, '/devices?sort=devMac');
  const dump: Json = { list, totals: await get(server, '/devices/totals') };
  for (const device of list.devices as { devMac: string }[])
    for (const period of ['all', '7 days'])
      dump[`${device.devMac} ${period}`] = {
        view: await get(server, `/device/${device.devMac}?period=${encodeURIComponent(period)}`),
        events: await get(server, `/device/${device.devMac}/events?period=${encodeURIComponent(period)}`),
        sessions: await get(server, `/device/${device.devMac}/sessions?period=${encodeURIComponent(period)}`),
      };
  return dump;
}

/** A server on PostgreSQL at `url`, with the history the test writes kept (it is from 2026). */
function serverOn(url: string): Promise<TestServer> {
  return TestServer.start({ env: { DATABASE_URL: url, HISTORY_DAYS: '36500' } });
}

describe('GET /backup on PostgreSQL, restored with npm run restore', { skip }, () => {
  let pg: PostgresServer;
  let scratch: string;
  let databases = 0;
  const newDatabase = () => pg.createDatabase(`backup_${String((databases += 1))}`);

  before(async () => {
    requireAll(postgresMissing());
    pg = await startPostgres();
    scratch = mkdtempSync(join(tmpdir(), 'netkeep-pg-http-backup-'));
  });
  after(async () => {
    await pg.stop();
    rmSync(scratch, { recursive: true, force: true });
  });

  test('a round trip gives back the same devices, views, events and sessions through the API', async () => {
    const url = await newDatabase();
    const server = await serverOn(url);
    const file = join(scratch, 'round-trip.db');
    let before: Json;
    try {
      for (let i = 0; i < 10; i++) {
        const res = await server.request('POST', `/device/${mac(i)}`, {
          body: {
            createNew: true,
            devName: `<b>device ${String(i)}</b>`,
            devOwner: i % 2 ? 'Alice' : 'Bob',
            devFavorite: i % 3 === 0,
            devParentMAC: i > 0 ? mac(0) : '',
          },
        });
        assert.equal(res.status, 200, res.text);
      }
      // History as the scanner writes it: another connection to the same database.
      const writer = await openPostgres(url);
      try {
        for (let d = 0; d < 10; d++)
          for (let n = 0; n < 6; n++) {
            const at = new Date(Date.now() - (d * 6 + n + 1) * 3_600_000);
            const end = new Date(at.getTime() + 1_800_000);
            await writer.query(
              'INSERT INTO "Events" ("eve_MAC", "eve_IP", "eve_DateTime", "eve_EventType") VALUES ($1, $2, $3, $4)',
              [mac(d), `10.9.0.${String(d + 1)}`, dbTime(at), n % 3 === 0 ? 'Device Down' : 'Connected'],
            );
            await writer.query(
              'INSERT INTO "Sessions" ("ses_MAC", "ses_IP", "ses_EventTypeConnection", "ses_DateTimeConnection", "ses_EventTypeDisconnection", "ses_DateTimeDisconnection") VALUES ($1, $2, $3, $4, $5, $6)',
              [mac(d), `10.9.0.${String(d + 1)}`, 'Connected', dbTime(at), 'Disconnected', dbTime(end)],
            );
          }
      } finally {
        await writer.close();
      }
      await download(server, file);
      before = await apiDump(server);
    } finally {
      await server.stop();
    }
    assert.equal((before.list as Json).total, 10);

    const target = await newDatabase();
    const run = await restore(scratch, target, file);
    assert.equal(run.code, 0, run.stderr);
    assert.match(run.stdout, /: 10 devices, 60 events, 60 sessions\n/);
    const restored = await serverOn(target);
    try {
      assert.deepEqual(await apiDump(restored), before);
    } finally {
      await restored.stop();
    }
  });

  test('a backup downloaded while other clients write restores to a consistent store', async () => {
    const url = await newDatabase();
    const server = await serverOn(url);
    const groups = 20;
    const groupSize = 5;
    const files: string[] = [];
    let created = 0;
    try {
      for (let g = 0; g < groups; g++)
        for (let k = 0; k < groupSize; k++) {
          const res = await server.request('POST', `/device/${mac(g * groupSize + k)}`, {
            body: { createNew: true, devName: `g${String(g)}-${String(k)}`, devLocation: '0' },
          });
          assert.equal(res.status, 200, res.text);
        }
      let writing = true;
      let writes = 0;
      // Each bulk edit sets one value on a whole group in one transaction; the creator adds devices
      // one after another, each only once the one before it is stored.
      const editor = async (worker: number) => {
        for (let n = 1; writing; n++) {
          const g = (worker * 7 + n) % groups;
          const macs = Array.from({ length: groupSize }, (_, k) => mac(g * groupSize + k));
          const res = await server.request('POST', '/devices/bulk', {
            body: { macs, set: { devLocation: `${String(worker)}-${String(n)}` } },
          });
          assert.equal(res.status, 200, res.text);
          assert.equal((res.json.changed as string[]).length, groupSize);
          writes += 1;
        }
      };
      const creator = async () => {
        while (writing) {
          const res = await server.request('POST', `/device/${mac(1000 + created)}`, {
            body: { createNew: true, devName: `new ${String(created)}` },
          });
          assert.equal(res.status, 200, res.text);
          created += 1;
        }
      };
      const writers = [editor(0), editor(1), creator()];
      try {
        for (let b = 0; b < 3; b++) {
          const file = join(scratch, `under-load-${String(b)}.db`);
          await download(server, file);
          files.push(file);
        }
      } finally {
        writing = false;
        await Promise.all(writers);
      }
      assert.ok(writes > 0 && created > 0, 'writes ran while the backups were taken');
    } finally {
      await server.stop();
    }

    for (const file of files) {
      const target = await newDatabase();
      const run = await restore(scratch, target, file);
      assert.equal(run.code, 0, run.stderr);
      const restored = await serverOn(target);
      try {
        const list = await get(restored, '/devices?sort=devMac');
        const devices = list.devices as { devMac: string; devName: string; devLocation: string }[];
        assert.equal(list.total, devices.length);
        assert.equal(((await get(restored, '/devices/totals/named')).totals as Json).devices, devices.length);
        // Every group's bulk edit is in the backup whole or not at all.
        for (let g = 0; g < groups; g++) {
          const comments = new Set(
            devices.filter((d) => d.devName.startsWith(`g${String(g)}-`)).map((d) => d.devLocation),
          );
          assert.equal(comments.size, 1, `group ${String(g)}: ${[...comments].join(', ')}`);
        }
        // The devices created one after another: a prefix of them, none missing before the last.
        const added = devices.filter((d) => d.devName.startsWith('new ')).map((d) => d.devName);
        assert.deepEqual(
          added.sort((a, b) => Number(a.slice(4)) - Number(b.slice(4))),
          Array.from({ length: added.length }, (_, i) => `new ${String(i)}`),
        );
        assert.ok(added.length <= created);
        assert.equal(devices.length - added.length, groups * groupSize);
      } finally {
        await restored.stop();
      }
    }
  });
});
