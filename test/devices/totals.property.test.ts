/**
 * Property test of what is kept in memory for the totals and the device list: after any sequence
 * of writes (API creates, one-field and several-field updates, copies, deletes, scan cycles, a
 * NetAlertX CSV import on the same connection, a write rolled back, and inserts, updates and
 * deletes of Devices rows by another connection), the kept counts equal a recount of the Devices
 * table, and every page of every list shape the list cache answers (a small cache that keeps
 * dropping items too) has exactly the text and total of the uncached list, and so has a whole answer
 * kept as bytes.
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import fc from 'fast-check';
import type { Database } from 'better-sqlite3';
import { SqliteCompatStore } from '../../src/store/sqlite/compat.js';
import { DeviceListCache } from '../../src/devices/list-cache.js';
import type { DeviceListQuery } from '../../src/devices/list-query.js';
import { SqliteDeviceStore } from '../../src/store/sqlite/device-store.js';
import { SqliteDevices } from '../../src/store/sqlite/devices.js';
import { deviceCounters, deviceGroups } from '../../src/devices/status.js';
import { deviceCountsSql, deviceTotalsSql } from '../../src/store/sqlite/status-sql.js';
import { ScanStore } from '../helpers/scan-store.js';
import { scanCycle, stableIp, withDatabaseFiles } from '../helpers/property-db.js';

const macs = ['02:00:00:00:00:01', '02:00:00:00:00:02', '02:00:00:00:00:03', '02:00:00:00:00:04'];
const t0 = Date.UTC(2024, 5, 1, 12, 0, 0);
const flagColumns = ['devIsArchived', 'devFavorite', 'devIsNew', 'devAlertDown', 'devPresentLastScan'];

const mac = fc.constantFrom(...macs);
const column = fc.constantFrom(...flagColumns, 'devName', 'devComments');
const value = fc.constantFrom<string | number>(0, 1, 'alpha', 'Beta', 'dev');

type Action =
  | { kind: 'create'; mac: string; flags: Record<string, number> }
  | { kind: 'edit'; mac: string; column: string; value: string | number }
  | { kind: 'editTwo'; mac: string; archived: number; name: string }
  | { kind: 'copy'; from: string; to: string }
  | { kind: 'delete'; mac: string }
  | { kind: 'scan'; present: string[] }
  | { kind: 'foreignScan'; present: string[] }
  | { kind: 'import'; mac: string; favorite: number }
  | { kind: 'rolledBack'; mac: string }
  | { kind: 'foreignInsert'; mac: string; archived: number; present: number }
  | { kind: 'foreignUpdate'; mac: string; column: string; value: number }
  | { kind: 'foreignDelete'; mac: string };

const flags = fc.record({
  devIsArchived: fc.constantFrom(0, 1),
  devFavorite: fc.constantFrom(0, 1),
  devIsNew: fc.constantFrom(0, 1),
  devAlertDown: fc.constantFrom(0, 1),
  devPresentLastScan: fc.constantFrom(0, 1),
});
const bit = fc.constantFrom(0, 1);

const action: fc.Arbitrary<Action> = fc.oneof(
  fc.record({ kind: fc.constant('create' as const), mac, flags }),
  fc.record({ kind: fc.constant('edit' as const), mac, column, value }),
  fc.record({
    kind: fc.constant('editTwo' as const),
    mac,
    archived: bit,
    name: fc.constantFrom('alpha', 'zeta'),
  }),
  fc.record({ kind: fc.constant('copy' as const), from: mac, to: mac }),
  fc.record({ kind: fc.constant('delete' as const), mac }),
  fc.record({ kind: fc.constant('scan' as const), present: fc.subarray(macs) }),
  fc.record({ kind: fc.constant('foreignScan' as const), present: fc.subarray(macs) }),
  fc.record({ kind: fc.constant('import' as const), mac, favorite: bit }),
  fc.record({ kind: fc.constant('rolledBack' as const), mac }),
  fc.record({ kind: fc.constant('foreignInsert' as const), mac, archived: bit, present: bit }),
  fc.record({
    kind: fc.constant('foreignUpdate' as const),
    mac,
    column: fc.constantFrom(...flagColumns),
    value: bit,
  }),
  fc.record({ kind: fc.constant('foreignDelete' as const), mac }),
);

interface World {
  readonly db: Database;
  readonly other: Database;
  readonly repo: SqliteDevices;
  readonly store: ScanStore;
  readonly compat: SqliteCompatStore;
  readonly caches: readonly DeviceListCache[];
  clock: number;
}

async function apply(world: World, a: Action): Promise<void> {
  const { repo, other, db } = world;
  world.clock += 60_000;
  const now = new Date(world.clock);
  switch (a.kind) {
    case 'create':
      repo.create(a.mac, a.flags, now);
      return;
    case 'edit':
      if (flagColumns.includes(a.column))
        repo.update(a.mac, { [a.column]: typeof a.value === 'number' ? a.value : 1 });
      else repo.update(a.mac, { [a.column]: String(a.value) });
      return;
    case 'editTwo':
      repo.update(a.mac, { devIsArchived: a.archived, devName: a.name });
      return;
    case 'copy':
      if (a.from !== a.to) repo.copy(a.from, a.to);
      return;
    case 'delete':
      repo.delete(a.mac);
      return;
    case 'scan':
      scanCycle(world.store, a.present, now);
      return;
    case 'foreignScan':
      scanCycle(new ScanStore(new SqliteDevices(other)), a.present, now, new Map(), stableIp);
      return;
    case 'import':
      await world.compat.importDevices(
        [{ mac: a.mac, changes: { devFavorite: a.favorite }, guid: undefined }],
        new Date('2024-06-01T12:00:00Z'),
      );
      return;
    case 'rolledBack':
      try {
        db.transaction(() => {
          repo.update(a.mac, { devIsArchived: 1 });
          repo.update(a.mac, { devName: 'never' });
          throw new Error('rolled back');
        })();
      } catch {
        // expected: nothing of it stays
      }
      return;
    case 'foreignInsert':
      other
        .prepare(
          `INSERT OR IGNORE INTO Devices (devMac, devName, devIsArchived, devPresentLastScan, devGUID)
           VALUES (?, 'foreign', ?, ?, ?)`,
        )
        .run(a.mac, a.archived, a.present, `guid-${a.mac}`);
      return;
    case 'foreignUpdate':
      other.prepare(`UPDATE Devices SET ${a.column} = ? WHERE devMac = ?`).run(a.value, a.mac);
      return;
    case 'foreignDelete':
      other.prepare('DELETE FROM Devices WHERE devMac = ?').run(a.mac);
      return;
  }
}

const shapes: DeviceListQuery[] = [
  {},
  { status: 'my', sort: 'devName', order: 'asc' },
  { status: 'down' },
  { status: 'On-line', sort: 'devStatus', order: 'desc' },
  { status: 'archived', q: 'a' },
  { q: 'dev', sort: 'devFavorite' },
];
const pages: [number, number | null][] = [
  [0, null],
  [0, 1],
  [1, 2],
  [3, null],
  [5, 1],
];

async function check(world: World, step: string): Promise<void> {
  const { db, repo, caches } = world;
  const recount = db.prepare(deviceCountsSql).raw().get() as number[];
  assert.deepEqual(
    repo.counts(),
    Object.fromEntries(deviceCounters.map((counter, i) => [counter, recount[i]])),
    `counts after ${step}`,
  );
  const totals = db.prepare(deviceTotalsSql).get() as Record<string, number>;
  assert.deepEqual(
    repo.totals(),
    Object.fromEntries(deviceGroups.map((group) => [group, totals[group]])),
    `totals after ${step}`,
  );
  for (const query of shapes)
    for (const [offset, limit] of pages) {
      const direct = repo.listDevices(query, { offset, limit: limit ?? 1000 });
      const expected = direct.items.map((item) => JSON.stringify(item));
      const where = `${JSON.stringify(query)} ${offset}/${String(limit)} after ${step}`;
      for (const cache of caches) {
        const page = await cache.page(query, offset, limit);
        assert.equal(page.total, direct.total, `total of ${where}`);
        const items: string[] = [];
        for await (const item of page.items) items.push(item);
        assert.deepEqual(items, expected, `page ${where}`);
        // A whole answer is kept as bytes and given again while it holds (asked twice: made, kept).
        for (let i = 0; i < 2; i++) {
          const answer = await cache.answer(query, offset, limit, async (p) => {
            const texts: string[] = [];
            for await (const item of p.items) texts.push(item);
            return `[${[p.total, ...texts].join(',')}]`;
          });
          assert.equal(answer.toString(), `[${[direct.total, ...expected].join(',')}]`, `answer ${where}`);
        }
      }
    }
}

describe('kept totals and the list cache', () => {
  test('equal a recount and the uncached list after any sequence of writes', async () => {
    await withDatabaseFiles('netkeep-totals-', async (fresh) => {
      await fc.assert(
        fc.asyncProperty(fc.array(action, { minLength: 1, maxLength: 40 }), async (actions) => {
          await fresh(async (db, other) => {
            const repo = new SqliteDevices(db);
            const world: World = {
              db,
              other,
              repo,
              store: new ScanStore(repo),
              compat: new SqliteCompatStore(db, repo),
              // The second keeps two items at most: it drops and reads items all the time.
              caches: [
                new DeviceListCache(new SqliteDeviceStore(repo)),
                new DeviceListCache(new SqliteDeviceStore(repo), 1600),
              ],
              clock: t0,
            };
            for (const m of macs.slice(0, 2)) repo.create(m, {}, new Date(t0));
            await check(world, 'start');
            for (const [i, a] of actions.entries()) {
              await apply(world, a);
              await check(world, `step ${i} ${JSON.stringify(a)}`);
            }
          });
        }),
        { numRuns: 80 },
      );
    });
  });
});
