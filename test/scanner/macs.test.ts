/**
 * Random MACs in the scan cycle: the linking rule and the alias mapping as tables (pure), then a
 * real Scanner, SQLite store and dnsmasq lease file: a device that rotates its MAC is linked (by
 * client identifier, or by host name after a restart), with a `MAC Linked` event and no New Device;
 * an alias sighting is a sighting of its device; NOTIFY_RANDOM_MAC and RANDOM_MAC_LINK.
 */
import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import pino from 'pino';
import { loadConfig } from '../../src/config.js';
import { SqliteDeviceStore } from '../../src/store/sqlite/device-store.js';
import { SqliteDevices } from '../../src/store/sqlite/devices.js';
import { DeviceNamer } from '../../src/names/namer.js';
import { NameResolver } from '../../src/names/resolver.js';
import type { Observation, RunTool } from '../../src/scanner/discovery.js';
import { mapAliases, planLinks, type LinkableDevice, type LinkInput } from '../../src/scanner/macs.js';
import { Scanner } from '../../src/scanner/scanner.js';
import type { PlannedEvent } from '../../src/scanner/state-machine.js';
import { tempDb, type TempDb } from './helpers.js';

const logger = pino({ level: 'silent' });

const r1 = '02:00:00:00:00:01';
const r2 = '06:00:00:00:00:02';
const r3 = '0a:00:00:00:00:03';
const r4 = '0e:00:00:00:00:04';
const fixed = '00:1a:2b:00:00:05';
const fresh = 'fa:00:00:00:00:99';

const device = (devMac: string, over: Partial<LinkableDevice> = {}): LinkableDevice => ({
  devMac,
  macs: [devMac],
  dhcpName: '',
  name: '',
  seen: false,
  ...over,
});

describe('the linking rule', () => {
  const cases: { name: string; input: LinkInput; expected: ReturnType<typeof planLinks> }[] = [
    {
      name: "client id of one of the device's MACs: linked",
      input: {
        newMacs: [fresh],
        dhcp: new Map([
          [fresh, { clientId: 'ff:01', hostname: 'pixel' }],
          [r2, { clientId: 'ff:01', hostname: '' }],
        ]),
        devices: [device(r1, { macs: [r1, r2], seen: true }), device(r3)],
      },
      expected: [{ mac: fresh, devMac: r1, reason: 'dhcp-client-id' }],
    },
    {
      name: 'client id on a device with fixed MACs, seen this cycle: still linked (the id is proof)',
      input: {
        newMacs: [fresh],
        dhcp: new Map([
          [fresh, { clientId: 'ab', hostname: '' }],
          [fixed, { clientId: 'ab', hostname: '' }],
        ]),
        devices: [device(fixed, { seen: true })],
      },
      expected: [{ mac: fresh, devMac: fixed, reason: 'dhcp-client-id' }],
    },
    {
      name: 'client id carried by two devices: ambiguous, not linked',
      input: {
        newMacs: [fresh],
        dhcp: new Map([
          [fresh, { clientId: 'ab', hostname: '' }],
          [r1, { clientId: 'ab', hostname: '' }],
          [r3, { clientId: 'ab', hostname: '' }],
        ]),
        devices: [device(r1), device(r3)],
      },
      expected: [],
    },
    {
      name: 'hostname equal to the DHCP name of a random, unseen device: linked',
      input: {
        newMacs: [fresh],
        dhcp: new Map([[fresh, { clientId: '', hostname: 'Pixel-7' }]]),
        devices: [
          device(r1, { dhcpName: 'pixel-7', name: 'pixel-7', macs: [r1, r2] }),
          device(r3, { name: 'tv' }),
        ],
      },
      expected: [{ mac: fresh, devMac: r1, reason: 'dhcp-hostname' }],
    },
    {
      name: 'hostname carried by another device too: not linked',
      input: {
        newMacs: [fresh],
        dhcp: new Map([[fresh, { clientId: '', hostname: 'iphone' }]]),
        devices: [device(r1, { dhcpName: 'iphone', name: 'iphone' }), device(r3, { name: 'iphone' })],
      },
      expected: [],
    },
    {
      name: 'hostname of a device seen this cycle: not linked (a second phone of the same name)',
      input: {
        newMacs: [fresh],
        dhcp: new Map([[fresh, { clientId: '', hostname: 'pixel' }]]),
        devices: [device(r1, { dhcpName: 'pixel', name: 'pixel', seen: true })],
      },
      expected: [],
    },
    {
      name: 'hostname of a device with a fixed MAC among its MACs: not linked',
      input: {
        newMacs: [fresh],
        dhcp: new Map([[fresh, { clientId: '', hostname: 'laptop' }]]),
        devices: [device(r1, { dhcpName: 'laptop', name: 'laptop', macs: [r1, fixed] })],
      },
      expected: [],
    },
    {
      name: 'hostname matching a name a person gave (not DHCP-sourced): not linked',
      input: {
        newMacs: [fresh],
        dhcp: new Map([[fresh, { clientId: '', hostname: 'laptop' }]]),
        devices: [device(r1, { dhcpName: '', name: 'laptop' })],
      },
      expected: [],
    },
    {
      name: 'two new MACs claiming one device by hostname: neither linked',
      input: {
        newMacs: [fresh, r4],
        dhcp: new Map([
          [fresh, { clientId: '', hostname: 'pixel' }],
          [r4, { clientId: '', hostname: 'pixel' }],
        ]),
        devices: [device(r1, { dhcpName: 'pixel', name: 'pixel' })],
      },
      expected: [],
    },
    {
      name: 'a new fixed MAC is never linked',
      input: {
        newMacs: ['00:1a:2b:00:00:99'],
        dhcp: new Map([
          ['00:1a:2b:00:00:99', { clientId: 'ab', hostname: 'pixel' }],
          [r1, { clientId: 'ab', hostname: '' }],
        ]),
        devices: [device(r1, { dhcpName: 'pixel', name: 'pixel' })],
      },
      expected: [],
    },
    {
      name: 'no lease for the new MAC: not linked',
      input: {
        newMacs: [fresh],
        dhcp: new Map(),
        devices: [device(r1, { dhcpName: 'pixel', name: 'pixel' })],
      },
      expected: [],
    },
  ];
  for (const c of cases)
    test(c.name, () => {
      assert.deepEqual(planLinks(c.input), c.expected);
    });
});

