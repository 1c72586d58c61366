/**
 * The device store (as far as it is built on PostgreSQL), run against both stores: one sequence of
 * creates, updates, MAC and name reads, names found automatically,
 * refusals (a MAC already there or an alias, a parent loop, a field outside the
 * catalogue), deletes and resets applied to SQLite and to PostgreSQL; every answer (or error) and
 * every row of the tables they touch compared (devGUID aside: it is random).
 */
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import type { Database } from 'better-sqlite3';
import { openDatabase } from '../../src/db/connection.js';
import { PostgresDeviceStore } from '../../src/store/postgres/devices.js';
import { openPostgres, type PostgresPool } from '../../src/store/postgres/pool.js';
import { SqliteDeviceStore } from '../../src/store/sqlite/device-store.js';
import { SqliteDevices } from '../../src/store/sqlite/devices.js';
import type { DeviceStore } from '../../src/store/devices.js';
import { postgresMissing, startPostgres, type PostgresServer } from '../helpers/postgres.js';
import { requireAll, skipUnlessCi } from '../helpers/requirements.js';

const skip = skipUnlessCi(postgresMissing(), 'device writes contract on PostgreSQL');

type Writes = Pick<
  DeviceStore,
  | 'create'
  | 'update'
  | 'updateResolved'
  | 'delete'
  | 'deleteEvents'
  | 'resetProps'
  | 'copy'
  | 'resolveMac'
  | 'loadAliases'
  | 'listChildren'
  | 'loadNames'
  | 'getName'
  | 'resolveName'
>;

const router = 'aa:00:00:00:00:01';
const laptop = 'aa:00:00:00:00:02';
const phone = 'aa:00:00:00:00:03';
const alias = '02:00:00:00:00:09';
const now = new Date(Date.UTC(2026, 6, 1, 8));

const history = `
  INSERT INTO "DeviceMacs" ("dma_MAC", "dma_DevMac", "dma_Reason") VALUES ('${alias}', '${laptop}', 'merge');
  INSERT INTO "Events" ("eve_MAC", "eve_DateTime", "eve_EventType") VALUES ('${laptop}', '2026-06-30 10:00:00', 'Device Down'),
    ('${phone}', '2026-06-30 10:00:00', 'Connected');
  INSERT INTO "Sessions" ("ses_MAC", "ses_DateTimeConnection", "ses_DateTimeDisconnection") VALUES
    ('${laptop}', '2026-06-30 09:00:00', '2026-06-30 10:00:00'), ('${phone}', '2026-06-30 09:00:00', NULL);
  INSERT INTO "ScanState" ("mac", "misses") VALUES ('${laptop}', 1), ('${phone}', 2);
  INSERT INTO "DevicePorts" VALUES ('${laptop}', 22, 'tcp', 'ssh', '', '', '2026-06-30 10:00:00', '2026-06-30 10:00:00');
  INSERT INTO "WatchMemory" VALUES ('ports-scanned', '${laptop}', '1'), ('ports-scanned', '${phone}', '1');`;

