/**
 * The presence contract, run against both stores: the same scan cycles (planned by the real state
 * machine from what each store loads: new devices, absences with their grace, Device Down, IP
 * changes, returns, a name found) applied to SQLite and to PostgreSQL; after every cycle the
 * loaded presence, every row the scanner writes (and what commits with a cycle: watch memory,
 * notifications) and the history counts are the same. Then history
 * retention and the scanner's memory clean-up, compared the same way.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import type { Database } from 'better-sqlite3';
import { openDatabase } from '../../src/db/connection.js';
import type { KnownDevice, NameUpdate, SiteMark } from '../../src/devices/presence.js';
import type { Observation } from '../../src/scanner/discovery.js';
import { planCycle } from '../../src/scanner/state-machine.js';
import type { PostgresPool } from '../../src/store/postgres/pool.js';
import { openPostgres } from '../../src/store/postgres/pool.js';
import { PostgresPresenceStore } from '../../src/store/postgres/presence.js';
import { SqliteDeviceStore } from '../../src/store/sqlite/device-store.js';
import { SqliteDevices } from '../../src/store/sqlite/devices.js';
import { SqliteOutboxStore } from '../../src/store/sqlite/outbox.js';
import { SqliteWatchStore } from '../../src/store/sqlite/watch.js';
import { PostgresOutboxStore } from '../../src/store/postgres/outbox.js';
import type { PresenceExtras } from '../../src/store/presence.js';
import type { NotificationEvent } from '../../src/alerts/model.js';
import { postgresMissing, startPostgres, type PostgresServer } from '../helpers/postgres.js';
import { requireAll, skipUnlessCi } from '../helpers/requirements.js';

const skip = skipUnlessCi(postgresMissing(), 'presence contract on PostgreSQL');

const A = 'aa:00:00:00:00:0a';
const B = 'aa:00:00:00:00:0b';
const C = 'aa:00:00:00:00:0c';

function seen(ip: string): Observation {
  return { ips: [ip], vendor: 'Acme', source: 'arp-scan' };
}

/** Each cycle: who answers, at which address; a name found for A in the fourth; SQL run before it. */
const cycles: {
  sightings: Record<string, string>;
  names?: NameUpdate[];
  sites?: SiteMark[];
  before?: string;
}[] = [
  { sightings: { [A]: '192.168.1.10', [B]: '192.168.1.11', [C]: '192.168.1.12' } },
  {
    sightings: { [A]: '192.168.1.10', [B]: '192.168.1.11' },
    // B's absence is a Device Down (C's a Disconnected).
    before: `UPDATE "Devices" SET "devAlertDown" = 1 WHERE "devMac" = '${B}'`,
  },
  { sightings: { [A]: '192.168.1.20' } },
  {
    sightings: { [A]: '192.168.1.20' },
    names: [{ mac: A, name: 'printer', source: 'dhcp', fqdn: 'printer.lan' }],
    // A probe's cycle marks where A was seen; a mark that changes nothing is written as nothing.
    sites: [
      { mac: A, site: 'branch', node: 'probe-1' },
      { mac: B, site: '', node: '' },
    ],
  },
  { sightings: { [B]: '192.168.1.11', [C]: '192.168.1.12' } },
  { sightings: {} },
  { sightings: {} },
  { sightings: { [A]: '192.168.1.20', [C]: '192.168.1.13' } },
];

type Row = Record<string, unknown>;
const tables: [string, string][] = [
  ['Devices', '"devMac"'],
  ['WatchMemory', '"wat_Kind", "wat_Key"'],
  ['NotificationPayloads', '"id"'],
  ['Events', 'rowid'],
  ['Sessions', 'rowid'],
  ['ScanState', '"mac"'],
  ['DeviceHistoryTotals', '"mac"'],
  ['DeviceHistoryBuckets', '"mac", "span", "bucket"'],
];

function sqliteDump(db: Database): Row {
  const dump: Row = {};
  for (const [table, order] of tables) {
    const rowid = order === 'rowid' ? 'rowid AS "rowid", ' : '';
    dump[table] = db
      .prepare<[], Row>(`SELECT ${rowid}* FROM "${table}" ORDER BY ${order}`)
      .all()
      .map(({ devGUID: _guid, ...rest }) => rest);
  }
  return dump;
}

async function postgresDump(pool: PostgresPool): Promise<Row> {
  const dump: Row = {};
  for (const [table, order] of tables) {
    const rows = await pool.query<Row>(
      `SELECT * FROM "${table}" ORDER BY ${order === 'rowid' ? '"rowid"' : order}`,
    );
    dump[table] = rows.map(({ devGUID: _guid, ...rest }) => ({ ...rest }));
  }
  return dump;
}

/**
 * What commits with cycle `i`: the watch remembers (then forgets) a gateway, and the cycle's
 * devices are notified (the plan sees them as the cycle left them).
 */
