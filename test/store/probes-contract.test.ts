/**
 * The probes' contract, run against both stores: the hub (src/probes/hub.ts, with the real state
 * machine and alert outbox) on SQLite and on PostgreSQL, fed the same probes and cycles by the
 * same clock. Each cycle is scoped to its probe's subnets and site, applied once per cycleId and
 * in order, marks devSite and devSyncHubNode, and commits with its bookkeeping and notices in one
 * transaction; after every step the answers and every row (devices, history, scanner memory,
 * probes, cycles, notifications) are the same on both. Then the probe store's own methods (list,
 * token hash, status moves, pruning, delete) are compared the same way.
 */
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import type { Database } from 'better-sqlite3';
import { Outbox } from '../../src/alerts/outbox.js';
import { loadConfig, notifiableEventTypes } from '../../src/config.js';
import { openDatabase } from '../../src/db/connection.js';
import type { PresenceChanges } from '../../src/devices/presence.js';
import type { CycleUpload } from '../../src/probes/cycle.js';
import { ProbeHub, type CycleAnswer } from '../../src/probes/hub.js';
import type { AlertOutboxStore } from '../../src/store/outbox.js';
import { PostgresDeviceStore } from '../../src/store/postgres/devices.js';
import { PostgresOutboxStore } from '../../src/store/postgres/outbox.js';
import { openPostgres, type PostgresPool } from '../../src/store/postgres/pool.js';
import { PostgresPresenceStore } from '../../src/store/postgres/presence.js';
import { PostgresProbeStore } from '../../src/store/postgres/probes.js';
import type { PresenceStore } from '../../src/store/presence.js';
import type { ProbeStore } from '../../src/store/probes.js';
import { sqliteStore } from '../../src/store/sqlite/store.js';
import { postgresMissing, startPostgres, type PostgresServer } from '../helpers/postgres.js';
import { requireAll, skipUnlessCi } from '../helpers/requirements.js';

const skip = skipUnlessCi(postgresMissing(), 'probes contract on PostgreSQL');

const branch = { id: '11111111-1111-4111-8111-111111111111', name: 'branch-probe', site: 'branch' };
const home = { id: '22222222-2222-4222-8222-222222222222', name: 'home-probe', site: 'home' };
const tokenHash = createHash('sha256').update('secret', 'utf8').digest();

const A = 'aa:00:00:00:00:0a'; // branch, 192.168.5.0/24
const B = 'aa:00:00:00:00:0b'; // branch, 192.168.6.0/24
const X = 'bb:00:00:00:00:01'; // home, the same 192.168.5.0/24 as A's (another site's LAN)

type Row = Record<string, unknown>;
const tables: [string, string, readonly string[]][] = [
  ['Devices', '"devMac"', ['devGUID']],
  ['Events', '"rowid"', []],
  ['Sessions', '"rowid"', []],
  ['ScanState', '"mac"', []],
  ['Probes', '"prb_Id"', []],
  ['ProbeCycles', '"pcy_ProbeId", "pcy_CycleId"', []],
  ['NotificationPayloads', '"id"', []],
  // The delivery id is random and a notice is due "now" by the wall clock.
  ['Notifications', '"id"', ['deliveryId', 'nextAttemptAt']],
];

const without = (row: Row, columns: readonly string[]): Row =>
  Object.fromEntries(Object.entries(row).filter(([k]) => !columns.includes(k)));

function sqliteDump(db: Database): Row {
  const dump: Row = {};
  for (const [table, order, skipped] of tables) {
    const rowid = order === '"rowid"' ? 'rowid AS "rowid", ' : '';
    dump[table] = db
      .prepare<[], Row>(`SELECT ${rowid}* FROM "${table}" ORDER BY ${order}`)
      .all()
      .map((r) => without(r, skipped));
  }
  return dump;
}

async function postgresDump(pool: PostgresPool): Promise<Row> {
  const dump: Row = {};
  for (const [table, order, skipped] of tables)
    dump[table] = (await pool.query<Row>(`SELECT * FROM "${table}" ORDER BY ${order}`)).map((r) =>
      without({ ...r }, skipped),
    );
  return dump;
}

interface Side {
  readonly hub: ProbeHub;
  readonly probes: ProbeStore;
  readonly presence: PresenceStore;
}

function hubOn(
  parts: Omit<Side, 'hub'> & {
    outbox: AlertOutboxStore;
    devices: ConstructorParameters<typeof ProbeHub>[0]['devices'];
  },
  now: () => Date,
): Side {
  const config = loadConfig(
    { DATA_DIR: '/nonexistent', API_TOKEN: 'x', SCAN_MISSES_BEFORE_ABSENT: '1', PROBE_OFFLINE_MINUTES: '15' },
    '/nonexistent',
  );
  const quiet = { info: () => undefined, warn: () => undefined, error: () => undefined };
  const hub = new ProbeHub({
    store: parts.probes,
    devices: parts.devices,
    presence: parts.presence,
    config,
    logger: quiet,
    notifications: new Outbox(parts.outbox, {
      channels: ['webhook'],
      enabledTypes: new Set(notifiableEventTypes),
    }),
    now,
  });
  return { hub, probes: parts.probes, presence: parts.presence };
}

