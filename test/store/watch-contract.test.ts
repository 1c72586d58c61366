/**
 * The security watch's store, run against both stores: the same devices, two rounds of port scans
 * (a first scan, then ports opened and closed, a device deleted meanwhile) with the events and
 * notifications a plan makes of them, and every read (a device by address, the watched devices,
 * the memory, a device's ports) compared, with the rows of DevicePorts, WatchMemory, Events and
 * the outbox.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import type { NotificationEvent } from '../../src/alerts/model.js';
import { openDatabase } from '../../src/db/connection.js';
import { PostgresOutboxStore } from '../../src/store/postgres/outbox.js';
import { openPostgres, type PostgresPool } from '../../src/store/postgres/pool.js';
import { PostgresPresenceStore } from '../../src/store/postgres/presence.js';
import { PostgresWatchStore } from '../../src/store/postgres/watch.js';
import { SqliteDevices } from '../../src/store/sqlite/devices.js';
import { SqliteOutboxStore } from '../../src/store/sqlite/outbox.js';
import { SqliteWatchStore } from '../../src/store/sqlite/watch.js';
import type { PortDiff, PortEvents, WatchStore } from '../../src/store/watch.js';
import { postgresMissing, startPostgres, type PostgresServer } from '../helpers/postgres.js';
import { requireAll, skipUnlessCi } from '../helpers/requirements.js';

const skip = skipUnlessCi(postgresMissing(), 'watch contract on PostgreSQL');
const A = 'aa:00:00:00:00:0a';
const B = 'aa:00:00:00:00:0b';
const C = 'aa:00:00:00:00:0c';

const devices = `
  INSERT INTO "Devices" ("devMac", "devLastIP", "devPrimaryIPv6", "devPresentLastScan", "devWatchPorts", "devLastConnection")
  VALUES ('${A}', '192.168.1.10', 'fd00::a', 1, 1, '2026-07-01 10:00:00'),
         ('${B}', '192.168.1.11', '', 1, 1, NULL),
         ('${C}', '192.168.1.10', '', 0, 1, '2026-07-01 11:00:00');`;

/** Events for every change after a device's first scan, notified when any port opened. */
function plan(now: Date): (diffs: ReadonlyMap<string, PortDiff>) => PortEvents {
  return (diffs) => {
    const changed = [...diffs].filter(([, d]) => d.hadPreviousScan && d.opened.length + d.closed.length > 0);
    const events = changed.map(([mac, d]) => ({
      mac,
      ip: '',
      type: 'Ports Changed' as const,
      dateTime: now,
      additionalInfo: `+${d.opened.map((p) => p.port).join(',')} -${d.closed.map((p) => p.port).join(',')}`,
      pendingAlert: 1 as const,
    }));
    return {
      events,
      notify: {
        macs: changed.map(([mac]) => mac),
        createdAt: now,
        plan: (alertDevices) =>
          alertDevices.size === 0
            ? []
            : [
                {
                  status: 'pending',
                  reason: null,
                  events: [...alertDevices.keys()].map((mac) => ({ mac }) as unknown as NotificationEvent),
                  preview: [],
                  channels: ['webhook'],
                  dueMs: now.getTime(),
                },
              ],
      },
    };
  };
}

async function play(watch: WatchStore, exec: (sql: string) => Promise<void>): Promise<unknown[]> {
  const log: unknown[] = [];
  await exec(devices);
  log.push(await watch.deviceExists(A), await watch.deviceExists('aa:00:00:00:00:99'));
  log.push(
    await watch.deviceAt('192.168.1.10'),
    await watch.deviceAt('fd00::a'),
    await watch.deviceAt('10.9.9.9'),
  );
  log.push(await watch.watchedDevices(), await watch.ports(A));
  const first = new Date(Date.UTC(2026, 6, 1, 12));
  log.push(
    await watch.recordPortScans(
      [
        {
          mac: A,
          ports: [
            { port: 22, protocol: 'tcp', service: 'ssh', product: 'OpenSSH', version: '9.2' },
            { port: 80, protocol: 'tcp', service: 'http', product: '', version: '' },
          ],
        },
        { mac: B, ports: [{ port: 53, protocol: 'udp', service: 'domain', product: '', version: '' }] },
        { mac: 'aa:00:00:00:00:99', ports: [] },
      ],
      first,
      plan(first),
    ),
  );
  const second = new Date(Date.UTC(2026, 6, 1, 13));
  await exec(`DELETE FROM "Devices" WHERE "devMac" = '${B}'`);
  log.push(
    await watch.recordPortScans(
      [
        {
          mac: A,
          ports: [
            { port: 22, protocol: 'tcp', service: 'ssh', product: 'OpenSSH', version: '9.3' },
            { port: 443, protocol: 'tcp', service: 'https', product: '', version: '' },
          ],
        },
        { mac: B, ports: [] },
      ],
      second,
      plan(second),
    ),
  );
  log.push(await watch.ports(A), await watch.ports(B), await watch.memory('ports-scanned'));
  return log;
}

const rowsSql = [
  'SELECT * FROM "DevicePorts" ORDER BY "dpo_MAC", "dpo_Port"',
  'SELECT * FROM "WatchMemory" ORDER BY "wat_Kind", "wat_Key"',
  'SELECT "eve_MAC", "eve_EventType", "eve_AdditionalInfo", "eve_PendingAlertEmail" FROM "Events" ORDER BY "eve_MAC"',
  'SELECT "events", "eventCount" FROM "NotificationPayloads" ORDER BY "id"',
];

describe('the watch store on SQLite and PostgreSQL', { skip }, () => {
  let server: PostgresServer;
  let pool: PostgresPool;
  let dir: string;

  before(async () => {
    requireAll(postgresMissing());
    server = await startPostgres();
    pool = await openPostgres(server.url);
    dir = mkdtempSync(join(tmpdir(), 'netkeep-watch-contract-'));
  });
  after(async () => {
    await pool.close();
    await server.stop();
    rmSync(dir, { recursive: true, force: true });
  });

  test('the same scans give the same answers and rows', async () => {
    const db = openDatabase(join(dir, 'netkeep.db'));
    try {
      const core = new SqliteDevices(db);
      const lite = await play(new SqliteWatchStore(db, core, new SqliteOutboxStore(db, core)), (sql) => {
        db.exec(sql);
        return Promise.resolve();
      });
      const outbox = new PostgresOutboxStore(pool);
      const pg = await play(
        new PostgresWatchStore(pool, new PostgresPresenceStore(pool, outbox)),
        async (sql) => {
          await pool.query(sql);
        },
      );
      assert.deepEqual(pg, lite);
      for (const sql of rowsSql) {
        assert.deepEqual(
          (await pool.query(sql)).map((r) => ({ ...r })),
          db.prepare(sql).all(),
          sql,
        );
      }
      // The rounds did what they were written for: a change of ports became an event and a notification.
      assert.match(JSON.stringify(lite), /\+443 -80/);
      assert.equal(
        (db.prepare('SELECT count(*) AS n FROM NotificationPayloads').get() as { n: number }).n,
        1,
      );
    } finally {
      db.close();
    }
  });
});
