/**
 * A device's view and the kept counts, run against both stores: the same devices, aliases,
 * children, scanner memory, events and sessions (open and closed, straddling each period's start,
 * ending exactly on it, starting in the future, a session with no connection time, and a device
 * whose rows have irregular time text) in SQLite and PostgreSQL; `get`, `getTimed` (the counts,
 * the seconds, the slope and until) and `stats` compared for every device, every period and
 * several clocks. Then `counts()` and `totals()` over devices with every combination of the
 * counted flags, after this process's writes, and after another server's write (kept until told).
 */
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import type { Database } from 'better-sqlite3';
import { openDatabase } from '../../src/db/connection.js';
import { periods, type Period } from '../../src/time.js';
import { PostgresDeviceStore } from '../../src/store/postgres/devices.js';
import { openPostgres, type PostgresPool } from '../../src/store/postgres/pool.js';
import { SqliteDeviceStore } from '../../src/store/sqlite/device-store.js';
import { SqliteDevices } from '../../src/store/sqlite/devices.js';
import type { TimedView } from '../../src/store/devices.js';
import { postgresMissing, startPostgres, type PostgresServer } from '../helpers/postgres.js';
import { requireAll, skipUnlessCi } from '../helpers/requirements.js';

const skip = skipUnlessCi(postgresMissing(), 'device views contract on PostgreSQL');

const regular = 'aa:00:00:00:00:01';
const irregular = 'aa:00:00:00:00:02';
const parent = 'aa:00:00:00:00:03';
const nic = 'aa:00:00:00:00:04';
const randomChild = '0a:00:00:00:00:05';
const future = 'aa:00:00:00:00:06';
const alias = '02:00:00:00:00:09';
const alias2 = '06:00:00:00:00:08';
const missing = 'aa:00:00:00:00:99';
const macs = [regular, irregular, parent, nic, randomChild, future, missing];

const session = (
  mac: string,
  conn: string | null,
  disc: string | null,
  still: 0 | 1 = disc === null ? 1 : 0,
): string =>
  `('${mac}', ${conn === null ? 'NULL' : `'${conn}'`}, ${disc === null ? 'NULL' : `'${disc}'`}, ${still})`;

const history = `
  INSERT INTO "Devices" ("devMac", "devName", "devPresentLastScan", "devAlertDown", "devCanSleep", "devParentMAC", "devParentRelType", "devParentPort", "devLastIP") VALUES
    ('${regular}', 'regular', 1, 1, 0, '', 'default', NULL, '10.0.0.1'),
    ('${irregular}', 'irregular', 0, 1, 0, '', 'default', NULL, ''),
    ('${parent}', 'parent', 1, 0, 1, '', 'default', NULL, '10.0.0.3'),
    ('${nic}', 'nic', 0, 1, 0, '${parent}', 'nic', 2, '10.0.0.4'),
    ('${randomChild}', 'random', 1, 0, 1, '${parent}', 'default', NULL, ''),
    ('${future}', 'future', 0, 0, 0, '', 'default', NULL, '');
  INSERT INTO "DeviceMacs" ("dma_MAC", "dma_DevMac", "dma_Reason") VALUES ('${alias2}', '${parent}', 'merge'),
    ('${alias}', '${parent}', 'merge');
  INSERT INTO "ScanState" ("mac", "misses", "flapping") VALUES ('${parent}', 1, 1), ('${regular}', 0, 1), ('${nic}', 2, 0),
    ('${randomChild}', 0, 0);
  INSERT INTO "Events" ("eve_MAC", "eve_DateTime", "eve_EventType") VALUES
    ('${regular}', '2026-06-30 08:00:00', 'Device Down'),
    ('${regular}', '2026-06-30 09:00:00', 'Connected'),
    ('${regular}', '2026-06-30 11:30:00', 'Disconnected'),
    ('${regular}', '2026-06-28 10:00:00', 'IP Changed'),
    ('${regular}', '2026-06-01 08:00:00', 'New Device'),
    ('${regular}', '2026-05-15 10:00:00', 'Device Down'),
    ('${regular}', '2025-12-25 10:00:00', 'Down Reconnected'),
    ('${regular}', '2024-01-01 00:00:00', 'Device Down'),
    ('${irregular}', '2026-06-30T10:00:00Z', 'Device Down'),
    ('${irregular}', '2026-06-29 10:00:00', 'IP Changed'),
    ('${parent}', '2026-06-30 10:00:00', 'Connected');
  INSERT INTO "Sessions" ("ses_MAC", "ses_DateTimeConnection", "ses_DateTimeDisconnection", "ses_StillConnected") VALUES
    ${[
      // Straddles the start of '1 day' at 2026-07-01 08:00 and ends on the start's day.
      session(regular, '2026-06-30 07:00:00', '2026-06-30 09:00:00'),
      session(regular, '2026-06-30 10:00:00', '2026-06-30 11:30:00'),
      session(regular, '2026-06-30 23:00:00', '2026-07-01 01:00:00'),
      // Ends exactly at the start of '1 day' at 2026-06-26 10:00.
      session(regular, '2026-06-20 10:00:00', '2026-06-25 10:00:00'),
      session(regular, '2026-05-20 00:00:00', '2026-06-02 00:00:00'),
      session(regular, '2025-06-01 00:00:00', '2025-08-01 00:00:00'),
      session(regular, '2024-01-01 00:00:00', '2024-01-02 00:00:00'),
      session(regular, '2026-06-29 20:00:00', null),
      // Irregular: no connection time, text that is not storage time, out of order, a zone, Feb 30.
      session(irregular, null, '2026-06-30 12:00:00'),
      session(irregular, '2026-06-30 09:00', '2026-06-30 10:00:00'),
      session(irregular, '2026-06-29 10:00:00', '2026-06-30 10:00:00'),
      session(irregular, '2026-06-29 12:00:00', '2026-06-29 11:00:00'),
      session(irregular, '2026-06-28 10:00:00', '2026-06-28 12:00:00+02:00'),
      session(irregular, '2026-02-30 10:00:00', '2026-03-03 10:00:00'),
      session(irregular, '2026-06-30 07:30:00.500', null),
      // Open by its flag though it has an end; an open session that starts in the future.
      session(parent, '2026-06-30 20:00:00', '2026-06-30 21:00:00', 1),
      session(parent, '2026-06-10 00:00:00', '2026-06-11 00:00:00'),
      session(future, '2026-07-02 00:00:00', null),
      session(future, '2026-06-30 06:00:00', '2026-06-30 06:30:00'),
    ].join(',\n    ')};`;

