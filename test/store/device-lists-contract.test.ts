/**
 * The device lists and the multi-device writes, run against both stores.
 *
 * Lists: the same 420 devices (names that stress the natural sort: "Printer 164" / "Printer 1069",
 * leading zeros, unnamed, equal names, Unicode that folds differently under ASCII-only and full
 * case folding, characters whose UTF-8 and UTF-16 orders differ; mixed-case vendors and owners,
 * NULL times, sleeping and flapping devices, random MACs, sites) loaded into SQLite and PostgreSQL;
 * every status, group, flag, search, site and sort (both directions) gives the same MAC order, the
 * same pages and the same totals, and the same items and search texts. A last test shows that the
 * data tells wrong orders apart (the usual PostgreSQL ways of sorting do not give SQLite's order).
 *
 * Writes: one sequence of merges, splits and bulk edits (stale MACs, aliases, parent loops,
 * deletes) on both stores: every answer or error, and after every step every row of Devices,
 * DeviceMacs, Events, Sessions, ScanState and the history counts, compared (devGUID aside). And on
 * PostgreSQL alone, two merges of one pair into each other at once: one wins, no deadlock.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import type { Database } from 'better-sqlite3';
import { openDatabase } from '../../src/db/connection.js';
import { eventColumns, sessionColumns } from '../../src/devices/history.js';
import {
  deviceListStatuses,
  naturalKey,
  sortColumns,
  type DeviceListQuery,
} from '../../src/devices/list-query.js';
import { byName, compareText } from '../../src/store/postgres/device-lists.js';
import { PostgresDeviceStore } from '../../src/store/postgres/devices.js';
import { openPostgres, type PostgresPool } from '../../src/store/postgres/pool.js';
import { SqliteDeviceStore } from '../../src/store/sqlite/device-store.js';
import { SqliteDevices } from '../../src/store/sqlite/devices.js';
import type { DeviceStore } from '../../src/store/devices.js';
import { postgresMissing, startPostgres, type PostgresServer } from '../helpers/postgres.js';
import { requireAll, skipUnlessCi } from '../helpers/requirements.js';

const skip = skipUnlessCi(postgresMissing(), 'device lists contract on PostgreSQL');

/** One PostgreSQL server for the file (a database per part), started by the first part that runs. */
let server: Promise<PostgresServer> | undefined;
function postgres(): Promise<PostgresServer> {
  requireAll(postgresMissing());
  server ??= startPostgres();
  return server;
}
after(async () => {
  if (server !== undefined) await (await server).stop();
});

type Store = Pick<
  DeviceStore,
  'listDevices' | 'listOrder' | 'listItems' | 'searchTexts' | 'merge' | 'split' | 'bulkEdit'
>;

const names = [
  'Printer 164',
  'Printer 1069',
  'printer 164',
  'PRINTER 0164',
  'Printer 16',
  'Printer 1',
  'Printer',
  'Printer 164',
  'host2',
  'host10',
  'Host010',
  'host 2',
  '',
  '(unknown)',
  'Ärger',
  'ärger',
  'Zebra',
  'zebra',
  'émile',
  'Emile',
  'İstanbul',
  'ΑΣ',
  'ας',
  '😀 phone',
  '\uff01 bang',
  '\ufffd',
  'a1b2c3',
  'a01b02',
  'x123456789012345678901234567890',
  'x99',
  ' leading',
  'café',
  'CAFÉ',
  'straße',
  'STRASSE',
  '中文 2',
  '中文 10',
  '100',
  '99',
  '0',
  '00',
  'disk_1',
  '50% off',
  'back\\slash',
  "O'Brien",
];
const vendors = [
  'Acme',
  'acme',
  'ACME',
  'Äcme',
  'äcme',
  '',
  'Zyxel',
  'zyxel',
  'ÉCOLE',
  'ecole',
  '😀',
  '\uff01',
];
const owners = ['Ann', 'ann', 'ÄNN', 'Bob', '', 'bob', 'Çelik', 'celik'];
const sites = ['', 'hq', 'branch', 'HQ'];
const firstOctets = ['aa', '02', 'a2', '5e', '36', '00', 'f6', '0b'];
const count = 420;

