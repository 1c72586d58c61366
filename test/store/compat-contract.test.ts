/**
 * NetAlertX's reads and the CSV import (`CompatStore`), and the device readouts
 * (`DeviceReadouts`), run against both stores: the same devices, events and sessions written to
 * SQLite and to PostgreSQL; every status group's list, the device and event lists walked page by
 * page, the session totals, an import (new devices, existing ones, a MAC twice, a given devGUID)
 * and every readout give the same answers, and the import leaves the same rows.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import type { Database } from 'better-sqlite3';
import { openDatabase } from '../../src/db/connection.js';
import { deviceGroups, presenceGroups } from '../../src/devices/status.js';
import type { CompatStore, EventCursor, ImportedDevice } from '../../src/store/compat.js';
import { PostgresCompatStore } from '../../src/store/postgres/compat.js';
import { PostgresDeviceStore } from '../../src/store/postgres/devices.js';
import { openPostgres, type PostgresPool } from '../../src/store/postgres/pool.js';
import { PostgresReadouts } from '../../src/store/postgres/readouts.js';
import type { DeviceReadouts } from '../../src/store/readouts.js';
import { sqliteStore, type SqliteStore } from '../../src/store/sqlite/store.js';
import { postgresMissing, startPostgres, type PostgresServer } from '../helpers/postgres.js';
import { requireAll, skipUnlessCi } from '../helpers/requirements.js';

const skip = skipUnlessCi(postgresMissing(), 'compat and readouts contract on PostgreSQL');

const mac = (n: number) => `aa:00:00:00:00:${n.toString(16).padStart(2, '0')}`;

/** The same statements on both stores (quoted names: SQLite reads them too). */
const seed = [
  // 1 online, 2 down, 3 offline, 4 archived, 5 new and favourite, 6 and 7 as created.
  `UPDATE "Devices" SET "devPresentLastScan" = 1, "devLastIP" = '192.168.1.1' WHERE "devMac" = '${mac(1)}'`,
  `UPDATE "Devices" SET "devPresentLastScan" = 0, "devAlertDown" = 1 WHERE "devMac" = '${mac(2)}'`,
  `UPDATE "Devices" SET "devPresentLastScan" = 0, "devAlertDown" = 0, "devIsNew" = 0 WHERE "devMac" = '${mac(3)}'`,
  `UPDATE "Devices" SET "devIsArchived" = 1 WHERE "devMac" = '${mac(4)}'`,
  `UPDATE "Devices" SET "devIsNew" = 1, "devFavorite" = 1, "devPresentLastScan" = 1 WHERE "devMac" = '${mac(5)}'`,
  `UPDATE "Devices" SET "devVendor" = 'Ünïcödé Vendor Corporation', "devType" = 'Smartphone',
     "devLastConnection" = '2026-05-01 09:00:00' WHERE "devMac" = '${mac(1)}'`,
  ...[
    [1, '2026-05-01 09:00:00', 'New Device'],
    [1, '2026-05-01 09:00:00', 'Connected'],
    [2, '2026-05-01 09:00:00', 'Connected'],
    [2, '2026-05-01 10:00:00', 'Device Down'],
    [3, '2026-05-01 10:00:00', 'voided - Connected'],
    [3, '2026-05-02 08:00:00', 'VOIDED - Disconnected'],
    [1, '2026-05-02 08:00:00', 'IP Changed'],
    [5, '2026-05-03 12:00:00', 'New Device'],
  ].map(
    ([n, at, type]) => `INSERT INTO "Events" ("eve_MAC", "eve_IP", "eve_DateTime", "eve_EventType",
       "eve_AdditionalInfo", "eve_PendingAlertEmail") VALUES ('${mac(Number(n))}', '192.168.1.${String(n)}', '${String(at)}', '${String(type)}', '', 0)`,
  ),
  ...[
    [1, "'2026-05-01 09:00:00'", "'2026-05-01 09:30:00'", 0],
    [1, "'2026-05-02 08:00:00'", 'NULL', 1],
    [2, 'NULL', "'2026-05-01 10:00:00'", 0],
    [3, "'2026-05-02 07:00:00'", 'NULL', 0],
  ].map(
    ([n, from, to, still]) => `INSERT INTO "Sessions" ("ses_MAC", "ses_IP", "ses_EventTypeConnection",
       "ses_DateTimeConnection", "ses_EventTypeDisconnection", "ses_DateTimeDisconnection", "ses_StillConnected",
       "ses_AdditionalInfo") VALUES ('${mac(Number(n))}', '', 'Connected', ${String(from)}, 'Disconnected', ${String(to)}, ${String(still)}, '')`,
  ),
];

type Row = Record<string, unknown>;
const deviceRows = (rows: Row[]) => rows.map(({ devGUID: _guid, ...rest }) => rest);

