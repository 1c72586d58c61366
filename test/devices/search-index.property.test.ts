/**
 * Property test of the search from memory (src/devices/search-index.ts): after any sequence of
 * writes (API creates, edits and deletes, scan cycles, and inserts, updates and deletes of Devices
 * rows by another connection, MACs that are not canonical included), every search gives
 * exactly the MACs, in the same order, that the SQL search (`LIKE` on the five columns) gives, for
 * texts of upper and lower case ASCII, non-ASCII letters whose case SQLite does not fold, the LIKE
 * wildcards and their escape, and MACs written with dashes. The list cache's plain searches (both
 * orders) and POST /devices/search's choice of devices are the same answers.
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import fc from 'fast-check';
import type { Database } from 'better-sqlite3';
import { DeviceListCache } from '../../src/devices/list-cache.js';
import { DeviceSearchIndex, foldAscii } from '../../src/devices/search-index.js';
import { SqliteDeviceStore } from '../../src/store/sqlite/device-store.js';
import { SqliteDevices } from '../../src/store/sqlite/devices.js';
import { ScanStore } from '../helpers/scan-store.js';
import { scanCycle, withDatabaseFiles } from '../helpers/property-db.js';

const macs = ['02:00:00:00:00:01', '02:00:00:00:00:02', 'aa:bb:00:00:00:03', '02:00:00:00:00:04'];
/** Rows another process may write: a MAC in capitals and NetAlertX's pseudo-device. */
const foreignMacs = ['02:00:00:00:00:0A', 'Internet'];
const columns = ['devName', 'devVendor', 'devOwner', 'devLastIP'] as const;
const t0 = Date.UTC(2024, 5, 1, 12, 0, 0);

/**
 * Characters where SQL and JavaScript could differ: case, non-ASCII case, wildcards, separators,
 * and the character the index joins devices' texts with (a text holding it is searched field by field).
 */
const char = fc.constantFrom(
  'a',
  'A',
  'b',
  'B',
  'é',
  'É',
  'ß',
  'İ',
  '%',
  '_',
  '\\',
  '-',
  ':',
  '0',
  '.',
  ' ',
  '\u0001',
);
const text = fc.string({ unit: char, maxLength: 6 });

const mac = fc.constantFrom(...macs);
const column = fc.constantFrom(...columns);

type Action =
  | { kind: 'create'; mac: string; name: string; vendor: string }
  | { kind: 'edit'; mac: string; column: (typeof columns)[number]; value: string }
  | { kind: 'delete'; mac: string }
  | { kind: 'scan'; present: string[] }
  | { kind: 'foreignInsert'; mac: string; name: string }
  | { kind: 'foreignUpdate'; mac: string; column: (typeof columns)[number]; value: string }
  | { kind: 'foreignDelete'; mac: string };

const action: fc.Arbitrary<Action> = fc.oneof(
  fc.record({ kind: fc.constant('create' as const), mac, name: text, vendor: text }),
  fc.record({ kind: fc.constant('edit' as const), mac, column, value: text }),
  fc.record({ kind: fc.constant('delete' as const), mac }),
  fc.record({ kind: fc.constant('scan' as const), present: fc.subarray(macs) }),
  fc.record({
    kind: fc.constant('foreignInsert' as const),
    mac: fc.constantFrom(...macs, ...foreignMacs),
    name: text,
  }),
  fc.record({
    kind: fc.constant('foreignUpdate' as const),
    mac: fc.constantFrom(...macs, ...foreignMacs),
    column,
    value: text,
  }),
  fc.record({ kind: fc.constant('foreignDelete' as const), mac: fc.constantFrom(...macs, ...foreignMacs) }),
);

function apply(repo: SqliteDevices, store: ScanStore, other: Database, a: Action, now: Date): void {
  switch (a.kind) {
    case 'create':
      repo.create(a.mac, { devName: a.name, devVendor: a.vendor }, now);
      return;
    case 'edit':
      repo.update(a.mac, { [a.column]: a.value });
      return;
    case 'delete':
      repo.delete(a.mac);
      return;
    case 'scan':
      scanCycle(store, a.present, now);
      return;
    case 'foreignInsert':
      other
        .prepare('INSERT OR IGNORE INTO Devices (devMac, devName, devGUID) VALUES (?, ?, ?)')
        .run(a.mac, a.name, `guid-${a.mac}`);
      return;
    case 'foreignUpdate':
      other.prepare(`UPDATE Devices SET ${a.column} = ? WHERE devMac = ?`).run(a.value, a.mac);
      return;
    case 'foreignDelete':
      other.prepare('DELETE FROM Devices WHERE devMac = ?').run(a.mac);
      return;
  }
}

/** Searches worth asking: the given texts, each in upper case too, and parts of the MACs. */
function searches(texts: readonly string[]): string[] {
  const parts = ['00:0', '00-00', 'AA-BB', '0a', 'inter', 'NET', '%', '_', '\\', 'é', 'É'];
  return [...new Set([...texts, ...texts.map((t) => t.toUpperCase()), ...parts])].filter((q) => q !== '');
}

describe('the search from memory', () => {
  test('finds exactly what the SQL search finds, in the same order, after any sequence of writes', async () => {
    await withDatabaseFiles('netkeep-search-', async (fresh) => {
      await fc.assert(
        fc.asyncProperty(
          fc.array(action, { minLength: 1, maxLength: 30 }),
          fc.array(text, { maxLength: 6 }),
          async (actions, texts) => {
            await fresh(async (db, other) => {
              const repo = new SqliteDevices(db);
              const store = new ScanStore(repo);
              const index = new DeviceSearchIndex(new SqliteDeviceStore(repo));
              const cache = new DeviceListCache(new SqliteDeviceStore(repo));
              const texts_ = async (items: AsyncIterable<string>): Promise<string[]> => {
                const all: string[] = [];
                for await (const item of items) all.push(item);
                return all;
              };
              let clock = t0;
              repo.create(macs[0] ?? '', { devName: 'Alpha', devOwner: 'ÉMILE' }, new Date(t0));
              const check = async (step: string): Promise<void> => {
                for (const q of searches(texts)) {
                  const sql = repo.listOrder({ q });
                  assert.deepEqual(await index.matches(q), sql, `search ${JSON.stringify(q)} after ${step}`);
                  assert.deepEqual(
                    (await texts_((await cache.page({ q }, 0, null)).items)).map(macOf),
                    sql,
                    `cache ${q}`,
                  );
                  assert.deepEqual(
                    (await texts_((await cache.page({ q, order: 'desc' }, 0, null)).items)).map(macOf),
                    [...sql].reverse(),
                    `cache desc ${q}`,
                  );
                }
              };
              await check('start');
              for (const [i, a] of actions.entries()) {
                clock += 60_000;
                apply(repo, store, other, a, new Date(clock));
                await check(`step ${i} ${JSON.stringify(a)}`);
              }
            });
          },
        ),
        { numRuns: 60 },
      );
    });
  });

  test('folds the case of ASCII letters only, as SQLite LIKE does', () => {
    assert.equal(foldAscii('ABC-déÉ-İ-ß'), 'abc-déÉ-İ-ß');
  });
});

function macOf(itemText: string): string {
  return (JSON.parse(itemText) as { devMac: string }).devMac;
}