/** A small deterministic generator (the same data on every run and in both stores). */
function generator(seed: number): () => number {
  let state = seed;
  return () => {
    state = (state * 1103515245 + 12345) % 2147483648;
    return state / 2147483648;
  };
}

const hex = (n: number): string => n.toString(16).padStart(2, '0');
const text = (value: string | null): string => (value === null ? 'NULL' : `'${value.replace(/'/g, "''")}'`);
const macOf = (i: number): string =>
  `${firstOctets[i % firstOctets.length]}:00:00:00:${hex(i >> 8)}:${hex(i & 255)}`;

/** The seed as SQL both stores run (quoted names are SQLite's too). */
function seedSql(): string {
  const random = generator(22);
  const pick = <T>(list: readonly T[]): T => list[Math.floor(random() * list.length)] as T;
  const flag = (p: number): number => (random() < p ? 1 : 0);
  const rows: string[] = [];
  const scan: string[] = [];
  for (let i = 0; i < count; i++) {
    const mac = macOf(i);
    const name = i < names.length ? (names[i] ?? '') : pick(names);
    const day = 1 + Math.floor(random() * 28);
    const first =
      random() < 0.1 ? null : `2026-0${1 + (i % 6)}-${String(day).padStart(2, '0')} 0${i % 10}:00:00`;
    const last =
      random() < 0.1
        ? null
        : random() < 0.05
          ? '2026-07-01T08:00:00Z'
          : `2026-07-${String(day).padStart(2, '0')} 12:${String(i % 60).padStart(2, '0')}:00`;
    rows.push(
      `(${[
        text(mac),
        text(name),
        text(pick(owners)),
        text(pick(['Phone', 'phone', 'Laptop', '', 'Router', 'ROUTER'])),
        text(pick(vendors)),
        String(flag(0.2)),
        text(pick(['Family', 'family', '', 'IoT', 'iot'])),
        text(first),
        text(last),
        text(random() < 0.1 ? '' : `10.0.${i % 7}.${i % 250}`),
        String(flag(0.5)),
        String(flag(0.4)),
        String(flag(0.3)),
        String(flag(0.15)),
        text(pick(['Hall', 'hall', '', 'Küche', 'KÜCHE'])),
        text(pick(sites)),
        String(flag(0.3)),
      ].join(', ')})`,
    );
    if (random() < 0.3) scan.push(`(${text(mac)}, ${random() < 0.5 ? 1 : 0}, ${flag(0.4)})`);
  }
  return `INSERT INTO "Devices" ("devMac", "devName", "devOwner", "devType", "devVendor", "devFavorite", "devGroup",
      "devFirstConnection", "devLastConnection", "devLastIP", "devPresentLastScan", "devAlertDown", "devIsNew",
      "devIsArchived", "devLocation", "devSite", "devCanSleep") VALUES ${rows.join(',\n')};
    INSERT INTO "ScanState" ("mac", "misses", "flapping") VALUES ${scan.join(',\n')};`;
}

const searches = [
  'printer',
  'PRINTER',
  'ä',
  'Ä',
  'é',
  'É',
  '1',
  '16',
  'AA-00',
  'aa:00:00:00:00:1',
  '%',
  '_',
  '\\',
  "'",
  'acme',
  '10.0.1.',
  'ΑΣ',
  'σ',
  '😀',
  'ss',
  'x',
  ' ',
  'nothing at all',
];

/** Every list shape the contract compares: each filter alone, with sorts, and some together. */
function queries(): DeviceListQuery[] {
  const list: DeviceListQuery[] = [{}];
  for (const status of deviceListStatuses) list.push({ status });
  for (const q of searches) list.push({ q }, { q, sort: 'devName' });
  for (const sleeping of [true, false]) list.push({ sleeping }, { flapping: sleeping });
  list.push({ random: 1 }, { random: 0 });
  for (const site of sites) list.push({ site });
  for (const sort of sortColumns)
    for (const order of ['asc', 'desc'] as const)
      list.push(
        { sort, order },
        { sort, order, status: 'my' },
        { sort, order, q: 'a' },
        { sort, order, site: 'hq', random: 1 },
        { sort, order, status: 'Down', sleeping: false, flapping: false },
      );
  list.push({ sort: 'devName', status: 'connected', q: 'Printer', site: 'hq', random: 0, sleeping: false });
  return list;
}