/** Every combination of the flags the counters read, one device each. */
const flagDevices = `INSERT INTO "Devices" ("devMac", "devPresentLastScan", "devAlertDown", "devIsArchived", "devFavorite", "devIsNew") VALUES
  ${Array.from({ length: 32 }, (_, i) => {
    const bit = (n: number): number => (i >> n) & 1;
    return `('bb:00:00:00:00:${i.toString(16).padStart(2, '0')}', ${bit(0)}, ${bit(1)}, ${bit(2)}, ${bit(3)}, ${bit(4)})`;
  }).join(',\n  ')};`;

const clocks = [
  '2026-07-01T08:00:00Z', // '1 day' starts on an event and inside a closed session
  '2026-07-01T09:00:30Z', // odd seconds
  '2026-06-30T11:30:00Z', // on a session's end; later sessions start after now
  '2026-07-02T00:00:00Z', // the future open session starts now
  '2026-06-26T10:00:00Z', // '1 day' starts where a session ends
  '2026-07-31T00:00:00Z', // a month later
  '2027-07-01T00:00:00Z', // most history out of every period but all
].map((text) => new Date(text));

describe('the device views and counts on SQLite and PostgreSQL', { skip }, () => {
  let server: PostgresServer;
  let pool: PostgresPool;
  let dir: string;
  let db: Database;
  let lite: SqliteDeviceStore;
  let pg: PostgresDeviceStore;

  before(async () => {
    requireAll(postgresMissing());
    server = await startPostgres();
    pool = await openPostgres(server.url);
    dir = mkdtempSync(join(tmpdir(), 'netkeep-views-contract-'));
    db = openDatabase(join(dir, 'netkeep.db'));
    lite = new SqliteDeviceStore(new SqliteDevices(db));
    pg = new PostgresDeviceStore(pool);
    for (const sql of [history, flagDevices]) {
      db.exec(sql);
      await pool.query(sql);
    }
  });
  after(async () => {
    db.close();
    rmSync(dir, { recursive: true, force: true });
    await pool.close();
    await server.stop();
  });

  test('get, getTimed and stats give the same answers for every device, period and clock', async () => {
    const timed: TimedView[] = [];
    for (const now of clocks)
      for (const period of Object.keys(periods) as Period[])
        for (const mac of macs) {
          const at = `${mac} ${period} ${now.toISOString()}`;
          const expected = await lite.getTimed(mac, period, now);
          assert.deepEqual(await pg.getTimed(mac, period, now), expected, `getTimed ${at}`);
          assert.deepEqual(await pg.get(mac, period, now), await lite.get(mac, period, now), `get ${at}`);
          assert.deepEqual(
            await pg.stats(mac, period, now),
            await lite.stats(mac, period, now),
            `stats ${at}`,
          );
          if (expected !== undefined) timed.push(expected);
        }
    // The sequence met what it was written for (so that the comparison above compared something).
    assert.equal(timed.length, clocks.length * 5 * (macs.length - 1));
    const views = timed.map((t) => t.view);
    assert.ok(
      timed.some((t) => t.slope < 0),
      'a closed session straddling the start',
    );
    assert.ok(
      timed.some((t) => t.slope > 0),
      'an open session growing',
    );
    assert.ok(
      timed.some((t) => t.until === null),
      'a view only a write changes',
    );
    assert.ok(
      timed.some((t) => t.until !== null && !clocks.some((c) => c.getTime() === t.until?.getTime())),
      'a view that changes with the clock later',
    );
    assert.ok(
      timed.some(
        (t) => t.view.devMac === irregular && clocks.some((c) => c.getTime() === t.until?.getTime()),
      ),
      'the irregular device recounted',
    );
    assert.ok(
      views.some((v) => v.devPresenceHours > 0 && v.devPresenceHours % 1 !== 0),
      'fractional hours',
    );
    assert.ok(views.some((v) => v.devEvents > 0 && v.devDownAlerts > 0 && v.devSessions > 1));
    const parentView = views.find((v) => v.devMac === parent);
    assert.ok(parentView !== undefined);
    assert.deepEqual(parentView.devMacs, [parent, alias, alias2]);
    assert.deepEqual(
      parentView.devChildrenDynamic.map((c) => [c.devMac, c.devStatus, c.devParentPort]),
      [
        [randomChild, 'On-line', null],
        [nic, 'Down', 2],
      ],
    );
    assert.deepEqual(
      parentView.devChildrenNicsDynamic.map((c) => c.devMac),
      [nic],
    );
    assert.deepEqual([parentView.devSleeping, parentView.devFlapping], [1, 1]);
    const randomView = views.find((v) => v.devMac === randomChild);
    assert.ok(randomView !== undefined);
    assert.deepEqual([randomView.devRandomMac, randomView.devSleeping, randomView.devFlapping], [1, 0, 0]);
  });

  test('counts and totals: the same, kept between changes, recounted after writes', async () => {
    const same = async (label: string): Promise<void> => {
      assert.deepEqual(await pg.counts(), await lite.counts(), `counts ${label}`);
      assert.deepEqual(await pg.totals(), await lite.totals(), `totals ${label}`);
    };
    await same('at first');
    const first = await lite.counts();
    assert.ok(
      Object.values(first).every((n) => n > 0),
      'every counter holds a device',
    );

    // This process's writes, through each store: read back at once.
    const writes: ((store: SqliteDeviceStore | PostgresDeviceStore) => Promise<unknown>)[] = [
      (s) => s.update('bb:00:00:00:00:00', { devIsArchived: 1, devFavorite: 1 }),
      (s) => s.update('bb:00:00:00:00:1f', { devIsArchived: 0, devPresentLastScan: 0 }),
      (s) => s.create('bb:00:00:00:01:00', { devAlertDown: 1, devIsNew: 0 }, clocks[0] ?? new Date()),
      (s) => s.delete('bb:00:00:00:00:01'),
    ];
    for (const [i, write] of writes.entries()) {
      await write(lite);
      await write(pg);
      await same(`after write ${i}`);
    }

    // A single statement on this process's pool (not a transaction) counts as a write too.
    const raw = `UPDATE "Devices" SET "devIsNew" = 1, "devIsArchived" = 0 WHERE "devMac" = 'bb:00:00:00:00:04'`;
    db.exec(raw);
    await pool.query(raw);
    await same('after a statement on the pool');

    // A write that commits while a recount runs: that recount is not kept.
    await lite.update('bb:00:00:00:00:02', { devIsNew: 0 });
    await pg.update('bb:00:00:00:00:02', { devIsNew: 0 });
    const running = pg.counts();
    await pg.update('bb:00:00:00:00:03', { devIsArchived: 1 });
    await lite.update('bb:00:00:00:00:03', { devIsArchived: 1 });
    await running;
    await same('after a write during a recount');

    // Another server's write: not seen until the store is told (by NOTIFY, in the server).
    const other = await openPostgres(server.url);
    try {
      const before = await pg.counts();
      const sql = `UPDATE "Devices" SET "devFavorite" = 1, "devIsArchived" = 0 WHERE "devMac" LIKE 'bb:%'`;
      await other.query(sql);
      db.exec(sql);
      assert.deepEqual(await pg.counts(), before, 'kept: no recount per read');
      assert.notDeepEqual(await lite.counts(), before);
      pg.invalidateCounts();
      await same('after another server wrote');
    } finally {
      await other.close();
    }
  });
});