/** An answer, or the error's code: what a route would say. */
async function outcome(run: () => Promise<unknown>): Promise<unknown> {
  try {
    return await run();
  } catch (err) {
    return { error: (err as { code?: string }).code ?? (err as Error).message };
  }
}

describe('the probes contract on SQLite and PostgreSQL', { skip }, () => {
  let server: PostgresServer;
  let pool: PostgresPool;
  let dir: string;
  let db: Database;
  let lite: Side;
  let pg: Side;
  let clock = Date.UTC(2026, 4, 1, 9);
  const now = () => new Date(clock);

  before(async () => {
    requireAll(postgresMissing());
    server = await startPostgres();
    pool = await openPostgres(server.url);
    dir = mkdtempSync(join(tmpdir(), 'netkeep-probes-contract-'));
    db = openDatabase(join(dir, 'netkeep.db'));
    const sqlite = sqliteStore(db);
    lite = hubOn({ ...sqlite, devices: sqlite.devices }, now);
    const outbox = new PostgresOutboxStore(pool);
    const probes = new PostgresProbeStore(pool, outbox);
    pg = hubOn(
      {
        probes,
        outbox,
        presence: new PostgresPresenceStore(pool, outbox, probes),
        devices: new PostgresDeviceStore(pool),
      },
      now,
    );
  });
  after(async () => {
    db.close();
    rmSync(dir, { recursive: true, force: true });
    await pool.close();
    await server.stop();
  });

  /** Runs `step` on both sides, compares the answers and then every row. */
  async function both(label: string, step: (side: Side) => Promise<unknown>): Promise<unknown> {
    const answerLite = await outcome(() => step(lite));
    const answerPg = await outcome(() => step(pg));
    assert.deepEqual(answerPg, answerLite, `${label}: the answers`);
    assert.deepEqual(await postgresDump(pool), sqliteDump(db), `${label}: the rows`);
    return answerLite;
  }

  const cycle = (
    cycleId: string,
    subnets: string[],
    sightings: { mac: string; ip: string; name?: string }[],
    extra: Partial<CycleUpload> = {},
  ): CycleUpload => ({
    cycleId,
    startedAt: new Date(clock - 2000).toISOString(),
    finishedAt: new Date(clock - 1000).toISOString(),
    subnets,
    sightings: sightings.map((s) =>
      s.name === undefined ? s : { mac: s.mac, ip: s.ip, name: s.name, nameSource: 'dhcp' as const },
    ),
    ...extra,
  });
  const apply = (probe: typeof branch, upload: CycleUpload) => async (side: Side) => {
    const record = await side.probes.get(probe.id);
    assert.ok(record, `probe ${probe.name} exists`);
    return side.hub.applyCycle(record, upload);
  };
  const id = (n: number) => `00000000-0000-4000-8000-${String(n).padStart(12, '0')}`;

  test("cycles scoped to the probe's subnets and site, once per cycleId, in order", async () => {
    for (const probe of [branch, home])
      assert.equal(
        await both(`create ${probe.name}`, (side) =>
          side.probes.create({ ...probe, tokenHash, createdAt: now() }),
        ),
        true,
      );
    assert.equal(
      await both('a name taken', (side) =>
        side.probes.create({ ...branch, id: id(99), tokenHash, createdAt: now() }),
      ),
      false,
    );

    clock += 60_000;
    const first = (await both(
      'the branch probe sees A and B',
      apply(
        branch,
        cycle(
          id(1),
          ['192.168.5.0/24', '192.168.6.0/24'],
          [
            { mac: A, ip: '192.168.5.10', name: 'printer' },
            { mac: B, ip: '192.168.6.20' },
          ],
        ),
      ),
    )) as CycleAnswer;
    assert.deepEqual(first, { applied: true, repeated: false, devicesSeen: 2, newDevices: 2 });
    await both(
      'the home probe sees X, on a LAN numbered like the branch',
      apply(home, cycle(id(2), ['192.168.5.0/24'], [{ mac: X, ip: '192.168.5.10' }])),
    );

    clock += 60_000;
    // Only 192.168.5.0/24 scanned, and nothing answered: A is judged absent, B (another subnet)
    // and X (another site) are not looked at.
    await both(
      'the branch probe scans one subnet and sees nobody',
      apply(branch, cycle(id(3), ['192.168.5.0/24'], [])),
    );
    assert.equal(
      await both(
        'a repeated cycleId',
        apply(branch, cycle(id(3), ['192.168.5.0/24'], [{ mac: A, ip: '192.168.5.10' }])),
      ).then((a) => (a as CycleAnswer).repeated),
      true,
    );
    await both(
      'a cycle that started before the last applied one',
      apply(branch, {
        ...cycle(id(4), ['192.168.5.0/24'], []),
        startedAt: new Date(clock - 120_000).toISOString(),
      }),
    );
    clock += 60_000;
    await both(
      'a cycle that failed at the probe',
      apply(branch, cycle(id(5), ['192.168.5.0/24'], [], { errors: ['arp-scan: exit 1'] })),
    );

    const rows = sqliteDump(db) as Record<string, Row[]>;
    const device = (mac: string) => rows.Devices?.find((d) => d.devMac === mac);
    assert.deepEqual(
      [A, B, X].map((mac) => [
        device(mac)?.devSite,
        device(mac)?.devSyncHubNode,
        device(mac)?.devPresentLastScan,
      ]),
      [
        ['branch', 'branch-probe', 0],
        ['branch', 'branch-probe', 1],
        ['home', 'home-probe', 1],
      ],
      'A absent; B outside the scanned subnet and X of another site unchanged',
    );
    assert.equal(device(A)?.devName, 'printer');
    assert.equal(rows.ProbeCycles?.length, 4, 'four cycles recorded (the repeat and the refused one not)');
    assert.ok((rows.Events ?? []).some((e) => e.eve_MAC === A && e.eve_EventType === 'Disconnected'));

    // Silence: the offline watch marks the probes offline with one notice each, and the next
    // cycle brings the branch back with a Probe Online notice, in the cycle's transaction.
    clock += 16 * 60_000;
    assert.equal(await both('the offline watch', (side) => side.hub.checkOffline()), 2);
    assert.equal(await both('the offline watch again', (side) => side.hub.checkOffline()), 0);
    await both(
      'the branch reports again',
      apply(
        branch,
        cycle(
          id(6),
          ['192.168.5.0/24', '192.168.6.0/24'],
          [
            { mac: A, ip: '192.168.5.11' },
            { mac: B, ip: '192.168.6.20' },
          ],
        ),
      ),
    );
    const payloads = (sqliteDump(db).NotificationPayloads as Row[]).map((p) => String(p.events));
    assert.ok(payloads.some((p) => p.includes('"Probe Offline"')));
    assert.ok(payloads.some((p) => p.includes('"Probe Online"')));
  });

  test('a cycleId stored already fails the whole cycle: nothing of it is written', async () => {
    const plan: PresenceChanges = {
      newDevices: [],
      updates: [
        {
          mac: B,
          presentLastScan: 0,
          lastIP: '192.168.6.20',
          lastConnection: null,
          vendor: null,
          primaryIPv6: null,
        },
      ],
      events: [],
      openSessions: [],
      closeSessions: [],
      scanState: [],
    };
    const again = {
      probeId: branch.id,
      cycleId: id(6),
      startedAt: now(),
      appliedAt: now(),
      subnets: [],
      spooledCycles: 0,
      droppedCycles: 0,
    };
    const before = sqliteDump(db);
    for (const side of [lite, pg])
      await assert.rejects(
        side.presence.applyPresence(plan, { probeCycle: again }),
        /duplicate key|UNIQUE constraint/,
      );
    assert.deepEqual(sqliteDump(db), before);
    assert.deepEqual(await postgresDump(pool), before);
  });

  test("the probe store's own methods answer alike", async () => {
    await both('list', (side) => side.probes.list());
    await both('get', (side) => side.probes.get(branch.id));
    await both('a missing probe', (side) => side.probes.get(id(98)));
    assert.deepEqual(await pg.probes.tokenHash(branch.id), tokenHash);
    await both('token hashes', async (side) => [
      await side.probes.tokenHash(home.id),
      await side.probes.tokenHash(id(98)),
    ]);
    await both('hasCycle', async (side) => [
      await side.probes.hasCycle(branch.id, id(1)),
      await side.probes.hasCycle(home.id, id(1)),
    ]);
    await both('a status move from the wrong status', (side) =>
      side.probes.setStatus(branch.id, 'never', 'offline'),
    );
    await both('a status move', (side) => side.probes.setStatus(home.id, 'offline', 'online'));
    // One probe's old cycleIds at a time: the branch's, then the home's (left by the first).
    const cutoff = new Date(clock - 10 * 60_000);
    const branchPruned = Number(
      await both("prune the branch's old cycles", (side) => side.probes.pruneCycles(branch.id, cutoff)),
    );
    const homePruned = Number(
      await both("prune the home's old cycles", (side) => side.probes.pruneCycles(home.id, cutoff)),
    );
    assert.ok(branchPruned > 0 && homePruned > 0, `${branchPruned} and ${homePruned}`);
    assert.equal(branchPruned + homePruned, 4);
    assert.equal(await both('delete', (side) => side.probes.delete(home.id)), true);
    assert.equal(await both('delete again', (side) => side.probes.delete(home.id)), false);
  });
});