describe('the device lists and multi-device writes on SQLite and PostgreSQL', { skip }, () => {
  let pool: PostgresPool;
  let dir: string;
  let db: Database;
  let lite: Store;
  let pg: Store;

  before(async () => {
    pool = await openPostgres(await (await postgres()).createDatabase('lists'));
    dir = mkdtempSync(join(tmpdir(), 'netkeep-lists-contract-'));
    db = openDatabase(join(dir, 'netkeep.db'));
    const seed = seedSql();
    db.exec(seed);
    await pool.query(seed);
    lite = new SqliteDeviceStore(new SqliteDevices(db));
    pg = new PostgresDeviceStore(pool);
  });
  after(async () => {
    db.close();
    rmSync(dir, { recursive: true, force: true });
    await pool.close();
  });

  test('every list shape gives the same order, pages and totals', async () => {
    const shapes = queries();
    let compared = 0;
    for (const query of shapes) {
      const label = JSON.stringify(query);
      const order = await lite.listOrder(query);
      assert.deepEqual(await pg.listOrder(query), order, `order of ${label}`);
      // Whole pages (every item compared) for the shapes of one filter or one sort; a middle page for all.
      const full = query.q === undefined && Object.keys(query).length <= 2;
      const pages = full
        ? [
            { offset: 0, limit: 1000 },
            { offset: 17, limit: 23 },
          ]
        : [{ offset: 17, limit: 23 }];
      for (const page of [...pages, { offset: count + 5, limit: 10 }]) {
        const expected = await lite.listDevices(query, page);
        assert.deepEqual(
          await pg.listDevices(query, page),
          expected,
          `page ${JSON.stringify(page)} of ${label}`,
        );
        assert.equal(expected.total, order.length);
        assert.deepEqual(
          expected.items.map((item) => item.devMac),
          order.slice(page.offset, page.offset + page.limit),
        );
      }
      compared += order.length;
    }
    // The shapes met what they were written for: filters that keep few and many, and none.
    const sizes = await Promise.all(shapes.map(async (query) => (await lite.listOrder(query)).length));
    assert.ok(sizes.includes(0) && sizes.includes(count) && sizes.some((n) => n > 0 && n < 30));
    assert.ok(compared > 20000, String(compared));
  });

  test('the same items and search texts, unknown MACs left out', async () => {
    const macs = [macOf(3), 'ff:ff:ff:ff:ff:ff', macOf(300), macOf(3), macOf(41)];
    assert.deepEqual(await pg.listItems(macs), await lite.listItems(macs));
    assert.deepEqual(await pg.listItems([]), await lite.listItems([]));
    assert.deepEqual(await pg.searchTexts(macs), await lite.searchTexts(macs));
    const byMac = (rows: { devMac: string }[]) => [...rows].sort((a, b) => compareText(a.devMac, b.devMac));
    const all = await lite.searchTexts();
    assert.equal(all.length, count);
    assert.deepEqual(byMac(await pg.searchTexts()), byMac(all));
  });

  test('the data tells wrong orders apart', async () => {
    const nameOrder = await lite.listOrder({ sort: 'devName' });
    // PostgreSQL sorting by its own lower() or by the name as is: not the natural order.
    for (const orderBy of ['lower("devName"), "devMac"', '"devName", "devMac"']) {
      const rows = await pool.query<{ devMac: string }>(`SELECT "devMac" FROM "Devices" ORDER BY ${orderBy}`);
      assert.notDeepEqual(
        rows.map((r) => r.devMac),
        nameOrder,
        orderBy,
      );
    }
    // The natural key compared as JavaScript compares strings (UTF-16), not as SQLite (UTF-8).
    const rows = await pool.query<{ devMac: string; devName: string }>(
      'SELECT "devMac", "devName" FROM "Devices"',
    );
    assert.deepEqual(byName(rows, false), nameOrder);
    const utf16 = rows
      .map((r) => ({
        mac: r.devMac,
        unnamed: r.devName === '' || r.devName === '(unknown)',
        key: naturalKey(r.devName),
      }))
      .sort(
        (a, b) =>
          Number(a.unnamed) - Number(b.unnamed) ||
          (a.key < b.key ? -1 : a.key > b.key ? 1 : a.mac < b.mac ? -1 : 1),
      )
      .map((r) => r.mac);
    assert.notDeepEqual(utf16, nameOrder);
    // SQLite's NULL first in an ascending sort; PostgreSQL's default puts it last.
    const byLast = await lite.listOrder({ sort: 'devLastConnection' });
    const pgDefault = await pool.query<{ devMac: string }>(
      'SELECT "devMac" FROM "Devices" ORDER BY "devLastConnection", "devMac"',
    );
    assert.notDeepEqual(
      pgDefault.map((r) => r.devMac),
      byLast,
    );
    // NOCASE folds ASCII only: a Unicode fold orders the vendors differently.
    const byVendor = await lite.listOrder({ sort: 'devVendor' });
    const vendorRows = await pool.query<{ devMac: string; devVendor: string }>(
      'SELECT "devMac", "devVendor" FROM "Devices"',
    );
    const unicodeFold = vendorRows
      .map((r) => ({ mac: r.devMac, key: r.devVendor.toLowerCase() }))
      .sort((a, b) => compareText(a.key, b.key) || compareText(a.mac, b.mac))
      .map((r) => r.mac);
    assert.notDeepEqual(unicodeFold, byVendor);
  });
});

