/**
 * Rogue DHCP end to end: two real dnsmasq DHCP servers (dnsmasq-base) in namespace hosts on a test
 * LAN's bridge, one listed in DHCP_SERVERS and one not; the real app in process broadcasts its
 * DHCPDISCOVER (nmap's broadcast-dhcp-discover) on the LAN interface only. The rogue one is one
 * event on its MAC (created as a device), delivered to a webhook receiver on 127.0.0.1, not
 * repeated by the next watch; GET /nettools/dhcp-watch lists both with their trust.
 */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import type { Delivery } from '../../src/alerts/model.js';
import { InProcessServer } from '../helpers/inject.js';
import { eventually } from '../helpers/processes.js';
import { startReceiver, type Receiver } from '../helpers/receiver.js';
import {
  createTestLan,
  testLanSkipReason,
  type LanHost,
  type LanProcess,
  type TestLan,
} from '../helpers/testlan.js';
import { skipUnlessCi } from '../helpers/requirements.js';
import { watchEvents } from './helpers.js';

const dnsmasqPath = spawnSync('sh', ['-c', 'command -v dnsmasq'], { encoding: 'utf8' }).stdout.trim();
const skip =
  testLanSkipReason() ??
  skipUnlessCi(
    dnsmasqPath === '' ? 'dnsmasq is not installed (apt-get install dnsmasq-base)' : undefined,
    'DHCP watch e2e tests',
  );
if (skip) console.log(`# DHCP watch e2e tests skipped: ${skip}`);

describe('DHCP watch: a rogue dnsmasq on the test bridge', { skip }, () => {
  let lan: TestLan;
  let receiver: Receiver;
  let server: InProcessServer | undefined;
  const servers: LanProcess[] = [];
  const leaseDir = mkdtempSync(join(tmpdir(), 'netkeep-dhcp-'));

  before(async () => {
    lan = await createTestLan({ hosts: 2, far: false });
    receiver = await startReceiver();
  });
  after(async () => {
    for (const p of servers) await p.stop();
    await server?.stop();
    await receiver.close();
    await lan.destroy();
    rmSync(leaseDir, { recursive: true, force: true });
  });

  function dnsmasq(host: LanHost, first: number): LanProcess {
    const base = host.ip.split('.').slice(0, 3).join('.');
    return lan.spawn(host.ns, [
      dnsmasqPath,
      '--no-daemon',
      '--port=0', // DHCP only: no DNS
      '--interface=eth0',
      '--bind-interfaces',
      '--no-resolv',
      '--no-hosts',
      `--dhcp-range=${base}.${first},${base}.${first + 9},255.255.255.0,1h`,
      `--dhcp-leasefile=${join(leaseDir, `${host.name}.leases`)}`,
      '--pid-file=',
      '--log-dhcp',
    ]);
  }

  test('the rogue server is one event on its MAC; the trusted one is listed, not reported', async () => {
    const [trusted, rogue] = [lan.hosts.get('h1'), lan.hosts.get('h2')];
    assert.ok(trusted && rogue);
    servers.push(dnsmasq(trusted, 100), dnsmasq(rogue, 150));
    // dnsmasq logs to stderr (inherited); give it a moment to bind its socket.
    await new Promise((resolve) => setTimeout(resolve, 1000));
    const s = await InProcessServer.start({
      SCAN_SUBNETS: `${lan.subnet}@${lan.lanInterface}`,
      SCAN_TOOL: 'arp-scan',
      SCAN_INTERVAL: '86400',
      DHCP_SERVERS: trusted.ip,
      NOTIFY_WEBHOOK_URL: receiver.url('/hook'),
      NOTIFY_RETRY_BASE_MS: '200',
    });
    server = s;
    const before = await s.request('GET', '/nettools/dhcp-watch');
    assert.equal(before.status, 200);
    assert.equal(before.json.success, true);

    const result = await s.server.watch.dhcp.runNow();
    const byIp = new Map(result.servers.map((x) => [x.ip, x]));
    assert.deepEqual(byIp.get(trusted.ip)?.trusted, true);
    assert.equal(byIp.get(trusted.ip)?.mac, trusted.mac);
    const seen = byIp.get(rogue.ip);
    assert.ok(seen, JSON.stringify(result));
    assert.equal(seen.mac, rogue.mac);
    assert.equal(seen.trusted, false);
    assert.match(seen.offered, new RegExp(`^${rogue.ip.split('.').slice(0, 3).join('\\.')}\\.(15\\d)$`));

    const listed = await s.request('GET', '/nettools/dhcp-watch');
    assert.equal(listed.json.at, result.at);
    assert.equal((listed.json.servers as unknown[]).length, result.servers.length);

    const events = (): { mac: string; info: string }[] => watchEvents(s.dataDir, 'Rogue DHCP');
    assert.deepEqual(events(), [{ mac: rogue.mac, info: `server ${rogue.ip} offered ${seen.offered}` }]);
    const device = await s.request('GET', `/device/${rogue.mac}`);
    assert.equal(device.status, 200, 'the rogue server is a device');
    const hooked = (): Delivery['events'] =>
      receiver
        .on('/hook')
        .flatMap((r) => (JSON.parse(r.body) as Delivery).events)
        .filter((e) => e.type === 'Rogue DHCP');
    assert.ok(await eventually(() => hooked().length === 1, 400), 'webhook delivery');
    assert.equal(hooked()[0]?.mac, rogue.mac);

    // The same rogue server again: not repeated.
    await s.server.watch.dhcp.runNow();
    assert.equal(events().length, 1);
  });
});
