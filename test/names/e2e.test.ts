/**
 * Naming end to end on a test LAN of network namespaces: the real server (child process) scans
 * the LAN with arp-scan; a real dnsmasq serving DHCP on the LAN's bridge (inside the router's
 * namespace) writes the lease file the server reads; hosts take leases with busybox udhcpc
 * sending their host name; mDNS and NetBIOS responders (test/helpers/name-responders.ts, plain
 * node) run inside host namespaces on the real ports 5353 and 137; the DNS stand-in on loopback
 * answers PTR. Checked: each source alone, the rank, that a user name survives, and that the
 * webhook's New Device events carry the names found in the same cycle.
 *
 *   h1: DHCP "kitchen-pi" and mDNS "pi-mdns"      -> kitchen-pi (dhcp > mdns)
 *   h2: mDNS "printer" and NetBIOS "PRINTER-NB"    -> printer (mdns > netbios)
 *   h3: NetBIOS "WIN-DESKTOP" and PTR desk.home.lan -> WIN-DESKTOP (netbios > dns), FQDN filled
 *   h4: PTR nas.home.lan only                      -> nas (dns)
 *   h5: DHCP "tv-box" only                         -> tv-box (dhcp)
 *   the router: nothing                            -> (unknown)
 */
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { after, before, describe, test } from 'node:test';
import type { Delivery } from '../../src/alerts/model.js';
import { startDnsStandIn, type DnsStandIn } from '../helpers/dns.js';
import { startReceiver, type Receiver } from '../helpers/receiver.js';
import { dhcpMissing, startDhcpServer, takeLease } from '../helpers/dhcp.js';
import { commandMissing, skipUnlessCi } from '../helpers/requirements.js';
import { TestServer } from '../helpers/server.js';
import { createTestLan, testLanMissing, type LanHost, type TestLan } from '../helpers/testlan.js';
import { waitForFirstCycle } from '../scanner/helpers.js';

const skip = skipUnlessCi(
  testLanMissing() ?? dhcpMissing() ?? commandMissing('/usr/sbin/arp-scan', 'arp-scan'),
  'naming end-to-end tests',
);
const responderScript = fileURLToPath(new URL('../helpers/name-responders.js', import.meta.url));

describe('naming end to end: dnsmasq leases, mDNS, NetBIOS and reverse DNS on a test LAN', { skip }, () => {
  let lan: TestLan;
  let dns: DnsStandIn;
  let receiver: Receiver;
  let server: TestServer | undefined;
  const dir = mkdtempSync(join(tmpdir(), 'netkeep-names-e2e-'));
  const leaseFile = join(dir, 'dhcp.leases');
  const host = (name: string): LanHost => {
    const h = lan.hosts.get(name);
    assert.ok(h, name);
    return h;
  };

  async function responder(h: LanHost, kind: 'mdns' | 'netbios', name: string): Promise<void> {
    const port = kind === 'mdns' ? '5353' : '137';
    const proc = lan.spawn(h.ns, [
      process.execPath,
      responderScript,
      kind,
      '0.0.0.0',
      port,
      'answer',
      name,
      h.ip,
    ]);
    await proc.waitForLine(/^listening /);
  }

  before(async () => {
    lan = await createTestLan({ hosts: 5, far: false });
    writeFileSync(leaseFile, '');
    // The DHCP server of the LAN: dnsmasq on the router's bridge, DNS off (port 0).
    startDhcpServer(lan, leaseFile);
    for (const [name, hostname] of [
      ['h1', 'kitchen-pi'],
      ['h5', 'tv-box'],
    ] as const)
      // A real DHCP client asking with its host name.
      await takeLease(lan, host(name), { hostname });
    await responder(host('h1'), 'mdns', 'pi-mdns');
    await responder(host('h2'), 'mdns', 'printer');
    await responder(host('h2'), 'netbios', 'PRINTER-NB');
    await responder(host('h3'), 'netbios', 'WIN-DESKTOP');
    dns = await startDnsStandIn({ 'desk.home.lan': host('h3').ip, 'nas.home.lan': host('h4').ip });
    receiver = await startReceiver();
  });
  after(async () => {
    await server?.stop();
    await receiver.close();
    await dns.close();
    await lan.destroy();
    rmSync(dir, { recursive: true, force: true });
  });

  test('the first cycle names every device by the best source, and New Device alerts carry the names', async () => {
    server = await TestServer.start({
      env: {
        SCAN_SUBNETS: `${lan.subnet}@${lan.lanInterface}`,
        SCAN_TOOL: 'arp-scan',
        SCAN_INTERVAL: '86400',
        DNS_SERVER: dns.address,
        DHCP_LEASES: `dnsmasq:${leaseFile}`,
        NAME_MDNS: 'on',
        NAME_NETBIOS: 'on',
        NAME_TIMEOUT_MS: '1000',
        NOTIFY_WEBHOOK_URL: receiver.url('/hook'),
      },
    });
    const status = await waitForFirstCycle(server);
    const cycle = status.lastCycle as Record<string, unknown>;
    assert.deepEqual(cycle.errors, []);
    assert.equal(cycle.newDevices, 6);
    assert.equal(cycle.named, 5);
    assert.deepEqual(cycle.nameSourceErrors, []);

    const expected: Record<string, [string, string, string]> = {
      [host('h1').mac]: ['kitchen-pi', 'dhcp', ''],
      [host('h2').mac]: ['printer', 'mdns', ''],
      [host('h3').mac]: ['WIN-DESKTOP', 'netbios', 'desk.home.lan'],
      [host('h4').mac]: ['nas', 'dns', 'nas.home.lan'],
      [host('h5').mac]: ['tv-box', 'dhcp', ''],
      [lan.routerMac]: ['(unknown)', '', ''],
    };
    for (const [mac, [name, source, fqdn]] of Object.entries(expected)) {
      const device: Record<string, unknown> = (await server.request('GET', `/device/${mac}`)).json;
      assert.deepEqual([device.devName, device.devNameSource, device.devFQDN], [name, source, fqdn], mac);
    }

    // The webhook's New Device events carry the names found in the cycle that created them.
    const [hook] = await receiver.waitFor('/hook');
    assert.ok(hook);
    const delivery = JSON.parse(hook.body) as Delivery;
    const named = Object.fromEntries(
      delivery.events.filter((e) => e.type === 'New Device').map((e) => [e.mac, e.device.devName]),
    );
    assert.deepEqual(named, Object.fromEntries(Object.entries(expected).map(([mac, [name]]) => [mac, name])));
  });

  test('a user name survives: resolve-name reports it and the sources, and keeps it', async () => {
    assert.ok(server);
    const mac = host('h1').mac;
    let res = await server.request('POST', `/device/${mac}`, { body: { devName: 'Kitchen display' } });
    assert.equal(res.status, 200, res.text);
    res = await server.request('POST', `/device/${mac}/resolve-name`);
    assert.equal(res.status, 200, res.text);
    assert.deepEqual(res.json, {
      success: true,
      name: 'Kitchen display',
      source: 'user',
      candidates: [
        { source: 'dhcp', name: 'kitchen-pi' },
        { source: 'mdns', name: 'pi-mdns' },
      ],
    });
    // A scan cycle now does not look h1 up at all, and leaves its name.
    res = await server.request('POST', '/nettools/scan');
    assert.equal(res.status, 200, res.text);
    const after: Record<string, unknown> = (await server.request('GET', `/device/${mac}`)).json;
    assert.deepEqual([after.devName, after.devNameSource], ['Kitchen display', 'user']);
  });
});