const A = 'aa:00:00:00:10:01';
const B = '02:00:00:00:10:02';
const C = '06:00:00:00:10:03';
const D = 'aa:00:00:00:10:04';
const E = 'aa:00:00:00:10:05';
const F = 'aa:00:00:00:10:06';
const G = 'aa:00:00:00:10:07';
const X = '02:00:00:00:10:99';
const nobody = 'ff:00:00:00:00:00';
const now = new Date(Date.UTC(2026, 6, 1, 8));

/**
 * Devices with fields to fill and to keep, a parent chain (C over A, D over B over E over F), an
 * alias X of D; history on A, B and C: open sessions on A and B (B's is closed by the merge),
 * sessions across a month, an odd time and a session that ends before it starts (irregular).
 */
const writesSeed = `
  INSERT INTO "Devices" ("devMac", "devName", "devNameSource", "devOwner", "devVendor", "devGroup", "devIcon",
    "devFirstConnection", "devLastConnection", "devLastIP", "devPresentLastScan", "devParentMAC", "devParentPort",
    "devCustomProps", "devFavorite") VALUES
    ('${A}', 'Phone', 'user', 'Ann', '', '', '', '2026-06-01 10:00:00', '2026-06-30 10:00:00', '10.0.0.5', 1, '${C}', NULL, '[]', 0),
    ('${B}', '(unknown)', 'dhcp', '', 'Apple', 'Family', 'phone', '2026-05-01 09:00:00', '2026-07-01 07:00:00', '10.0.0.9', 0,
      '${D}', 3, '[{"a":1}]', 1),
    ('${C}', 'Phone 2', 'dhcp', 'Bob', 'Apple', '', '', NULL, NULL, '', 0, '', NULL, '[]', 0),
    ('${D}', 'Switch', 'user', '', 'Zyxel', '', '', '2026-01-01 00:00:00', '2026-06-30 00:00:00', '10.0.0.2', 1, '', NULL, '[]', 0),
    ('${E}', '', '', '', '', '', '', '2026-02-01 00:00:00', '2026-02-01 00:00:00', '', 0, '${B}', NULL, '[]', 0),
    ('${F}', 'TV', 'user', '', '', '', '', '2026-03-01 00:00:00', '2026-03-01 00:00:00', '', 0, '${E}', NULL, '[]', 0),
    ('${G}', 'Lamp', 'user', '', '', '', '', '2026-03-01 00:00:00', '2026-03-01 00:00:00', '', 0, '', NULL, '[]', 0);
  INSERT INTO "DeviceMacs" ("dma_MAC", "dma_DevMac", "dma_FirstSeen", "dma_LastSeen", "dma_Reason") VALUES
    ('${X}', '${D}', '2026-04-01 00:00:00', '2026-04-02 00:00:00', 'dhcp-client-id');
  INSERT INTO "Events" ("eve_MAC", "eve_DateTime", "eve_EventType", "eve_IP") VALUES
    ('${A}', '2026-06-30 10:00:00', 'Connected', '10.0.0.5'), ('${A}', '2026-06-29 10:00:00', 'Device Down', ''),
    ('${B}', '2026-06-20 10:00:00', 'IP Changed', '10.0.0.9'), ('${B}', '2026-05-31 23:59:59', 'Device Down', ''),
    ('${B}', '2026-06-01 00:00:00', 'New Device', ''), ('${B}', 'yesterday', 'Device Down', ''),
    ('${C}', '2026-06-15 12:00:00', 'Device Down', ''), ('${C}', '2026-06-15 12:00:00', 'Connected', '');
  INSERT INTO "Sessions" ("ses_MAC", "ses_DateTimeConnection", "ses_DateTimeDisconnection", "ses_StillConnected",
    "ses_EventTypeConnection", "ses_EventTypeDisconnection") VALUES
    ('${A}', '2026-06-30 10:00:00', NULL, 1, 'Connected', ''),
    ('${A}', '2026-06-01 10:00:00', '2026-06-02 11:30:00', 0, 'Connected', 'Disconnected'),
    ('${B}', '2026-07-01 06:00:00', NULL, 1, 'Connected', ''),
    ('${B}', '2026-05-31 22:00:00', '2026-06-01 02:00:00', 0, 'Connected', 'Device Down'),
    ('${C}', '2026-06-15 12:00:00', '2026-06-15 11:00:00', 0, 'Connected', 'Disconnected'),
    ('${C}', NULL, '2026-06-16 11:00:00', 0, '', 'Disconnected');
  INSERT INTO "ScanState" ("mac", "misses", "flapping") VALUES ('${B}', 1, 0), ('${C}', 0, 1);`;

