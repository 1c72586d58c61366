/**
 * Presence users can believe (DESIGN 13), end to end: the real server scans a namespace test LAN
 * with the real tools through the shared tool runner.
 * - scope: a NetAlertX database of another network, imported with the real `npm run import` CLI,
 *   then a scan of the test LAN: no event at all for the imported devices, their state kept;
 * - sleeping: a host with devCanSleep goes silent for less than SLEEP_MINUTES: still On-line and
 *   sleeping, no event; back, awake, the same session;
 * - flapping: a host that comes and goes reaches FLAP_THRESHOLD: one Flapping event, notified to
 *   a webhook on 127.0.0.1, and its later changes recorded as skipped with lastError `flapping`;
 * - IPv6: a dual-stack and an IPv6-only host with fd00::/8 addresses on the test bridge, found by
 *   the all-nodes echo and the neighbour table (real ping and ip through the tool runner), their
 *   devPrimaryIPv6, and the IPv6-only host going away.
 */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { after, before, describe, test } from 'node:test';
import Database from 'better-sqlite3';
import { createTestLan, testLanSkipReason, type TestLan } from '../helpers/testlan.js';
import { nodeCommand } from '../helpers/processes.js';
import { TestServer } from '../helpers/server.js';
import { startReceiver } from '../helpers/receiver.js';
import { netAlertXCopy } from '../import/fixtures.js';
import { waitForFirstCycle } from './helpers.js';

const skip = testLanSkipReason('presence e2e tests (scope, sleeping, flapping, IPv6)');
const importCli = fileURLToPath(new URL('../../src/import/cli.js', import.meta.url));

type Json = Record<string, unknown>;

interface ListedDevice {
  devMac: string;
  devStatus: string;
  devPresentLastScan: number;
  devLastIP: string;
}

async function list(server: TestServer, query = ''): Promise<ListedDevice[]> {
  const res = await server.request('GET', `/devices?limit=1000${query}`);
  assert.equal(res.status, 200, res.text);
  return res.json.devices as ListedDevice[];
}

async function cycle(server: TestServer): Promise<void> {
  const res = await server.request('POST', '/nettools/scan');
  assert.equal(res.status, 200, res.text);
}

async function eventTypes(server: TestServer, mac: string): Promise<string[]> {
  const res = await server.request('GET', `/device/${mac}/events?limit=1000`);
  assert.equal(res.status, 200, res.text);
  return (res.json.events as { eve_EventType: string }[]).map((e) => e.eve_EventType).reverse();
}

