/**
 * Property test of the per-device counts kept by triggers: after any sequence of scan cycles, API
 * edits, copies, deletes, history deletes, prunes and writes by another connection (as the sqlite3
 * CLI or an import would make them, irregular times included), every computed field of every
 * device, for every period and at several moments, equals a recount from the raw Events and
 * Sessions tables with the statements that define the counts; and the GET cache's text equals the
 * uncached answer of the device a MAC names (its own, or the one it is an alias of), for every
 * period, also when the clock has moved on since the entry was made.
 * Merges and splits of devices (several MACs per device) are among the writes: every MAC then
 * belongs to at most one device, and the counts still equal the recount.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, test } from 'node:test';
import fc from 'fast-check';
import type { Database } from 'better-sqlite3';
import { openDatabase } from '../../src/db/connection.js';
import { historyCountsBackfill } from '../../src/store/sqlite/migrations.js';
import { presenceHours } from '../../src/store/devices.js';
import { SqliteDeviceStore } from '../../src/store/sqlite/device-store.js';
import { SqliteDevices } from '../../src/store/sqlite/devices.js';
import { deviceSql } from '../../src/store/sqlite/device-sql.js';
import { DeviceJsonCache } from '../../src/devices/view-cache.js';
import type { Observation } from '../../src/scanner/discovery.js';
import { planCycle } from '../../src/scanner/state-machine.js';
import { DomainError } from '../../src/errors.js';
import { ScanStore } from '../helpers/scan-store.js';
import { scanCycle, stableIp, withDatabaseFiles } from '../helpers/property-db.js';
import { dbTime, periods, periodStart, type Period } from '../../src/time.js';
import { dumpCounts } from './history.js';

const macs = ['02:00:00:00:00:01', '02:00:00:00:00:02', '02:00:00:00:00:03', '02:00:00:00:00:04'];
const hour = 3_600_000;
const day = 24 * hour;
const t0 = Date.UTC(2024, 0, 30, 23, 0, 0); // near a month's end: the edges cross months

const mac = fc.constantFrom(...macs);
/**
 * A time around the clock, from ~400 days before to a few hours after, at second resolution; often
 * exactly at (or one second off) a period's start, where the edges of the computation are.
 */
const offset = fc.oneof(
  fc.integer({ min: -400 * 86_400, max: 6 * 3_600 }).map((s) => s * 1000),
  fc
    .tuple(fc.constantFrom(1, 7, 30, 365), fc.constantFrom(-1000, 0, 1000))
    .map(([days, ms]) => -days * day + ms),
);
const eventType = fc.constantFrom(
  'New Device',
  'Connected',
  'Disconnected',
  'Device Down',
  'Down Reconnected',
  'IP Changed',
  'Imported',
);
type Action =
  | { kind: 'advance'; ms: number }
  | { kind: 'scan'; present: string[] }
  | { kind: 'foreignScan'; present: string[] }
  | { kind: 'edit'; mac: string; column: string; value: string | number }
  | { kind: 'copy'; from: string; to: string }
  | { kind: 'delete'; mac: string }
  | { kind: 'deleteEvents'; mac: string }
  | { kind: 'prune'; days: number }
  | { kind: 'foreignEvent'; mac: string; at: number; type: string; irregular: boolean }
  | { kind: 'foreignSession'; mac: string; from: number; length: number; open: boolean; irregular: boolean }
  | { kind: 'foreignUpdate'; pick: number; shift: number }
  | { kind: 'foreignDelete'; pick: number }
  | { kind: 'merge'; to: string; from: string }
  | { kind: 'split'; mac: string; alias: string };