/** Every step, with the answer or the error's name, code and message. */
const writeSteps: [string, (store: Store) => Promise<unknown>][] = [
  ['merge B into A', (s) => s.merge(A, B, now)],
  ['merge B again', (s) => s.merge(A, B, now)],
  ['merge alias B into D', (s) => s.merge(D, B, now)],
  ['merge A into itself', (s) => s.merge(A, A, now)],
  ['merge A into its alias', (s) => s.merge(B, A, now)],
  ['merge into nobody', (s) => s.merge(nobody, A, now)],
  ['merge nobody', (s) => s.merge(A, nobody, now)],
  ["merge A's parent C into A", (s) => s.merge(A, C, now)],
  ['merge G into alias X of D', (s) => s.merge(X, G, now)],
  ['split B off A', (s) => s.split(A, B, now)],
  ['split B again', (s) => s.split(A, B, now)],
  ["split A's own MAC", (s) => s.split(A, A, now)],
  ['split from nobody', (s) => s.split(nobody, B, now)],
  ['split C through its own MAC as alias', (s) => s.split(C, C, now)],
  ['merge A into D', (s) => s.merge(D, A, now)],
  [
    'bulk set, alias and stale MACs',
    (s) => s.bulkEdit([E, X, D, nobody, E, B], { set: { devGroup: 'Lab', devName: 'Bulk' } }),
  ],
  ['bulk parent loops', (s) => s.bulkEdit([E, F, C, B], { set: { devParentMAC: F } })],
  [
    'bulk clear parents and names',
    (s) => s.bulkEdit([F, nobody, E, X], { set: { devParentMAC: '', devName: '' } }),
  ],
  ['bulk nothing to set', (s) => s.bulkEdit([E, nobody], { set: {} })],
  [
    'bulk field outside the catalogue',
    (s) => s.bulkEdit([E, F], { set: { devComments: 'x', devStatus: 'On-line' } }),
  ],
  ['bulk delete', (s) => s.bulkEdit([F, nobody, X, C, A, X], { delete: true })],
  ['bulk delete again', (s) => s.bulkEdit([F, A], { delete: true })],
  ['bulk with no MACs', (s) => s.bulkEdit([], { set: { devStatus: 'On-line' } })],
  [
    'bulk field outside the catalogue, no device',
    (s) => s.bulkEdit([nobody], { set: { devStatus: 'On-line' } }),
  ],
];

const writeTables: [string, string][] = [
  ['Devices', '*'],
  ['DeviceMacs', '*'],
  ['Events', eventColumns.map((c) => `"${c}"`).join(', ')],
  ['Sessions', sessionColumns.map((c) => `"${c}"`).join(', ')],
  ['ScanState', '*'],
  ['DeviceHistoryTotals', '*'],
  ['DeviceHistoryBuckets', '*'],
];

