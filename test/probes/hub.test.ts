/**
 * The hub's probe API in process (DESIGN 16): probe admin (token shown once, hashed at rest,
 * revoked at once, refused everywhere but uploads), cycles applied with the scanner's state machine
 * scoped to the probe's subnets and site, once per cycleId and in order, every bad upload a clear
 * 4xx that changes nothing, the offline watch (one Probe Offline notice, no Down), the metrics.
 * On both stores (test/helpers/stores.ts): the hub on SQLite and on PostgreSQL, its tables read
 * directly (store-tables.ts) to show that a refused upload changed no row.
 */
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { ConfigError, loadConfig } from '../../src/config.js';
import { openDatabase } from '../../src/db/connection.js';
import { sqliteStore } from '../../src/store/sqlite/store.js';
import { ProbeHub } from '../../src/probes/hub.js';
import type { InProcessServer } from '../helpers/inject.js';
import { startReceiver, type Receiver } from '../helpers/receiver.js';
import { openTables, type StoreTables } from '../helpers/store-tables.js';
import { onEachStore } from '../helpers/stores.js';

/** What the parents' network holds in the later tests (their device and the laptop). */
const parentsDevices = [
  { mac: 'bb:00:00:00:02:01', ip: '10.1.0.50' },
  { mac: 'cc:00:00:00:03:01', ip: '10.1.0.78' },
];

interface Sighting {
  mac: string;
  ip: string;
  name?: string;
  nameSource?: string;
  vendor?: string;
}

let clock = Date.now();
const at = (offsetMs = 0): string => new Date(clock + offsetMs).toISOString();

function cycle(subnets: string[], sightings: Sighting[], extra: Record<string, unknown> = {}) {
  return {
    cycleId: randomUUID(),
    startedAt: at(-2000),
    finishedAt: at(-1000),
    subnets,
    sightings,
    ...extra,
  };
}