const action: fc.Arbitrary<Action> = fc.oneof(
  fc.record({
    kind: fc.constant('advance' as const),
    ms: fc.oneof(fc.integer({ min: 1, max: 3 * day }), fc.constantFrom(1000, day, 7 * day, 30 * day)),
  }),
  fc.record({ kind: fc.constant('scan' as const), present: fc.subarray(macs) }),
  // A cycle by another process (scan-cycler.ts): the change log names its devices, and those only
  // seen again keep their cached answers with the new devLastConnection.
  fc.record({ kind: fc.constant('foreignScan' as const), present: fc.subarray(macs) }),
  fc.record({
    kind: fc.constant('edit' as const),
    mac,
    column: fc.constantFrom('devName', 'devParentMAC', 'devAlertDown', 'devPresentLastScan'),
    value: fc.oneof(fc.constantFrom(...macs), fc.constantFrom(0, 1)),
  }),
  fc.record({ kind: fc.constant('copy' as const), from: mac, to: mac }),
  fc.record({ kind: fc.constant('delete' as const), mac }),
  fc.record({ kind: fc.constant('merge' as const), to: mac, from: mac }),
  fc.record({ kind: fc.constant('merge' as const), to: mac, from: mac }),
  fc.record({ kind: fc.constant('split' as const), mac, alias: mac }),
  fc.record({ kind: fc.constant('deleteEvents' as const), mac }),
  fc.record({ kind: fc.constant('prune' as const), days: fc.integer({ min: 1, max: 400 }) }),
  fc.record({
    kind: fc.constant('foreignEvent' as const),
    mac,
    at: offset,
    type: eventType,
    irregular: fc.boolean(),
  }),
  fc.record({
    kind: fc.constant('foreignSession' as const),
    mac,
    from: offset,
    length: fc.integer({ min: -hour, max: 40 * day }),
    open: fc.boolean(),
    irregular: fc.boolean(),
  }),
  fc.record({
    kind: fc.constant('foreignUpdate' as const),
    pick: fc.nat(),
    shift: fc.integer({ min: -40 * day, max: 40 * day }),
  }),
  fc.record({ kind: fc.constant('foreignDelete' as const), pick: fc.nat() }),
);

interface World {
  readonly db: Database;
  readonly other: Database;
  readonly repo: SqliteDevices;
  readonly store: ScanStore;
  readonly cache: DeviceJsonCache;
  clock: number;
}

