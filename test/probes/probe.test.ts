/**
 * Probe mode with real processes on loopback: a hub (a netkeep server) and a probe (netkeep with
 * PROBE_HUB_URL and PROBE_TOKEN) scanning with the stand-in arp-scan (test/helpers/fake-arp-scan.ts:
 * two sets of hosts, one present per cycle, so every cycle changes something). The probe keeps no
 * inventory and serves only /health and GET /nettools/scan (no OpenAPI document, /docs or sign-in);
 * its cycles reach the hub with its site;
 * a hub outage spools them on disk and they arrive later, in order, once each; a kill -9 of the
 * probe in the middle of an upload loses nothing and applies nothing twice. And the spool itself:
 * atomic files, oldest first, PROBE_SPOOL_MAX with the dropped count.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type IncomingMessage, type Server } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import Database from 'better-sqlite3';
import { Spool } from '../../src/probes/spool.js';
import { fakeArpScanEnv, writeFakeArpScan } from '../helpers/fake-arp-scan.js';
import { eventually } from '../helpers/processes.js';
import { TestServer } from '../helpers/server.js';

describe('the spool', () => {
  test('oldest first, survives a new instance, bounded with the dropped count, no half files', () => {
    const dir = mkdtempSync(join(tmpdir(), 'netkeep-spool-'));
    try {
      const spool = new Spool(dir, 3);
      for (const n of [1, 2, 3]) assert.equal(spool.add(JSON.stringify({ n })), 0);
      assert.equal(spool.add(JSON.stringify({ n: 4 })), 1);
      assert.equal(spool.dropped, 1);
      // A crash during a write leaves a temporary file: not a cycle, removed at start.
      writeFileSync(join(dir, 'spool', '.000000000009.json.tmp'), '{"n": 9');
      const again = new Spool(dir, 3);
      assert.equal(again.size, 3);
      assert.ok(!readdirSync(join(dir, 'spool')).some((name) => name.endsWith('.tmp')));
      const order: number[] = [];
      for (let next = again.oldest(); next !== undefined; next = again.oldest()) {
        order.push((JSON.parse(next.body) as { n: number }).n);
        again.remove(next.seq);
      }
      assert.deepEqual(order, [2, 3, 4]);
      again.reportedDropped(1);
      assert.equal(again.dropped, 0);
      assert.equal(again.add('{"n":5}'), 0);
      assert.equal((JSON.parse(again.oldest()?.body ?? '{}') as { n: number }).n, 5, 'numbering goes on');
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe('probe mode, real processes on loopback', () => {
  let hub: TestServer;
  let probe: TestServer;
  let toolDir: string;
  let probeData: string;
  let hubData: string;
  let token: string;
  let probeEnv: Record<string, string>;

  const hubDb = <T>(read: (db: Database.Database) => T): T => {
    const db = new Database(join(hubData, 'netkeep.db'), { readonly: true });
    try {
      return read(db);
    } finally {
      db.close();
    }
  };
  const appliedCycles = (): number =>
    hubDb((db) => (db.prepare('SELECT COUNT(*) AS n FROM ProbeCycles').get() as { n: number }).n);
  const probeStatus = async () =>
    (await probe.request('GET', '/nettools/scan')).json as {
      lastCycle: { finishedAt: string } | null;
      probe: { spooledCycles: number; lastError: string | null };
    };
  const cyclesMade = (server: TestServer): number =>
    server.logs.filter((l) => l.includes('"event":"probe-cycle"')).length;

  before(async () => {
    toolDir = mkdtempSync(join(tmpdir(), 'netkeep-probe-tools-'));
    probeData = mkdtempSync(join(tmpdir(), 'netkeep-probe-'));
    hubData = mkdtempSync(join(tmpdir(), 'netkeep-hub-'));
    writeFakeArpScan(toolDir, 5);
    hub = await TestServer.start({ dataDir: hubData });
    const made = await hub.request('POST', '/probes', { body: { name: 'lab', site: 'Lab' } });
    token = String(made.json.token);
    probeEnv = {
      ...fakeArpScanEnv(toolDir),
      SCAN_INTERVAL: '5',
      SCAN_IPV6: 'off',
      PROBE_HUB_URL: hub.url,
      PROBE_TOKEN: token,
    };
    probe = await TestServer.start({ dataDir: probeData, env: probeEnv });
  });
  after(async () => {
    await probe.stop();
    await hub.stop();
    for (const dir of [toolDir, probeData, hubData]) rmSync(dir, { recursive: true, force: true });
  });

  test("the probe's cycles reach the hub with its site; the probe keeps no inventory", async () => {
    assert.ok(await eventually(() => appliedCycles() >= 1, 200, 50), 'a cycle arrives');
    const devices = hubDb((db) => db.prepare('SELECT devSite, devSyncHubNode FROM Devices').all());
    assert.equal(devices.length, 5);
    assert.deepEqual(
      new Set(devices.map((d) => JSON.stringify(d))),
      new Set([JSON.stringify({ devSite: 'Lab', devSyncHubNode: 'lab' })]),
    );
    assert.equal((await probe.request('GET', '/health')).status, 200);
    assert.equal((await probe.request('GET', '/nettools/scan')).status, 200);
    for (const path of ['/devices', '/probes', '/metrics', '/device/02:00:00:00:00:01'])
      assert.equal((await probe.request('GET', path)).status, 404, path);
    assert.deepEqual(readdirSync(probeData), ['spool'], 'no database on a probe: only its spool');
  });

  test('a minimal surface: /health and GET /nettools/scan; no OpenAPI, no /docs, no sign-in', async () => {
    assert.equal((await probe.request('GET', '/health', { token: null })).status, 200);
    assert.equal((await probe.request('HEAD', '/health', { token: null })).status, 200);
    assert.equal((await probe.request('GET', '/nettools/scan', { token: null })).status, 403);
    assert.equal((await probe.request('GET', '/nettools/scan')).status, 200);
    // What a full netkeep serves to anyone (a sign-in, the API's description): nothing here, with
    // the probe's own token or without one.
    const origin = { Origin: probe.url };
    for (const token of [undefined, null])
      for (const [method, path, body] of [
        ['GET', '/openapi.json'],
        ['GET', '/docs'],
        ['GET', '/docs/'],
        ['GET', '/docs/json'],
        ['GET', '/docs/static/index.html'],
        ['POST', '/session', { token: probe.token }],
        ['DELETE', '/session'],
        ['GET', '/'],
        ['GET', '/ui/'],
      ] as const) {
        const res = await probe.request(method, path, { token, body, headers: origin });
        assert.equal(res.status, 404, `${method} ${path} ${token === null ? 'without' : 'with'} a token`);
        assert.equal(res.headers.get('set-cookie'), null, `${method} ${path}: no session`);
      }
  });

  test('a hub outage: cycles are spooled on disk, then delivered in order, once each', async () => {
    await hub.stop({ keepData: true });
    // Wait for two cycles made while the hub is away.
    const madeBefore = cyclesMade(probe);
    assert.ok(
      await eventually(() => cyclesMade(probe) >= madeBefore + 2, 400, 50),
      'two cycles while the hub is down',
    );
    const status = await probeStatus();
    assert.ok(status.probe.spooledCycles >= 2, JSON.stringify(status));
    assert.match(status.probe.lastError ?? '', /unreachable/);
    hub = await TestServer.start({
      dataDir: hubData,
      env: { PORT: new URL(probeEnv.PROBE_HUB_URL ?? '').port },
    });
    assert.ok(
      await eventually(
        () => appliedCycles() >= cyclesMade(probe) && cyclesMade(probe) > madeBefore + 1,
        400,
        50,
      ),
      'delivered',
    );
    await probe.logsCaughtUp();
    assertEventsAlternate();
  });

  test('kill -9 of the probe during an upload: nothing lost, nothing applied twice', async () => {
    const port = Number(new URL(probeEnv.PROBE_HUB_URL ?? '').port);
    await hub.stop({ keepData: true });
    // A stand-in on the hub's port takes the upload and never answers: the probe is killed mid-upload.
    const bodies: string[] = [];
    const stall: Server = createServer((request: IncomingMessage) => {
      let body = '';
      request.on('data', (chunk: Buffer) => (body += chunk.toString('utf8')));
      request.on('end', () => bodies.push(body));
    });
    await new Promise<void>((resolve) => stall.listen(port, '127.0.0.1', resolve));
    assert.ok(await eventually(() => bodies.length >= 1, 400, 50), 'an upload is in flight');
    const inFlight = (JSON.parse(bodies[0] ?? '{}') as { cycleId: string }).cycleId;
    await probe.kill();
    stall.closeAllConnections();
    await new Promise((resolve) => stall.close(resolve));
    hub = await TestServer.start({ dataDir: hubData, env: { PORT: String(port) } });
    probe = await TestServer.start({ dataDir: probeData, env: probeEnv });
    assert.ok(
      await eventually(
        () =>
          hubDb((db) => db.prepare('SELECT 1 FROM ProbeCycles WHERE pcy_CycleId = ?').get(inFlight)) !==
          undefined,
        400,
        50,
      ),
      'the cycle that was in flight arrives after the restart',
    );
    // The hub applies the cycle before the probe has its answer and removes the file: the spool
    // shrinks a moment later (CI once read 2 here, the upload's answer not yet taken in).
    let spooled = await probeStatus();
    await eventually(
      async () => {
        spooled = await probeStatus();
        return spooled.probe.spooledCycles <= 1;
      },
      400,
      50,
    );
    assert.ok(spooled.probe.spooledCycles <= 1, JSON.stringify(spooled));
    assertEventsAlternate();
  });

  /**
   * Each host of the stand-in is present every other cycle: its events alternate between arriving
   * (New Device, Connected) and leaving (Disconnected). A cycle applied twice or out of order would
   * put two of a kind in a row.
   */
  function assertEventsAlternate(): void {
    const rows = hubDb((db) =>
      db
        .prepare('SELECT eve_MAC AS mac, eve_EventType AS type FROM Events ORDER BY eve_DateTime, rowid')
        .all(),
    ) as { mac: string; type: string }[];
    const last = new Map<string, string>();
    for (const row of rows) {
      const kind = row.type === 'Disconnected' ? 'away' : 'here';
      assert.notEqual(last.get(row.mac), kind, `${row.mac}: two '${kind}' events in a row`);
      last.set(row.mac, kind);
    }
    assert.ok(rows.length >= 10);
  }
});