onEachStore('probes at the hub', (_store, start) => {
  let hub: InProcessServer;
  let receiver: Receiver;
  let db: StoreTables;
  let a: { id: string; token: string };
  let b: { id: string; token: string };

  const upload = (token: string, body: unknown) => hub.request('POST', '/probes/cycles', { token, body });
  const count = async (sql: string, ...params: unknown[]): Promise<number> =>
    Number(await db.value(sql, params));
  const device = async (mac: string) =>
    (
      await db.all(
        'SELECT "devSite", "devSyncHubNode", "devPresentLastScan", "devName" FROM "Devices" WHERE "devMac" = ?',
        [mac],
      )
    )[0] as
      { devSite: string; devSyncHubNode: string; devPresentLastScan: number; devName: string } | undefined;
  /** Everything a refused upload must leave as it was. */
  const snapshot = async () => ({
    devices: await count('SELECT COUNT(*) AS n FROM "Devices"'),
    events: await count('SELECT COUNT(*) AS n FROM "Events"'),
    cycles: await count('SELECT COUNT(*) AS n FROM "ProbeCycles"'),
    probes: JSON.stringify(await db.all('SELECT * FROM "Probes" ORDER BY "prb_Id"')),
  });

  /** The probe notices of a type the webhook received, waiting for the first. */
  const notices = async (type: string): Promise<string[][]> => {
    for (let attempt = 0; attempt < 200; attempt++) {
      const found = receiver.requests
        .flatMap(
          (r) => (JSON.parse(r.body) as { events: { type: string; device: { devName: string } }[] }).events,
        )
        .filter((e) => e.type === type)
        .map((e) => [e.type, e.device.devName]);
      if (found.length > 0) return found;
      await new Promise((resolve) => setTimeout(resolve, 25));
    }
    return [];
  };

  before(async () => {
    receiver = await startReceiver();
    hub = await start(
      { NOTIFY_WEBHOOK_URL: receiver.url('/hook'), PROBE_OFFLINE_MINUTES: '15' },
      { testOnlyProbeClock: () => new Date(clock), testOnlyProbeCheckMs: 3_600_000 },
    );
    db = await openTables(hub);
  });
  after(async () => {
    await db.close();
    await hub.stop();
    await receiver.close();
  });

  test('POST /probes gives the token once; GET /probes never shows it; names are unique', async () => {
    const made = await hub.request('POST', '/probes', { body: { name: 'office', site: 'Office' } });
    assert.equal(made.status, 200, made.text);
    a = { id: String(made.json.id), token: String(made.json.token) };
    assert.match(a.token, /^[0-9a-f-]{36}\.[A-Za-z0-9_-]{43}$/);
    const other = await hub.request('POST', '/probes', { body: { name: 'parents', site: 'Parents' } });
    b = { id: String(other.json.id), token: String(other.json.token) };
    const list = await hub.request('GET', '/probes');
    assert.equal(list.status, 200);
    assert.ok(!list.text.includes(a.token.split('.')[1] ?? 'x'), 'the token is not listed');
    const probes = list.json.probes as { name: string; status: string; site: string }[];
    assert.deepEqual(
      probes.map((p) => [p.name, p.site, p.status]),
      [
        ['office', 'Office', 'never'],
        ['parents', 'Parents', 'never'],
      ],
    );
    // Hashed at rest: the secret is nowhere in the database file's rows.
    const [stored] = (await db.all('SELECT "prb_TokenHash" AS h FROM "Probes" WHERE "prb_Id" = ?', [
      a.id,
    ])) as {
      h: Buffer;
    }[];
    assert.ok(stored);
    assert.equal(stored.h.length, 32);
    assert.ok(!stored.h.toString('utf8').includes(a.token.split('.')[1] ?? 'x'));
    const again = await hub.request('POST', '/probes', { body: { name: 'office', site: 'Elsewhere' } });
    assert.equal(again.status, 409);
    assert.equal(again.json.code, 'PROBE_NAME_TAKEN');
    const bad = await hub.request('POST', '/probes', { body: { name: '', site: 'x' } });
    assert.equal(bad.status, 400);
  });

  test('a probe token is refused everywhere but uploads; the API token is refused on uploads', async () => {
    for (const [method, path] of [
      ['GET', '/devices'],
      ['GET', '/probes'],
      ['POST', '/probes'],
      ['GET', '/metrics'],
      ['GET', '/settings'],
      ['DELETE', `/probes/${a.id}`],
    ] as const) {
      const res = await hub.request(method, path, {
        token: a.token,
        ...(method === 'POST' ? { body: { name: 'x', site: 'y' } } : {}),
      });
      assert.equal(res.status, 403, `${method} ${path}`);
    }
    const admin = await upload(hub.token, cycle(['10.1.0.0/24'], []));
    assert.equal(admin.status, 403);
    assert.equal(admin.json.code, 'PROBE_TOKEN_REQUIRED');
    const none = await hub.request('POST', '/probes/cycles', {
      token: null,
      body: cycle(['10.1.0.0/24'], []),
    });
    assert.equal(none.status, 403);
    // A token of the right shape for a real probe id, with another secret.
    const forged = `${a.id}.${'A'.repeat(43)}`;
    assert.equal((await upload(forged, cycle(['10.1.0.0/24'], []))).status, 403);
  });

  test('a cycle makes devices of the probe site; a repeat changes nothing; another probe id is refused', async () => {
    const first = cycle(
      ['10.1.0.0/24'],
      [
        { mac: 'AA-00-00-00-01-01', ip: '10.1.0.11', name: 'printer', nameSource: 'mdns', vendor: 'Acme' },
        { mac: 'aa:00:00:00:01:02', ip: '10.1.0.12' },
      ],
    );
    const res = await upload(a.token, first);
    assert.equal(res.status, 200, res.text);
    assert.equal(res.json.applied, true);
    assert.equal(res.json.newDevices, 2);
    assert.deepEqual(await device('aa:00:00:00:01:01'), {
      devSite: 'Office',
      devSyncHubNode: 'office',
      devPresentLastScan: 1,
      devName: 'printer',
    });
    const before = await snapshot();
    const repeat = await upload(a.token, first);
    assert.equal(repeat.status, 200);
    assert.equal(repeat.json.repeated, true);
    assert.deepEqual(await snapshot(), before, 'a repeated cycleId changes nothing');
    const foreign = await upload(a.token, { ...cycle(['10.1.0.0/24'], []), probeId: b.id });
    assert.equal(foreign.status, 403);
    assert.equal(foreign.json.code, 'PROBE_MISMATCH');
    assert.deepEqual(await snapshot(), before);
    const list = (await hub.request('GET', '/probes')).json.probes as {
      name: string;
      status: string;
      subnets: string[];
    }[];
    assert.deepEqual(list.find((p) => p.name === 'office')?.subnets, ['10.1.0.0/24']);
    assert.equal(list.find((p) => p.name === 'office')?.status, 'online');
  });

  test("scope: a probe judges its own site's devices only, even on the same subnet", async () => {
    clock += 60_000;
    // The parents' network uses the same range; its device must not be judged by the office probe.
    const parents = await upload(
      b.token,
      cycle(['10.1.0.0/24'], [{ mac: 'bb:00:00:00:02:01', ip: '10.1.0.50' }]),
    );
    assert.equal(parents.status, 200, parents.text);
    clock += 60_000;
    const office = await upload(
      a.token,
      cycle(['10.1.0.0/24'], [{ mac: 'aa:00:00:00:01:01', ip: '10.1.0.11' }]),
    );
    assert.equal(office.status, 200, office.text);
    assert.equal((await device('aa:00:00:00:01:02'))?.devPresentLastScan, 0, 'missed at its own site');
    assert.equal(
      (await device('bb:00:00:00:02:01'))?.devPresentLastScan,
      1,
      "the parents' device is not the office's to judge",
    );
    assert.equal(
      await count(
        `SELECT COUNT(*) AS n FROM "Events" WHERE "eve_MAC" = 'bb:00:00:00:02:01' AND "eve_EventType" != 'New Device'`,
      ),
      0,
    );
  });

  test('a laptop seen by both probes belongs to the site that saw it last', async () => {
    clock += 60_000;
    assert.equal(
      (await upload(a.token, cycle(['10.1.0.0/24'], [{ mac: 'cc:00:00:00:03:01', ip: '10.1.0.77' }]))).status,
      200,
    );
    assert.equal((await device('cc:00:00:00:03:01'))?.devSite, 'Office');
    clock += 60_000;
    assert.equal(
      (await upload(b.token, cycle(['10.1.0.0/24'], [{ mac: 'cc:00:00:00:03:01', ip: '10.1.0.78' }]))).status,
      200,
    );
    assert.deepEqual(
      [(await device('cc:00:00:00:03:01'))?.devSite, (await device('cc:00:00:00:03:01'))?.devSyncHubNode],
      ['Parents', 'parents'],
    );
    clock += 60_000;
    // The office no longer sees it: not its device any more, so it is not marked gone.
    assert.equal(
      (await upload(a.token, cycle(['10.1.0.0/24'], [{ mac: 'aa:00:00:00:01:01', ip: '10.1.0.11' }]))).status,
      200,
    );
    assert.equal((await device('cc:00:00:00:03:01'))?.devPresentLastScan, 1);
    assert.equal(
      await count(
        `SELECT COUNT(*) AS n FROM "Events" WHERE "eve_MAC" = 'cc:00:00:00:03:01' AND "eve_EventType" = 'New Device'`,
      ),
      1,
    );
  });

  test('bad uploads: each a clear 4xx that changes nothing', async () => {
    clock += 60_000;
    const before = await snapshot();
    const many = Array.from({ length: 100_000 }, (_, i) => ({
      mac: `02:00:00:${((i >> 16) & 255).toString(16).padStart(2, '0')}:${((i >> 8) & 255).toString(16).padStart(2, '0')}:${(i & 255).toString(16).padStart(2, '0')}`,
      ip: '10.1.0.1',
    }));
    const cases: [string, unknown, number, string][] = [
      ['100,000 sightings', cycle(['10.1.0.0/24'], many), 400, 'VALIDATION_FAILED'],
      [
        'a MAC that is not one',
        cycle(['10.1.0.0/24'], [{ mac: 'zz:00:00:00:00:01', ip: '10.1.0.5' }]),
        400,
        'INVALID_MAC',
      ],
      [
        'a MAC with a shell',
        cycle(['10.1.0.0/24'], [{ mac: '$(reboot)', ip: '10.1.0.5' }]),
        400,
        'INVALID_MAC',
      ],
      [
        'an address outside the subnets',
        cycle(['10.1.0.0/24'], [{ mac: 'aa:00:00:00:09:01', ip: '10.9.0.5' }]),
        400,
        'INVALID_SIGHTING',
      ],
      ['a subnet that is not CIDR', cycle(['10.1.0.0'], []), 400, 'INVALID_SUBNET'],
      ['a subnet too large', cycle(['10.0.0.0/8'], []), 400, 'INVALID_SUBNET'],
      [
        'finished in the future',
        cycle(['10.1.0.0/24'], [], { finishedAt: at(3_600_000) }),
        400,
        'CYCLE_TIME_OUT_OF_RANGE',
      ],
      [
        'started long ago',
        cycle(['10.1.0.0/24'], [], { startedAt: '2001-01-01T00:00:00Z' }),
        400,
        'CYCLE_TIME_OUT_OF_RANGE',
      ],
      [
        'finished before it started',
        cycle(['10.1.0.0/24'], [], { startedAt: at(-1000), finishedAt: at(-5000) }),
        400,
        'CYCLE_TIME_OUT_OF_RANGE',
      ],
      ['not a UUID', { ...cycle(['10.1.0.0/24'], []), cycleId: 'abc' }, 400, 'VALIDATION_FAILED'],
      ['an unknown field', { ...cycle(['10.1.0.0/24'], []), devices: [] }, 400, 'VALIDATION_FAILED'],
      [
        'out of order',
        cycle(['10.1.0.0/24'], [], { startedAt: at(-600_000), finishedAt: at(-590_000) }),
        409,
        'CYCLE_OUT_OF_ORDER',
      ],
    ];
    // Past the route's bounded body limit (16 MiB): 413 before anything is parsed.
    const huge = JSON.stringify(cycle(['10.1.0.0/24'], [], { errors: ['x'.repeat(17 * 1024 * 1024)] }));
    const tooLarge = await hub.request('POST', '/probes/cycles', { token: a.token, rawBody: huge });
    assert.equal(tooLarge.status, 413);
    assert.equal(tooLarge.json.code, 'PAYLOAD_TOO_LARGE');
    assert.deepEqual(await snapshot(), before);
    for (const [what, body, status, code] of cases) {
      const res = await upload(a.token, body);
      assert.equal(res.status, status, `${what}: ${res.text.slice(0, 300)}`);
      assert.equal(res.json.code, code, what);
      assert.deepEqual(await snapshot(), before, `${what} changed nothing`);
    }
  });

  test('silent past PROBE_OFFLINE_MINUTES: offline, one Probe Offline notice, no device Down; Online when back', async () => {
    const present = await count(
      `SELECT COUNT(*) AS n FROM "Devices" WHERE "devSite" = 'Office' AND "devPresentLastScan" = 1`,
    );
    assert.ok(present > 0);
    const absences = `SELECT COUNT(*) AS n FROM "Events" WHERE "eve_EventType" IN ('Device Down', 'Disconnected')`;
    const absent = await count(absences);
    // Keep the parents' probe reporting; the office goes silent.
    clock += 16 * 60_000;
    const parents = parentsDevices;
    assert.equal((await upload(b.token, cycle(['10.1.0.0/24'], parents))).status, 200);
    assert.equal(await hub.server.probes.checkOffline(), 1);
    assert.equal(await hub.server.probes.checkOffline(), 0, 'one notice, not one per check');
    const list = (await hub.request('GET', '/probes')).json.probes as { name: string; status: string }[];
    assert.deepEqual(
      list.map((p) => [p.name, p.status]),
      [
        ['office', 'offline'],
        ['parents', 'online'],
      ],
    );
    assert.equal(
      await count(
        `SELECT COUNT(*) AS n FROM "Devices" WHERE "devSite" = 'Office' AND "devPresentLastScan" = 1`,
      ),
      present,
    );
    assert.equal(await count(absences), absent, 'no Disconnected, no Device Down: nobody looked');
    assert.deepEqual(await notices('Probe Offline'), [['Probe Offline', 'office']]);
    clock += 60_000;
    const back = [{ mac: 'aa:00:00:00:01:01', ip: '10.1.0.11' }];
    assert.equal((await upload(a.token, cycle(['10.1.0.0/24'], back))).status, 200);
    assert.deepEqual(await notices('Probe Online'), [['Probe Online', 'office']]);
    assert.deepEqual(await notices('Probe Offline'), [['Probe Offline', 'office']], 'still one');
    const metrics = await hub.request('GET', '/metrics');
    assert.match(metrics.text, /netkeep_probe_up\{probe="office",site="Office"\} 1/);
    assert.match(metrics.text, /netkeep_probe_cycles_total\{probe="office",outcome="applied"\} \d+/);
    assert.match(metrics.text, /netkeep_probe_cycles_total\{probe="office",outcome="repeated"\} 1/);
  });

  test('a device seen by another site under one of its aliases: that site has it, no new device', async () => {
    clock += 60_000;
    // aa:..:01:02 is an office device; merged into aa:..:01:01 it becomes one of its MACs.
    const merged = await hub.request('POST', '/device/aa:00:00:00:01:01/merge', {
      body: { from: 'aa:00:00:00:01:02' },
    });
    assert.equal(merged.status, 200, merged.text);
    const devices = await count('SELECT COUNT(*) AS n FROM "Devices"');
    const seen = [{ mac: 'aa:00:00:00:01:02', ip: '10.1.0.60' }, ...parentsDevices];
    const res = await upload(b.token, cycle(['10.1.0.0/24'], seen));
    assert.equal(res.status, 200, res.text);
    assert.equal(
      await count('SELECT COUNT(*) AS n FROM "Devices"'),
      devices,
      'no new device for a known alias',
    );
    assert.deepEqual(
      [(await device('aa:00:00:00:01:01'))?.devSite, (await device('aa:00:00:00:01:01'))?.devPresentLastScan],
      ['Parents', 1],
    );
  });

  test('DELETE /probes/<id> revokes the token at once; its devices stay', async () => {
    const gone = await hub.request('DELETE', `/probes/${b.id}`);
    assert.equal(gone.status, 200);
    const refused = await upload(b.token, cycle(['10.1.0.0/24'], []));
    assert.equal(refused.status, 403);
    assert.equal(refused.json.code, 'PROBE_TOKEN_REQUIRED');
    assert.equal((await hub.request('DELETE', `/probes/${b.id}`)).status, 404);
    assert.ok(await device('bb:00:00:00:02:01'));
  });
});