function extras(i: number, now: Date, seenCount: number): PresenceExtras {
  return {
    memory: [{ kind: 'gateway', key: '192.168.1.1', value: i % 3 === 2 ? undefined : `cycle ${i}` }],
    notify: {
      macs: [A, B, C],
      createdAt: now,
      plan: (devices) =>
        [...devices.values()].some((d) => d.devStatus !== 'On-line')
          ? [
              {
                status: 'pending',
                reason: null,
                events: [...devices].map(
                  ([mac, d]) => ({ mac, status: d.devStatus }) as unknown as NotificationEvent,
                ),
                preview: [],
                channels: ['webhook'],
                dueMs: now.getTime() + seenCount,
              },
            ]
          : [],
    },
  };
}

const sortedPresence = (known: Map<string, KnownDevice>): KnownDevice[] =>
  [...known.values()].sort((x, y) => x.mac.localeCompare(y.mac));

describe('the presence contract on SQLite and PostgreSQL', { skip }, () => {
  let server: PostgresServer;
  let pool: PostgresPool;
  let dir: string;
  let db: Database;

  before(async () => {
    requireAll(postgresMissing());
    server = await startPostgres();
    pool = await openPostgres(server.url);
    dir = mkdtempSync(join(tmpdir(), 'netkeep-presence-contract-'));
    db = openDatabase(join(dir, 'netkeep.db'));
  });
  after(async () => {
    db.close();
    rmSync(dir, { recursive: true, force: true });
    await pool.close();
    await server.stop();
  });

  test('the same cycles leave the same presence, rows and counts', async () => {
    const core = new SqliteDevices(db);
    const liteOutbox = new SqliteOutboxStore(db, core);
    const lite = new SqliteDeviceStore(core, {
      watch: new SqliteWatchStore(db, core, liteOutbox),
      outbox: liteOutbox,
    });
    const pg = new PostgresPresenceStore(pool, new PostgresOutboxStore(pool));
    const start = Date.UTC(2026, 4, 1, 9);
    for (const [i, cycle] of cycles.entries()) {
      const now = new Date(start + i * 300_000);
      const toggleSince = new Date(now.getTime() - 3_600_000);
      const observations = new Map(Object.entries(cycle.sightings).map(([mac, ip]) => [mac, seen(ip)]));
      if (cycle.before !== undefined) {
        db.exec(cycle.before);
        await pool.query(cycle.before);
      }
      const knownLite = await lite.loadPresence(toggleSince);
      const knownPg = await pg.loadPresence(toggleSince);
      assert.deepEqual(sortedPresence(knownPg), sortedPresence(knownLite), `presence before cycle ${i + 1}`);
      const plan = (known: Map<string, KnownDevice>) => ({
        ...planCycle({ known, observations, missesBeforeAbsent: 2, now }),
        names: cycle.names ?? [],
        sites: cycle.sites ?? [],
      });
      await lite.applyPresence(plan(knownLite), extras(i, now, observations.size));
      await pg.applyPresence(plan(knownPg), extras(i, now, observations.size));
      assert.deepEqual(await postgresDump(pool), sqliteDump(db), `rows after cycle ${i + 1}`);
    }
    const {
      Devices: devices = [],
      Events: events = [],
      Sessions: sessions = [],
      WatchMemory: memory = [],
      NotificationPayloads: payloads = [],
    } = sqliteDump(db) as Partial<Record<string, Row[]>>;
    assert.deepEqual(memory, [{ wat_Kind: 'gateway', wat_Key: '192.168.1.1', wat_Value: 'cycle 7' }]);
    assert.ok(payloads.length >= 3, 'notifications were written with the cycles');
    // The cycles did what they were meant to: every kind of row was written.
    assert.equal(devices.length, 3);
    assert.ok(events.some((e) => e.eve_EventType === 'Device Down'));
    assert.ok(events.some((e) => e.eve_EventType === 'IP Changed'));
    assert.ok(sessions.some((s) => s.ses_StillConnected === 0));
    assert.equal(devices.find((d) => d.devMac === A)?.devName, 'printer');
    assert.equal(devices.find((d) => d.devMac === A)?.devSite, 'branch');
    // A probe's read: its site's devices and the MACs it saw, the same on both.
    assert.deepEqual(
      sortedPresence(await pg.loadSitePresence('branch', [C])),
      sortedPresence(await lite.loadSitePresence('branch', [C])),
    );
    assert.deepEqual([...(await pg.loadSitePresence('branch', [C])).keys()].sort(), [A, C].sort());
  });

  test('retention and the clean-up of the scanner memory do the same', async () => {
    const lite = new SqliteDeviceStore(new SqliteDevices(db));
    const pg = new PostgresPresenceStore(pool);
    const before = new Date(Date.UTC(2026, 4, 1, 9, 12));
    for (const limit of [2, 100]) {
      assert.deepEqual(
        await pg.pruneHistory(before, limit),
        await lite.pruneHistory(before, limit),
        `limit ${limit}`,
      );
      assert.deepEqual(await postgresDump(pool), sqliteDump(db));
    }
    const orphan = `INSERT INTO "ScanState" ("mac", "misses") VALUES ('aa:00:00:00:00:99', 1)`;
    db.exec(orphan);
    await pool.query(orphan);
    await lite.pruneScanMemory();
    await pg.pruneScanMemory();
    assert.deepEqual(await postgresDump(pool), sqliteDump(db));
    assert.equal((sqliteDump(db).ScanState as Row[]).length, 3);
  });
});