describe('presence e2e: scope, sleeping, flapping, IPv6', { skip }, () => {
  let lan: TestLan;
  const servers: TestServer[] = [];
  const dirs: string[] = [];

  before(async () => {
    lan = await createTestLan({ hosts: 2, far: false });
  });
  after(async () => {
    for (const server of servers) await server.stop();
    for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
    await lan.destroy();
  });

  async function start(env: Record<string, string>, dataDir?: string): Promise<TestServer> {
    const server = await TestServer.start({
      env: { SCAN_INTERVAL: '86400', SCAN_TOOL: 'arp-scan', HISTORY_DAYS: '36500', ...env },
      dataDir,
    });
    servers.push(server);
    return server;
  }

  test('import then scan: no event for the devices of another network, their state kept', async () => {
    // A NetAlertX database of another network (192.168.1.0/24 and 192.168.2.0/24): 400 devices
    // present at its last scan, a quarter of them alerting on Down.
    const source = netAlertXCopy();
    dirs.push(join(source, '..'));
    const src = new Database(source);
    const insert = src.prepare(`INSERT INTO Devices (devMac, devName, devLastIP, devPresentLastScan,
        devAlertDown, devFirstConnection, devLastConnection)
      VALUES (?, ?, ?, 1, ?, '2024-07-01 10:00:00', '2024-07-01 12:00:00')`);
    src.transaction(() => {
      for (let i = 0; i < 400; i++)
        insert.run(
          `02:bb:00:00:${(i >> 8).toString(16).padStart(2, '0')}:${(i & 255).toString(16).padStart(2, '0')}`,
          `imported ${i}`,
          `192.168.${1 + (i >> 8)}.${i & 255}`,
          i % 4 === 0 ? 1 : 0,
        );
    })();
    src.close();
    const dataDir = mkdtempSync(join(tmpdir(), 'netkeep-scope-'));
    dirs.push(dataDir);
    const { command, args } = nodeCommand(importCli, [source]);
    const imported = spawnSync(command, args, {
      env: { PATH: process.env.PATH ?? '/usr/bin:/bin', DATA_DIR: dataDir, TZ: 'UTC' },
      encoding: 'utf8',
    });
    assert.equal(imported.status, 0, imported.stderr);

    const since = new Date(Math.floor(Date.now() / 1000) * 1000).toISOString();
    const server = await start({ SCAN_SUBNETS: `${lan.subnet}@${lan.lanInterface}` }, dataDir);
    const first = (await waitForFirstCycle(server)).lastCycle as Json;
    assert.deepEqual(first.errors, []);
    const before = (await list(server)).filter((d) => d.devMac.startsWith('02:bb:'));
    assert.equal(before.length, 400);
    assert.ok(before.every((d) => d.devPresentLastScan === 1));
    const downBefore = await list(server, '&status=Down');
    await cycle(server);
    await cycle(server);

    const after = (await list(server)).filter((d) => d.devMac.startsWith('02:bb:'));
    assert.deepEqual(after, before);
    for (const device of after.slice(0, 8)) assert.deepEqual(await eventTypes(server, device.devMac), []);
    assert.deepEqual(await list(server, '&status=Down'), downBefore);
    // Every event the three cycles wrote is of the test LAN: the router and the two hosts, new.
    const events = await server.request('GET', `/history/events?limit=1000&since=${since}`);
    assert.equal(events.status, 200, events.text);
    const written = events.json.events as { eve_MAC: string; eve_EventType: string }[];
    assert.deepEqual(
      written.map((e) => e.eve_EventType),
      ['New Device', 'New Device', 'New Device'],
    );
    const lanMacs = new Set([lan.routerMac, ...[...lan.hosts.values()].map((h) => h.mac)]);
    assert.ok(written.every((e) => lanMacs.has(e.eve_MAC)));
  });

  test('a sleeping host: silent for less than SLEEP_MINUTES stays On-line and sleeping, no event', async () => {
    const h = await lan.addHost('sl1');
    const server = await start({ SCAN_SUBNETS: `${lan.subnet}@${lan.lanInterface}`, SLEEP_MINUTES: '30' });
    assert.deepEqual(((await waitForFirstCycle(server)).lastCycle as Json).errors, []);
    const set = await server.request('POST', `/device/${h.mac}`, {
      body: { devCanSleep: 1, devAlertDown: 1 },
    });
    assert.equal(set.status, 200, set.text);
    const device = async (): Promise<Json> => {
      const res = await server.request('GET', `/device/${h.mac}`);
      assert.equal(res.status, 200, res.text);
      return res.json;
    };
    assert.equal((await device()).devSleeping, 0);

    // The host goes silent (its link removed): two cycles, still present and sleeping.
    await lan.removeHost('sl1');
    for (let i = 0; i < 2; i++) {
      await cycle(server);
      const d = await device();
      assert.deepEqual([d.devStatus, d.devPresentLastScan, d.devSleeping], ['On-line', 1, 1]);
    }
    assert.deepEqual(await eventTypes(server, h.mac), ['New Device']);
    assert.deepEqual(
      (await list(server, '&sleeping=1')).map((d) => d.devMac),
      [h.mac],
    );
    assert.ok(!(await list(server, '&sleeping=0')).some((d) => d.devMac === h.mac));

    // Back with its MAC and address: awake, still no event, the one session still open.
    await lan.addHost('sl1', { mac: h.mac, ip: h.ip });
    await cycle(server);
    const d = await device();
    assert.deepEqual([d.devStatus, d.devSleeping, d.devSessions], ['On-line', 0, 1]);
    assert.deepEqual(await eventTypes(server, h.mac), ['New Device']);
    await lan.removeHost('sl1');
  });

  test('a flapping host: one Flapping event notified, its later changes skipped as flapping', async () => {
    const receiver = await startReceiver();
    try {
      const h = await lan.addHost('fl1');
      const server = await start({
        SCAN_SUBNETS: `${lan.subnet}@${lan.lanInterface}`,
        FLAP_THRESHOLD: '3',
        FLAP_WINDOW_MINUTES: '60',
        NOTIFY_WEBHOOK_URL: receiver.url('/hook'),
        NOTIFY_EVENTS: 'Connected,Disconnected,Device Down,Down Reconnected,Flapping',
      });
      assert.deepEqual(((await waitForFirstCycle(server)).lastCycle as Json).errors, []);
      const set = await server.request('POST', `/device/${h.mac}`, {
        body: { devAlertDown: 1, devAlertEvents: 1 },
      });
      assert.equal(set.status, 200, set.text);
      // Away, back, away, back: the third change (Device Down) reaches the threshold.
      for (let i = 0; i < 4; i++) {
        if (i % 2 === 0) await lan.removeHost('fl1');
        else await lan.addHost('fl1', { mac: h.mac, ip: h.ip });
        await cycle(server);
      }
      assert.deepEqual(await eventTypes(server, h.mac), [
        'New Device',
        'Device Down',
        'Down Reconnected',
        'Device Down',
        'Flapping',
        'Down Reconnected',
      ]);
      const d = await server.request('GET', `/device/${h.mac}`);
      assert.equal(d.json.devFlapping, 1);
      assert.deepEqual(
        (await list(server, '&flapping=1')).map((x) => x.devMac),
        [h.mac],
      );
      // The webhook got Device Down, Down Reconnected, then the Flapping: nothing after.
      const notifications = await server.request('GET', '/notifications?limit=100');
      assert.equal(notifications.status, 200, notifications.text);
      type Row = { status: string; lastError: string | null; events: { type: string; mac: string }[] };
      const rowsOf = (notifications.json.notifications as Row[]).reverse();
      const notified = rowsOf
        .filter((r) => r.status !== 'skipped')
        .flatMap((r) => r.events.filter((e) => e.mac === h.mac).map((e) => e.type));
      assert.deepEqual(notified, ['Device Down', 'Down Reconnected', 'Flapping']);
      const skipped = rowsOf.filter((r) => r.status === 'skipped');
      assert.deepEqual(
        skipped.map((r) => [r.lastError, r.events.map((e) => e.type)]),
        [
          ['flapping', ['Device Down']],
          ['flapping', ['Down Reconnected']],
        ],
      );
      await lan.removeHost('fl1');
    } finally {
      await receiver.close();
    }
  });

  test('IPv6: a dual-stack and an IPv6-only host (fd00::/8) found, devPrimaryIPv6, the IPv6-only one leaving', async () => {
    const dual = await lan.addHost('v6d');
    const only = await lan.addHost('v6o');
    await lan.removeIpv4('v6o');
    const root = await lan.addIpv6('root', 2);
    const dualAddress = await lan.addIpv6(dual, 0x11);
    const onlyAddress = await lan.addIpv6(only, 0x12);
    // Both talk to the server over their unique-local address first (as hosts on a LAN do): the
    // kernel's neighbour table then knows those addresses, beside the link-local ones that answer
    // the all-nodes echo.
    for (const host of [dual, only]) await lan.exec(host.ns, ['ping', '-6', '-c', '1', '-w', '5', root]);

    const server = await start({ SCAN_SUBNETS: `${lan.subnet}@${lan.lanInterface}`, SCAN_IPV6: 'on' });
    assert.deepEqual(((await waitForFirstCycle(server)).lastCycle as Json).errors, []);
    const device = async (mac: string): Promise<Json> => {
      const res = await server.request('GET', `/device/${mac}`);
      assert.equal(res.status, 200, res.text);
      return res.json;
    };
    const d = await device(dual.mac);
    assert.deepEqual(
      [d.devLastIP, d.devPrimaryIPv6, d.devSourcePlugin, d.devStatus],
      [dual.ip, dualAddress, 'arp-scan', 'On-line'],
    );
    const o = await device(only.mac);
    assert.deepEqual(
      [o.devLastIP, o.devPrimaryIPv6, o.devSourcePlugin, o.devStatus],
      ['', onlyAddress, 'ipv6-neighbours', 'On-line'],
    );
    // The IPv4 hosts and the router answer over IPv6 too (link-local): no duplicates, same MACs.
    const macs = (await list(server)).map((x) => x.devMac);
    assert.equal(new Set(macs).size, macs.length);
    assert.ok(macs.includes(lan.routerMac));

    // The IPv6-only host leaves. Its neighbour entries stay REACHABLE for the kernel's reachable
    // time (15-45 s) after their last confirmation: a cycle then would still count it. Wait
    // (bounded) until the kernel no longer calls any of them answering, as after a real interval.
    await lan.removeHost('v6o');
    for (let i = 0; i < 120; i++) {
      const table = spawnSync('/usr/sbin/ip', ['-j', '-6', 'neigh', 'show', 'dev', lan.lanInterface], {
        encoding: 'utf8',
      }).stdout;
      const entries = JSON.parse(table.trim() || '[]') as { lladdr?: string; state?: string[] }[];
      const answering = entries.some(
        (e) =>
          e.lladdr === only.mac && (e.state ?? []).some((s) => ['REACHABLE', 'DELAY', 'PROBE'].includes(s)),
      );
      if (!answering) break;
      await new Promise((resolve) => setTimeout(resolve, 500));
    }
    // Then a cycle: Disconnected at its IPv6 address, session closed.
    await cycle(server);
    assert.deepEqual(await eventTypes(server, only.mac), ['New Device', 'Disconnected']);
    const events = await server.request('GET', `/device/${only.mac}/events`);
    assert.equal((events.json.events as { eve_IP: string }[])[0]?.eve_IP, onlyAddress);
    assert.equal((await device(only.mac)).devStatus, 'Off-line');
    // The dual-stack host stays, its addresses unchanged.
    await cycle(server);
    assert.deepEqual(await eventTypes(server, dual.mac), ['New Device']);
    assert.equal((await device(dual.mac)).devPrimaryIPv6, dualAddress);
    await lan.removeHost('v6d');
  });

  test('SCAN_IPV6 on, an interface without IPv6: the cycle succeeds with IPv4 alone', async () => {
    const lan2 = await createTestLan({ hosts: 1, far: false });
    try {
      const disable = spawnSync('/usr/sbin/sysctl', [
        '-q',
        '-w',
        `net.ipv6.conf.${lan2.lanInterface}.disable_ipv6=1`,
      ]);
      assert.equal(disable.status, 0, String(disable.stderr));
      const server = await start({ SCAN_SUBNETS: `${lan2.subnet}@${lan2.lanInterface}`, SCAN_IPV6: 'on' });
      const first = (await waitForFirstCycle(server)).lastCycle as Json;
      assert.deepEqual([first.errors, first.newDevices], [[], 2]);
      await cycle(server);
    } finally {
      await lan2.destroy();
    }
  });
});