describe('probe mode configuration', () => {
  test('PROBE_HUB_URL and PROBE_TOKEN go together, and the token must be a probe token', () => {
    const base = { DATA_DIR: '/tmp/netkeep-probe-config', API_TOKEN: 'x' };
    const token = `${randomUUID()}.${'a'.repeat(43)}`;
    assert.throws(
      () => loadConfig({ ...base, PROBE_HUB_URL: 'http://127.0.0.1:1' }, '/nonexistent'),
      ConfigError,
    );
    assert.throws(() => loadConfig({ ...base, PROBE_TOKEN: token }, '/nonexistent'), ConfigError);
    assert.throws(
      () =>
        loadConfig(
          { ...base, PROBE_HUB_URL: 'http://127.0.0.1:1', PROBE_TOKEN: 'not-a-token' },
          '/nonexistent',
        ),
      /PROBE_TOKEN is not a probe token/,
    );
    assert.throws(
      () => loadConfig({ ...base, PROBE_HUB_URL: 'ftp://hub', PROBE_TOKEN: token }, '/nonexistent'),
      ConfigError,
    );
    const config = loadConfig(
      { ...base, PROBE_HUB_URL: 'http://127.0.0.1:1', PROBE_TOKEN: token },
      '/nonexistent',
    );
    assert.equal(config.PROBE_SPOOL_MAX, 10_000);
    assert.equal(config.SITE_NAME, 'local');
    assert.throws(() => loadConfig({ ...base, SITE_NAME: 'a/b' }, '/nonexistent'), ConfigError);
  });
});