describe('the NetAlertX reads, the CSV import and the readouts on SQLite and PostgreSQL', { skip }, () => {
  let server: PostgresServer;
  let pool: PostgresPool;
  let dir: string;
  let db: Database;
  let sqlite: SqliteStore;
  let pg: { compat: CompatStore; readouts: DeviceReadouts };

  before(async () => {
    requireAll(postgresMissing());
    server = await startPostgres();
    pool = await openPostgres(server.url);
    dir = mkdtempSync(join(tmpdir(), 'netkeep-compat-contract-'));
    db = openDatabase(join(dir, 'netkeep.db'));
    sqlite = sqliteStore(db);
    pg = { compat: new PostgresCompatStore(pool), readouts: new PostgresReadouts(pool) };
    const pgDevices = new PostgresDeviceStore(pool);
    const created = new Date(Date.UTC(2026, 4, 1, 8));
    for (let n = 1; n <= 7; n++) {
      const changes = {
        devName: n === 1 ? 'A long printer name, longer than the label bound' : `device ${n}`,
      };
      await sqlite.devices.create(mac(n), changes, created);
      await pgDevices.create(mac(n), changes, created);
    }
    for (const sql of seed) {
      db.exec(sql);
      await pool.query(sql);
    }
  });
  after(async () => {
    await sqlite.close();
    rmSync(dir, { recursive: true, force: true });
    await pool.close();
    await server.stop();
  });

  const bothStores = () => [sqlite, pg] as const;

  test('every status group, page by page', async () => {
    for (const group of [undefined, ...deviceGroups, ...presenceGroups]) {
      const walks = [];
      for (const store of bothStores()) {
        const items = [];
        for (let after = '', page; (page = await store.compat.byStatusAfter(group, after, 2)).length > 0;) {
          items.push(...page);
          after = page[page.length - 1]?.id ?? '';
        }
        walks.push(items);
      }
      assert.deepEqual(walks[1], walks[0], `group ${String(group)}`);
    }
    // The groups did select: not every list is everything.
    const down = await pg.compat.byStatusAfter('down', '', 100);
    assert.deepEqual(
      down.map((d) => d.id),
      [mac(2)],
    );
    const online = await pg.compat.byStatusAfter('online', '', 100);
    assert.deepEqual(
      online.map((d) => d.id),
      [mac(1), mac(5)],
    );
  });

  test('the devices and the events, page by page, and the session totals', async () => {
    for (const limit of [1, 3, 100]) {
      const lists = [];
      for (const store of bothStores()) {
        const devices = [];
        for (let after = '', page; (page = await store.compat.devicesAfter(after, limit)).length > 0;) {
          devices.push(...page);
          after = String(page[page.length - 1]?.devMac);
        }
        const events: Record<string, unknown[]> = {};
        for (const of of [undefined, mac(1), mac(3), mac(9)]) {
          const list: unknown[] = [];
          let cursor: EventCursor | undefined;
          do {
            const page = await store.compat.eventsAfter(of, cursor, limit);
            list.push(...page.events);
            cursor = page.next;
          } while (cursor !== undefined);
          events[String(of)] = list;
        }
        lists.push({ devices: deviceRows(devices), events });
      }
      assert.deepEqual(lists[1], lists[0], `limit ${limit}`);
      assert.equal((lists[0]?.events.undefined ?? []).length, 8);
    }
    for (const start of [null, new Date(Date.UTC(2026, 4, 1, 9, 30)), new Date(Date.UTC(2026, 4, 2))]) {
      const [lite, postgres] = await Promise.all(bothStores().map((s) => s.compat.sessionTotals(start)));
      assert.deepEqual(postgres, lite, `totals since ${String(start)}`);
    }
    assert.equal((await pg.compat.sessionTotals(null))[3], 2, 'both VOIDED events, whatever their case');
  });

  test('the readouts', async () => {
    for (const max of [5, 1000]) {
      const [lite, postgres] = await Promise.all(bothStores().map((s) => s.readouts.statusRows(max)));
      assert.deepEqual(postgres, lite, `status rows cut at ${max}`);
    }
    assert.equal((await pg.readouts.statusRows(5))[0]?.devVendor, 'Ünïcöd');
    const macs = [mac(1), mac(2), mac(6), mac(9)];
    const answers = [];
    for (const store of bothStores())
      answers.push({
        summaries: [...(await store.readouts.summaries(macs))].sort(),
        none: [...(await store.readouts.summaries([]))],
        tracked: await store.readouts.trackedDevices(),
        one: await store.readouts.trackedDevice(mac(1)),
        missing: await store.readouts.trackedDevice(mac(9)),
      });
    const [lite, postgres] = answers;
    assert.deepEqual(postgres, lite);
    assert.ok(lite?.one);
    assert.equal(lite.summaries.length, 3);
    assert.equal(lite.one.devLastConnection, '2026-05-01T09:00:00Z');
  });

  test('a CSV import: new devices, existing ones, a MAC twice, a given devGUID', async () => {
    const devices: ImportedDevice[] = [
      { mac: mac(1), changes: { devOwner: 'Ann', devName: 'printer' }, guid: undefined },
      { mac: mac(20), changes: { devName: 'new one', devFavorite: 1 }, guid: 'guid-20' },
      { mac: mac(21), changes: { devComments: 'first' }, guid: undefined },
      { mac: mac(21), changes: { devComments: 'second', devName: '' }, guid: undefined },
      { mac: mac(3), changes: {}, guid: undefined },
    ];
    const now = new Date(Date.UTC(2026, 4, 4, 12));
    const [lite, postgres] = [
      await sqlite.compat.importDevices(devices, now),
      await pg.compat.importDevices(devices, now),
    ];
    assert.deepEqual(postgres, lite);
    assert.deepEqual(lite, { inserted: [mac(20), mac(21)], updated: [mac(1), mac(21), mac(3)] });
    const liteRows = db.prepare<[], Row>('SELECT * FROM "Devices" ORDER BY "devMac"').all();
    const pgRows = await pool.query<Row>('SELECT * FROM "Devices" ORDER BY "devMac"');
    assert.deepEqual(deviceRows(pgRows.map((r) => ({ ...r }))), deviceRows(liteRows));
    assert.equal(pgRows.find((r) => r.devMac === mac(20))?.devGUID, 'guid-20');
    assert.equal(pgRows.find((r) => r.devMac === mac(1))?.devNameSource, 'user');
    await assert.rejects(
      pg.compat.importDevices([{ mac: mac(1), changes: { 'x" = 1; --': 1 }, guid: undefined }], now),
      /not a stored device field/,
    );
  });
});