function apply(world: World, a: Action, irregularTime: (at: number) => string | null): void {
  const { repo, other } = world;
  const now = new Date(world.clock);
  switch (a.kind) {
    case 'advance':
      world.clock += a.ms;
      return;
    case 'scan':
      // As the scanner does: an alias sighting is its device's.
      scanCycle(world.store, a.present, now, repo.loadAliases());
      return;
    case 'foreignScan':
      // A minute after the previous step, as cycles follow each other: devLastConnection moves.
      world.clock += 60_000;
      // Each MAC at an address of its own: a device seen again changes only devLastConnection.
      scanCycle(
        new ScanStore(new SqliteDevices(other)),
        a.present,
        new Date(world.clock),
        repo.loadAliases(),
        stableIp,
      );
      return;
    case 'edit':
      if (a.column === 'devName') repo.update(a.mac, { devName: String(a.value) });
      else if (a.column === 'devParentMAC')
        try {
          repo.update(a.mac, { devParentMAC: String(a.value) });
        } catch (err) {
          // A parent that would make a cycle (the device itself, or one of its children) is
          // refused and changes nothing.
          if (!(err instanceof DomainError && err.code === 'PARENT_CYCLE')) throw err;
        }
      else repo.update(a.mac, { [a.column]: typeof a.value === 'number' ? a.value : 1 });
      return;
    case 'copy':
      if (a.from !== a.to) repo.copy(a.from, a.to);
      return;
    case 'delete':
      repo.delete(repo.resolveMac(a.mac));
      return;
    case 'merge':
    case 'split':
      try {
        if (a.kind === 'merge') {
          repo.merge(a.to, a.from, now);
          // The history moved with the device: nothing is left under the merged MAC.
          const left = world.db
            .prepare<[string, string], number>(
              'SELECT (SELECT COUNT(*) FROM Events WHERE eve_MAC = ?) + (SELECT COUNT(*) FROM Sessions WHERE ses_MAC = ?)',
            )
            .pluck()
            .get(a.from, a.from);
          assert.equal(left, 0, `history left under ${a.from}`);
        } else repo.split(a.mac, a.alias, now);
      } catch (err) {
        // Refused (missing, same device, already merged, not an alias): nothing was changed.
        if (!(err instanceof DomainError)) throw err;
      }
      return;
    case 'deleteEvents':
      repo.deleteEvents(a.mac);
      return;
    case 'prune':
      repo.presence.pruneHistory(new Date(world.clock - a.days * day), 1_000_000);
      return;
    case 'foreignEvent':
      other
        .prepare('INSERT INTO Events (eve_MAC, eve_IP, eve_DateTime, eve_EventType) VALUES (?, ?, ?, ?)')
        .run(
          a.mac,
          '10.9.9.9',
          (a.irregular ? irregularTime(world.clock + a.at) : null) ?? dbTime(new Date(world.clock + a.at)),
          a.type,
        );
      return;
    case 'foreignSession': {
      const from = world.clock + a.from;
      const to = from + a.length;
      const connection = a.irregular ? irregularTime(from) : dbTime(new Date(from));
      const disconnection = a.open ? null : a.irregular ? irregularTime(to) : dbTime(new Date(to));
      other
        .prepare(
          `INSERT INTO Sessions (ses_MAC, ses_DateTimeConnection, ses_DateTimeDisconnection, ses_StillConnected)
           VALUES (?, ?, ?, ?)`,
        )
        .run(a.mac, connection, disconnection, a.open ? 1 : 0);
      return;
    }
    case 'foreignUpdate': {
      const rows = other.prepare('SELECT rowid FROM Sessions ORDER BY rowid').pluck().all() as number[];
      const rowid = rows[a.pick % Math.max(1, rows.length)];
      if (rowid === undefined) return;
      other
        .prepare(
          `UPDATE Sessions SET ses_DateTimeDisconnection = datetime(?, 'unixepoch'), ses_StillConnected = 0
           WHERE rowid = ?`,
        )
        .run(Math.floor((world.clock + a.shift) / 1000), rowid);
      return;
    }
    case 'foreignDelete': {
      const rows = other.prepare('SELECT rowid FROM Events ORDER BY rowid').pluck().all() as number[];
      const rowid = rows[a.pick % Math.max(1, rows.length)];
      if (rowid !== undefined) other.prepare('DELETE FROM Events WHERE rowid = ?').run(rowid);
      return;
    }
  }
}

/** Every computed count of every device and period at `at`, against the raw recount. */
async function check(world: World, at: number): Promise<void> {
  const { db, repo, cache } = world;
  const eventCounts = db.prepare<[{ mac: string; start: string }], { events: number; downAlerts: number }>(
    deviceSql.eventCounts,
  );
  const sessionStats = db.prepare<
    [{ mac: string; start: string; now: string }],
    { sessions: number; seconds: number }
  >(deviceSql.sessionStats);
  const now = new Date(at);
  // Every MAC belongs to at most one device: a device's own MAC or one alias, never both or two.
  const owned = db
    .prepare<[], string>('SELECT devMac FROM Devices UNION ALL SELECT dma_MAC FROM DeviceMacs')
    .pluck()
    .all();
  assert.equal(new Set(owned).size, owned.length, `a MAC owned twice: ${owned.join(' ')}`);
  const orphans = db
    .prepare<[], number>(
      'SELECT COUNT(*) FROM DeviceMacs WHERE NOT EXISTS (SELECT 1 FROM Devices WHERE devMac = dma_DevMac)',
    )
    .pluck()
    .get();
  assert.equal(orphans, 0, 'an alias of no device');
  for (const device of macs) {
    for (const period of Object.keys(periods) as Period[]) {
      const start = periodStart(period, now) ?? '';
      const events = eventCounts.get({ mac: device, start });
      const sessions = sessionStats.get({ mac: device, start, now: dbTime(now) });
      assert.deepEqual(
        repo.stats(device, period, now),
        {
          devSessions: sessions?.sessions ?? 0,
          devEvents: events?.events ?? 0,
          devDownAlerts: events?.downAlerts ?? 0,
          devPresenceHours: presenceHours(sessions?.seconds ?? 0),
        },
        `${device} ${period} at ${now.toISOString()}`,
      );
    }
    for (const period of Object.keys(periods) as Period[]) {
      // A MAC is answered as GET /device/<mac> answers it: an alias with its device.
      const cached = await cache.get(device, period, now);
      const direct = repo.get(repo.resolveMac(device), period, now);
      assert.deepEqual(
        cached === undefined ? undefined : JSON.parse(cached),
        direct,
        `cache ${device} ${period} at ${now.toISOString()}`,
      );
    }
  }
}