/** A table's rows without devGUID (random), in one order whatever each store's NULL order. */
const canonical = (rows: Record<string, unknown>[]): string[] =>
  rows.map(({ devGUID: _guid, ...rest }) => JSON.stringify(rest)).sort(compareText);

describe('merge, split and bulk edits on SQLite and PostgreSQL', { skip }, () => {
  let pool: PostgresPool;
  let dir: string;
  let db: Database;

  before(async () => {
    pool = await openPostgres(await (await postgres()).createDatabase('writes'));
    dir = mkdtempSync(join(tmpdir(), 'netkeep-macs-contract-'));
    db = openDatabase(join(dir, 'netkeep.db'));
    db.exec(writesSeed);
    await pool.query(writesSeed);
  });
  after(async () => {
    db.close();
    rmSync(dir, { recursive: true, force: true });
    await pool.close();
  });

  test('every step gives the same answer or error and leaves the same rows and counts', async () => {
    const lite = new SqliteDeviceStore(new SqliteDevices(db));
    const pg = new PostgresDeviceStore(pool);
    const answer = async (run: () => Promise<unknown>): Promise<unknown> => {
      try {
        return await run();
      } catch (err) {
        const e = err as Error & { code?: string };
        return { error: e.name, code: e.code, message: e.message };
      }
    };
    const answers: unknown[] = [];
    for (const [label, step] of writeSteps) {
      const expected = await answer(() => step(lite));
      assert.deepEqual(await answer(() => step(pg)), expected, label);
      answers.push(expected);
      if (label === "merge A's parent C into A") {
        // The history moved with the merges (the counts with it) and B's open session was closed.
        const counts = db
          .prepare<[], { mac: string; sessions: number; events: number }>(
            `SELECT mac, sessions, events FROM DeviceHistoryTotals WHERE mac IN ('${A}', '${B}', '${C}') ORDER BY mac`,
          )
          .all();
        assert.deepEqual(
          counts.map((row) => [row.mac, row.sessions, row.events]),
          [
            [B, 0, 0],
            [C, 0, 0],
            [A, 6, 6],
          ],
        );
        const open = db.prepare('SELECT COUNT(*) AS n FROM Sessions WHERE ses_StillConnected = 1').get();
        assert.deepEqual(open, { n: 1 });
      }
      for (const [table, columns] of writeTables) {
        const sql = `SELECT ${columns} FROM "${table}"`;
        assert.deepEqual(
          canonical(await pool.query(sql)),
          canonical(db.prepare<[], Record<string, unknown>>(sql).all()),
          `${table} after ${label}`,
        );
      }
    }
    // The sequence met every outcome it was written for.
    const all = JSON.stringify(answers);
    for (const expected of [
      'ALREADY_MERGED',
      'SAME_DEVICE',
      'DEVICE_NOT_FOUND',
      'NOT_AN_ALIAS',
      'PARENT_CYCLE',
      'RangeError',
      `"split":"${C}"`,
      `"devMacs":["${D}","${X}","${A}","${G}"]`,
    ])
      assert.ok(all.includes(expected), expected);
  });

  test('merges of two devices into each other at once on PostgreSQL: one wins, no deadlock', async () => {
    const pg = new PostgresDeviceStore(pool);
    for (let i = 0; i < 8; i++) {
      const p = `aa:00:00:00:20:${hex(2 * i)}`;
      const q = `aa:00:00:00:20:${hex(2 * i + 1)}`;
      await pool.query(`INSERT INTO "Devices" ("devMac") VALUES ($1), ($2)`, [p, q]);
      const outcomes = await Promise.allSettled([pg.merge(p, q, now), pg.merge(q, p, now)]);
      const codes = outcomes.map((o) =>
        o.status === 'fulfilled' ? 'merged' : ((o.reason as { code?: string }).code ?? String(o.reason)),
      );
      assert.equal(codes.filter((c) => c === 'merged').length, 1, codes.join());
      assert.ok(
        codes.every((c) => ['merged', 'SAME_DEVICE', 'ALREADY_MERGED', 'DEVICE_NOT_FOUND'].includes(c)),
        codes.join(),
      );
      const left = await pool.query('SELECT 1 FROM "Devices" WHERE "devMac" IN ($1, $2)', [p, q]);
      assert.equal(left.length, 1);
    }
  });
});