describe('the alias mapping', () => {
  const obs = (ips: string[], vendor = ''): Observation => ({ ips, vendor, source: 'arp-scan' });
  test("an alias sighting is its device's; two MACs of one device are one observation", () => {
    const mapped = mapAliases(
      new Map([
        [r2, obs(['10.0.0.9'])],
        [r1, obs(['10.0.0.10'], 'Maker')],
        [r3, obs(['10.0.0.3'])],
      ]),
      new Map([[r2, r1]]),
    );
    assert.deepEqual(
      [...mapped.observations],
      [
        [r1, obs(['10.0.0.9', '10.0.0.10'], 'Maker')],
        [r3, obs(['10.0.0.3'])],
      ],
    );
    assert.deepEqual(mapped.aliasesSeen, [r2]);
  });
});

describe('random MACs in the scan cycle', () => {
  let handle: TempDb;
  let leaseFile: string;
  let time = Date.parse('2026-11-26T12:00:00Z');
  before(() => {
    handle = tempDb();
    leaseFile = join(handle.dir, 'dhcp.leases');
  });
  after(() => {
    handle.remove();
  });

  interface Rig {
    scanner: Scanner;
    repository: SqliteDevices;
    notified: PlannedEvent[];
    seen: Map<string, string>;
  }

  function rig(env: Record<string, string> = {}, repository = new SqliteDevices(handle.db)): Rig {
    const config = loadConfig(
      {
        SCAN_SUBNETS: '127.0.0.0/16@lo',
        DNS_SERVER: '127.0.0.1:9',
        NAME_MDNS: 'off',
        NAME_NETBIOS: 'off',
        NAME_DNS: 'off',
        DHCP_LEASES: `dnsmasq:${leaseFile}`,
        SCAN_MISSES_BEFORE_ABSENT: '3',
        ...env,
      },
      handle.dir,
    );
    const seen = new Map<string, string>();
    const runTool: RunTool = async () => ({
      stdout: [...seen].map(([mac, ip]) => `${ip}\t${mac}\t\n`).join(''),
      stderr: '',
      exitCode: 0,
    });
    const resolver = new NameResolver({ config });
    const notified: PlannedEvent[] = [];
    const scanner = new Scanner({
      devices: new SqliteDeviceStore(repository),
      presence: new SqliteDeviceStore(repository),
      config,
      logger,
      runTool,
      now: () => new Date(time),
      names: new DeviceNamer(resolver, new SqliteDeviceStore(repository), config.NAME_REFRESH_MINUTES),
      leases: async () => (await resolver.leases.read()).byMac,
      notifications: {
        request: (events) => {
          notified.push(...events);
          return undefined;
        },
      },
    });
    return { scanner, repository, notified, seen };
  }

  const leases = (...rows: [string, string, string, string][]): void => {
    // dnsmasq's format: expiry MAC IP hostname client-id
    writeFileSync(leaseFile, rows.map(([mac, ip, host, id]) => `0 ${mac} ${ip} ${host} ${id}\n`).join(''));
  };
  const events = (repository: SqliteDevices, mac: string): string[] =>
    repository
      .listEvents(mac, 'all', new Date(time), { offset: 0, limit: 100 })
      ?.items.map((e) => `${e.eve_EventType}|${e.eve_AdditionalInfo}`) ?? [];

  test('a rotated MAC with the same client id is linked: no New Device, a MAC Linked event, the session kept', async () => {
    const m1 = '02:aa:00:00:00:01';
    const m2 = '0a:bb:00:00:00:02';
    const { scanner, repository, notified, seen } = rig();
    leases([m1, '127.0.3.1', 'pixel-7', '01:02:03']);
    seen.set(m1, '127.0.3.1');
    await scanner.runNow();
    assert.equal(repository.getName(m1)?.name, 'pixel-7');
    const before = repository.get(m1, 'all', new Date(time));
    assert.equal(before?.devSessions, 1);
    // The phone rotates: dnsmasq gives the client id its address again, under the new MAC.
    time += 300_000;
    leases([m2, '127.0.3.1', 'pixel-7', '01:02:03']);
    seen.clear();
    seen.set(m2, '127.0.3.1');
    notified.length = 0;
    const summary = await scanner.runNow();
    assert.equal(summary.newDevices, 0);
    assert.equal(repository.get(m2, 'all', new Date(time)), undefined, 'no device of its own');
    assert.equal(repository.resolveMac(m2), m1);
    const after = repository.get(m1, 'all', new Date(time));
    assert.ok(after);
    assert.deepEqual(after.devMacs, [m1, m2]);
    assert.equal(after.devSessions, 1, 'the open session is kept');
    assert.equal(after.devPresentLastScan, 1);
    assert.equal(after.devLastIP, '127.0.3.1');
    assert.deepEqual(events(repository, m1), [`MAC Linked|${m2} (dhcp-client-id)`, 'New Device|']);
    assert.deepEqual(
      notified.map((e) => [e.type, e.mac]),
      [['MAC Linked', m1]],
    );
    // Seen again under the alias: nothing new, the device stays present.
    time += 300_000;
    notified.length = 0;
    await scanner.runNow();
    assert.deepEqual(notified, []);
    assert.equal(repository.listDevices({}, { offset: 0, limit: 100 }).total, 1);
  });

  test('after a restart (no client id remembered), the hostname links a device that rotated away', async () => {
    const m3 = '02:cc:00:00:00:03';
    const m4 = '0a:dd:00:00:00:04';
    const first = rig();
    leases([m3, '127.0.3.3', 'ipad-kid', '*']);
    first.seen.clear();
    first.seen.set(m3, '127.0.3.3');
    await first.scanner.runNow();
    assert.equal(first.repository.getName(m3)?.source, 'dhcp');
    // Restart: a new scanner (no memory); the device rotated away.
    const second = rig({}, first.repository);
    time += 300_000;
    leases([m4, '127.0.3.4', 'ipad-kid', '*']);
    second.seen.set(m4, '127.0.3.4');
    await second.scanner.runNow();
    assert.equal(first.repository.resolveMac(m4), m3);
    assert.deepEqual(events(first.repository, m3)[0], `MAC Linked|${m4} (dhcp-hostname)`);
  });

  test('RANDOM_MAC_LINK=off: a new device; NOTIFY_RANDOM_MAC=off: its New Device is not notified', async () => {
    const m5 = '02:ee:00:00:00:05';
    const m6 = '0a:ee:00:00:00:06';
    const fixedMac = '00:1a:2b:ee:00:07';
    const a = rig({ RANDOM_MAC_LINK: 'off', NOTIFY_RANDOM_MAC: 'off' });
    leases([m5, '127.0.3.5', 'tablet', '01:09']);
    a.seen.set(m5, '127.0.3.5');
    await a.scanner.runNow();
    time += 300_000;
    leases([m6, '127.0.3.6', 'tablet', '01:09'], [fixedMac, '127.0.3.7', 'nas', '*']);
    a.seen.clear();
    a.seen.set(m6, '127.0.3.6');
    a.seen.set(fixedMac, '127.0.3.7');
    a.notified.length = 0;
    const summary = await a.scanner.runNow();
    assert.equal(summary.newDevices, 2, 'not linked');
    assert.equal(a.repository.resolveMac(m6), m6);
    assert.deepEqual(
      a.notified.map((e) => [e.type, e.mac]),
      [['New Device', fixedMac]],
      'the random one is recorded, not notified',
    );
  });
});