/** Plays the sequence; every answer, or the error's name, code and message. */
async function play(writes: Writes, exec: (sql: string) => Promise<void>): Promise<unknown[]> {
  const log: unknown[] = [];
  const step = async (run: () => unknown): Promise<void> => {
    try {
      log.push(await run());
    } catch (err) {
      const e = err as Error & { code?: string };
      log.push({ error: e.name, code: e.code, message: e.message });
    }
  };
  await step(() => writes.create(router, { devName: 'Router', devType: 'Router', devFavorite: 1 }, now));
  await step(() =>
    writes.create(laptop, { devName: '', devParentMAC: router, devCustomProps: [{ a: 1 }] }, now),
  );
  await step(() =>
    writes.create(phone, { devName: 'Phone', devParentMAC: laptop, devLastConnection: new Date(0) }, now),
  );
  await step(() => writes.create(router, {}, now));
  await exec(history);
  await step(() => writes.create(alias, {}, now));
  await step(() => writes.resolveMac(alias));
  await step(() => writes.resolveMac(router));
  await step(() => writes.loadAliases());
  await step(() => writes.listChildren(router));
  await step(() => writes.listChildren(phone));
  await step(() => writes.update(laptop, { devName: 'Laptop', devOwner: 'Ann', devSkipRepeated: 12 }));
  await step(() => writes.update(router, { devName: '(unknown)' }));
  await step(() => writes.update(router, { devParentMAC: phone }));
  await step(() => writes.update(router, { devParentMAC: router }));
  await step(() => writes.update('aa:00:00:00:00:99', { devName: 'nobody' }));
  await step(() => writes.update(laptop, {}));
  await step(() => writes.update(phone, { devComments: 'in the hall' }));
  await step(() => writes.update(phone, { devStatus: 'On-line' }));
  await step(() => writes.update(phone, { devMac: 'aa:00:00:00:00:77' }));
  // By an alias, by the device's own MAC, by a MAC that is neither (the answer: the device's own MAC).
  await step(() => writes.updateResolved(alias, { devOwner: 'Bob' }));
  await step(() => writes.updateResolved(laptop, { devComments: 'on the desk' }));
  await step(() => writes.updateResolved('aa:00:00:00:00:99', { devName: 'nobody' }));
  await step(() => writes.updateResolved(router, { devParentMAC: phone }));
  await step(() => writes.loadNames());
  await step(() => writes.getName(phone));
  // A name found automatically: never over the user's (only the FQDN changes), taken when there is none.
  const found = (mac: string) => (stored: { source: string }) =>
    ({
      mac,
      name: stored.source === 'user' ? 'dhcp-name' : 'gateway',
      source: 'dhcp',
      fqdn: `${mac}.lan`,
    }) as const;
  await step(() => writes.resolveName(phone, found(phone)));
  await step(() => writes.resolveName(router, found(router)));
  await step(() => writes.resolveName(router, () => undefined));
  await step(() => writes.resolveName('aa:00:00:00:00:99', found('aa:00:00:00:00:99')));
  await step(() => writes.copy(laptop, 'aa:00:00:00:00:04'));
  await step(() => writes.copy(router, phone));
  await step(() => writes.copy(alias, laptop));
  await step(() => writes.copy('aa:00:00:00:00:99', 'aa:00:00:00:00:05'));
  await step(() => writes.resetProps(laptop));
  await step(() => writes.resetProps('aa:00:00:00:00:99'));
  await step(() => writes.deleteEvents(phone));
  await step(() => writes.deleteEvents('aa:00:00:00:00:99'));
  await step(() => writes.delete(laptop));
  await step(() => writes.delete(laptop));
  return log;
}

const dumps: [string, string][] = [
  ['Devices', '"devMac"'],
  ['DeviceMacs', '"dma_MAC"'],
  ['Events', '"eve_MAC", "eve_DateTime"'],
  ['Sessions', '"ses_MAC", "ses_DateTimeConnection"'],
  ['ScanState', '"mac"'],
  ['DevicePorts', '"dpo_MAC"'],
  ['WatchMemory', '"wat_Key"'],
];
const columnsOf = (table: string): string =>
  table === 'Events' || table === 'Sessions' ? `"${table === 'Events' ? 'eve' : 'ses'}_MAC"` : '*';
const noGuid = (rows: Record<string, unknown>[]): Record<string, unknown>[] =>
  rows.map(({ devGUID: _guid, ...rest }) => ({ ...rest }));

describe('the device store on SQLite and PostgreSQL', { skip }, () => {
  let server: PostgresServer;
  let pool: PostgresPool;
  let dir: string;
  let db: Database;

  before(async () => {
    requireAll(postgresMissing());
    server = await startPostgres();
    pool = await openPostgres(server.url);
    dir = mkdtempSync(join(tmpdir(), 'netkeep-writes-contract-'));
    db = openDatabase(join(dir, 'netkeep.db'));
  });
  after(async () => {
    db.close();
    rmSync(dir, { recursive: true, force: true });
    await pool.close();
    await server.stop();
  });

  test('the same calls give the same answers, errors and rows', async () => {
    const lite = await play(new SqliteDeviceStore(new SqliteDevices(db)), (sql) => {
      db.exec(sql);
      return Promise.resolve();
    });
    const pg = await play(new PostgresDeviceStore(pool), async (sql) => {
      await pool.query(sql);
    });
    assert.deepEqual(pg, lite);
    for (const [table, order] of dumps) {
      const sql = `SELECT ${columnsOf(table)} FROM "${table}" ORDER BY ${order}`;
      assert.deepEqual(
        noGuid(await pool.query(sql)),
        noGuid(db.prepare<[], Record<string, unknown>>(sql).all()),
        table,
      );
    }
    // updateResolved: the device's own MAC by its alias and by itself, undefined for neither, then
    // the parent-loop refusal of a device updated by its own MAC.
    const resolved = lite.findIndex((answer, i) => answer === laptop && lite[i + 1] === laptop);
    assert.ok(resolved > 0, 'updateResolved answered the device by its alias and by its own MAC');
    assert.equal(lite[resolved + 2], undefined);
    assert.equal((lite[resolved + 3] as { code?: string }).code, 'PARENT_CYCLE');
    // The sequence met every outcome it was written for.
    const text = JSON.stringify(lite);
    for (const expected of [
      'created',
      'exists',
      'PARENT_CYCLE',
      'RangeError',
      'true',
      'false',
      '"gateway"',
      '.lan',
    ])
      assert.ok(text.includes(expected), expected);
  });
});