describe('the offline watch after a hub outage', () => {
  test('silence is counted from the hub start at the earliest: the probes get time to deliver', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'netkeep-probe-watch-'));
    const db = openDatabase(join(dir, 'netkeep.db'));
    try {
      const sqlite = sqliteStore(db);
      const store = sqlite.probes;
      let now = Date.parse('2026-06-01T12:00:00Z');
      const id = randomUUID();
      await store.create({
        id,
        name: 'p',
        site: 's',
        tokenHash: Buffer.alloc(32),
        createdAt: new Date(now - 7_200_000),
      });
      // Its last cycle an hour before the hub started again.
      store.recordCycleNow({
        probeId: id,
        cycleId: randomUUID(),
        startedAt: new Date(now - 3_600_000),
        appliedAt: new Date(now - 3_600_000),
        subnets: [],
        spooledCycles: 0,
        droppedCycles: 0,
      });
      const config = loadConfig({ DATA_DIR: dir, API_TOKEN: 'x' }, '/nonexistent');
      const quiet = { info: () => undefined, warn: () => undefined, error: () => undefined };
      const watch = new ProbeHub({
        store,
        devices: sqlite.devices,
        presence: sqlite.presence,
        config,
        logger: quiet,
        now: () => new Date(now),
      });
      assert.equal(await watch.checkOffline(), 0, 'not offline right after the hub started');
      now += 14 * 60_000;
      assert.equal(await watch.checkOffline(), 0);
      now += 2 * 60_000;
      assert.equal(
        await watch.checkOffline(),
        1,
        'offline once PROBE_OFFLINE_MINUTES passed with the hub up',
      );
    } finally {
      db.close();
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