describe('per-device counts kept by triggers', () => {
  test('equal a recount from the raw tables after any sequence of writes, for every period', async () => {
    await withDatabaseFiles('netkeep-counts-', async (fresh) => {
      await fc.assert(
        fc.asyncProperty(
          fc.array(action, { minLength: 1, maxLength: 40 }),
          fc.array(fc.oneof(fc.integer({ min: 0, max: 2 * day }), fc.constantFrom(day, 7 * day, 30 * day)), {
            minLength: 1,
            maxLength: 3,
          }),
          async (actions, laters) => {
            await fresh(async (db, other) => {
              const repo = new SqliteDevices(db);
              const world: World = {
                db,
                other,
                repo,
                store: new ScanStore(repo),
                cache: new DeviceJsonCache(new SqliteDeviceStore(repo)),
                clock: t0,
              };
              for (const m of macs.slice(0, 2)) repo.create(m, {}, new Date(t0));
              let step = 0;
              for (const a of actions) {
                const kinds = ['iso', 'null', 'garbage', 'day31'] as const;
                const kind = kinds[step++ % kinds.length];
                apply(world, a, (when) =>
                  kind === 'iso'
                    ? new Date(when).toISOString()
                    : kind === 'null'
                      ? null
                      : kind === 'garbage'
                        ? 'yesterday'
                        : '2023-02-31 10:00:00',
                );
                await check(world, world.clock);
              }
              for (const later of laters) await check(world, world.clock + later);
            });
          },
        ),
        { numRuns: 80 },
      );
    });
  });

  test('the migration counts the rows a database already holds (backfill) like the triggers do', () => {
    // A database whose history was written with the triggers dropped stands for one created before
    // the migration: dropping and re-running the migration's backfill must give the same rows.
    const dir = mkdtempSync(join(tmpdir(), 'netkeep-backfill-'));
    try {
      const file = join(dir, 'netkeep.db');
      const db = openDatabase(file);
      const repo = new SqliteDevices(db);
      const store = new ScanStore(repo);
      let clock = t0 - 30 * day;
      for (let i = 0; i < 40; i++) {
        const observations = new Map<string, Observation>(
          macs
            .filter((_, j) => (i + j) % 3 !== 0)
            .map((m) => [m, { ips: ['10.0.0.1'], vendor: '', source: 'arp-scan' }]),
        );
        store.apply(
          planCycle({ known: store.loadState(), observations, missesBeforeAbsent: 1, now: new Date(clock) }),
        );
        clock += 7 * hour;
      }
      db.prepare(
        "INSERT INTO Sessions (ses_MAC, ses_DateTimeConnection, ses_DateTimeDisconnection) VALUES (?, NULL, '2024-01-01 00:00:00')",
      ).run(macs[0]);
      db.prepare(
        "INSERT INTO Events (eve_MAC, eve_DateTime, eve_EventType) VALUES (?, 'soon', 'Device Down')",
      ).run(macs[1]);
      const byTriggers = dumpCounts(db);
      db.exec('DELETE FROM DeviceHistoryTotals; DELETE FROM DeviceHistoryBuckets;');
      db.exec(historyCountsBackfill);
      assert.deepEqual(dumpCounts(db), byTriggers);
      db.close();
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
