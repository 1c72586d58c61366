/**
 * Naming inside the scan cycle, in process: a real Scanner and SQLite store, discovery from a
 * stand-in arp-scan answer listing loopback addresses, and per-device mDNS/NetBIOS responders,
 * the DNS stand-in and a dnsmasq lease file on loopback. New devices are stored with their name
 * in the cycle that finds them; lookups refresh per NAME_REFRESH_MINUTES; the rank and user
 * names hold across cycles.
 */
import assert from 'node:assert/strict';
import { rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import pino from 'pino';
import { loadConfig } from '../../src/config.js';
import { SqliteDeviceStore } from '../../src/store/sqlite/device-store.js';
import { SqliteDevices } from '../../src/store/sqlite/devices.js';
import { DeviceNamer } from '../../src/names/namer.js';
import { NameResolver } from '../../src/names/resolver.js';
import type { RunTool } from '../../src/scanner/discovery.js';
import { Scanner } from '../../src/scanner/scanner.js';
import { startDnsStandIn, type DnsStandIn } from '../helpers/dns.js';
import {
  freeUdpPort,
  mdnsAnswer,
  netbiosAnswer,
  startResponder,
  type Responder,
} from '../helpers/name-responders.js';
import { tempDb, type TempDb } from '../scanner/helpers.js';

const logger = pino({ level: 'silent' });

// Four devices on loopback: a answers DHCP (lease file) and mDNS, b mDNS and NetBIOS, c only DNS,
// d nothing at all.
const devices = {
  a: { ip: '127.0.2.1', mac: '02:00:00:00:02:01' },
  b: { ip: '127.0.2.2', mac: '02:00:00:00:02:02' },
  c: { ip: '127.0.2.3', mac: '02:00:00:00:02:03' },
  d: { ip: '127.0.2.4', mac: '02:00:00:00:02:04' },
};
const arpScanOutput = Object.values(devices)
  .map((d) => `${d.ip}\t${d.mac}\tFake Vendor\n`)
  .join('');

describe('naming in the scan cycle', () => {
  let handle: TempDb;
  let dns: DnsStandIn;
  let mdnsPort: number;
  let netbiosPort: number;
  const responders: Responder[] = [];
  let leaseFile: string;
  let time = new Date('2026-11-26T12:00:00Z').getTime();

  before(async () => {
    handle = tempDb();
    leaseFile = join(handle.dir, 'dhcp.leases');
    writeFileSync(leaseFile, `0 ${devices.a.mac} ${devices.a.ip} kitchen-pi 01:${devices.a.mac}\n`);
    mdnsPort = await freeUdpPort();
    netbiosPort = await freeUdpPort();
    responders.push(
      await startResponder(devices.a.ip, mdnsPort, 'answer', mdnsAnswer({ [devices.a.ip]: 'pi-mdns' })),
    );
    responders.push(
      await startResponder(devices.b.ip, mdnsPort, 'answer', mdnsAnswer({ [devices.b.ip]: 'printer' })),
    );
    responders.push(await startResponder(devices.b.ip, netbiosPort, 'answer', netbiosAnswer('PRINTER-NB')));
    dns = await startDnsStandIn({ 'c-host.home.lan': devices.c.ip, 'printer.home.lan': devices.b.ip });
  });
  after(async () => {
    for (const r of responders) await r.close();
    await dns.close();
    handle.remove();
  });

  function scanner(): { scanner: Scanner; repository: SqliteDevices } {
    const config = loadConfig(
      {
        SCAN_SUBNETS: '127.0.0.0/16@lo',
        DNS_SERVER: dns.address,
        DHCP_LEASES: `dnsmasq:${leaseFile}`,
        NAME_TIMEOUT_MS: '300',
        NAME_REFRESH_MINUTES: '60',
      },
      handle.dir,
    );
    const repository = new SqliteDevices(handle.db);
    const runTool: RunTool = async () => ({ stdout: arpScanOutput, stderr: '', exitCode: 0 });
    const namer = new DeviceNamer(
      new NameResolver({ config, testOnlyPorts: { mdns: mdnsPort, netbios: netbiosPort } }),
      new SqliteDeviceStore(repository),
      config.NAME_REFRESH_MINUTES,
    );
    return {
      scanner: new Scanner({
        devices: new SqliteDeviceStore(repository),
        presence: new SqliteDeviceStore(repository),
        config,
        logger,
        runTool,
        now: () => new Date(time),
        names: namer,
      }),
      repository,
    };
  }

  const names = (repository: SqliteDevices): Record<string, [string, string, string]> =>
    Object.fromEntries(
      Object.entries(devices).map(([key, d]) => {
        const n = repository.getName(d.mac);
        return [key, [n?.name ?? '?', n?.source ?? '?', n?.fqdn ?? '?']];
      }),
    );

  test('the first cycle stores every new device with the best name found, and its New Device event', async () => {
    const { scanner: s, repository } = scanner();
    const summary = await s.runNow();
    assert.equal(summary.newDevices, 4);
    assert.equal(summary.named, 3);
    assert.deepEqual(summary.nameSourceErrors, []);
    assert.deepEqual(names(repository), {
      a: ['kitchen-pi', 'dhcp', ''],
      b: ['printer', 'mdns', 'printer.home.lan'],
      c: ['c-host', 'dns', 'c-host.home.lan'],
      d: ['(unknown)', '', ''],
    });
    const events = handle.db
      .prepare(
        `SELECT eve_MAC AS mac, devName AS name FROM Events JOIN Devices ON devMac = eve_MAC
         WHERE eve_EventType = 'New Device' ORDER BY eve_MAC`,
      )
      .all();
    assert.equal(events.length, 4);
    await s.stop();
  });

  test('no lookup again before NAME_REFRESH_MINUTES; a user name is never replaced; the rank holds', async () => {
    const { scanner: s, repository } = scanner();
    // A person names b; the lease of c appears (dhcp outranks dns); a's lease changes its name.
    await repository.write(() => repository.update(devices.b.mac, { devName: 'Office printer' }));
    writeFileSync(
      leaseFile,
      `0 ${devices.a.mac} ${devices.a.ip} kitchen-pi-2 *\n0 ${devices.c.mac} ${devices.c.ip} c-laptop *\n`,
    );
    // A new scanner (as after a restart) looks every device up once: d, c, a (b is the user's).
    const asked = responders.map((r) => r.questions());
    time += 60_000;
    let summary = await s.runNow();
    assert.equal(summary.named, 2);
    assert.deepEqual(names(repository), {
      a: ['kitchen-pi-2', 'dhcp', ''],
      b: ['Office printer', 'user', 'printer.home.lan'],
      c: ['c-laptop', 'dhcp', 'c-host.home.lan'],
      d: ['(unknown)', '', ''],
    });
    assert.equal(responders[1]?.questions(), asked[1], 'b (a user name) was not asked');
    // a was looked up, but its lease names it: mDNS (ranked below DHCP) was not asked.
    assert.equal(responders[0]?.questions(), asked[0], 'a lease-named device is not asked over mDNS');

    // Ten minutes later: nobody is due, nothing is asked.
    const dnsQueries = dns.queries.length;
    writeFileSync(leaseFile, `0 ${devices.d.mac} ${devices.d.ip} d-phone *\n`);
    time += 10 * 60_000;
    summary = await s.runNow();
    assert.equal(summary.named, 0);
    assert.equal(dns.queries.length, dnsQueries);
    assert.equal(repository.getName(devices.d.mac)?.name, '(unknown)');

    // Past the refresh: d is named from the new lease; a keeps its name (its lease is gone, and a
    // worse-ranked mDNS name does not replace a DHCP one).
    time += 60 * 60_000;
    summary = await s.runNow();
    assert.equal(summary.named, 1);
    assert.deepEqual(names(repository).d, ['d-phone', 'dhcp', '']);
    assert.deepEqual(names(repository).a, ['kitchen-pi-2', 'dhcp', '']);
    await s.stop();
  });

  test('hostile lease content: a binary file is a warning; a name with control characters or 10 KB is never stored', async () => {
    const { scanner: s, repository } = scanner();
    // d's name is cleared by a person, so it can be named again.
    await repository.write(() => repository.update(devices.d.mac, { devName: '' }));
    writeFileSync(
      leaseFile,
      `0 ${devices.d.mac} ${devices.d.ip} evil\u001b[31m *\n0 ${devices.c.mac} ${devices.c.ip} ${'x'.repeat(10_240)} *\n`,
    );
    time += 2 * 60 * 60_000;
    let summary = await s.runNow();
    assert.deepEqual(summary.errors, []);
    assert.equal(repository.getName(devices.d.mac)?.name, '', 'the control-character name is not stored');
    assert.equal(repository.getName(devices.c.mac)?.name, 'c-laptop', 'the 10 KB name is not stored');
    writeFileSync(leaseFile, Buffer.from([0x00, 0x01, 0xff, 0xfe, 0x0a, 0x00]));
    time += 2 * 60 * 60_000;
    summary = await s.runNow();
    assert.deepEqual(summary.errors, []);
    assert.match(summary.nameSourceErrors.map((e) => e.message).join('\n'), /binary content/);
    await s.stop();
  });

  test('a lease file that goes missing is a warning in the summary, never a failed cycle', async () => {
    const { scanner: s } = scanner();
    rmSync(leaseFile);
    time += 2 * 60 * 60_000;
    const summary = await s.runNow();
    assert.deepEqual(summary.errors, []);
    const [warning, ...more] = summary.nameSourceErrors;
    assert.ok(warning && more.length === 0);
    assert.equal(warning.source, 'dhcp');
    assert.match(warning.message, /dhcp\.leases: missing/);
    await s.stop();
  });
});
