/**
 * A phone rotating its MAC, end to end on a test LAN of network namespaces: the real server (child
 * process) scans with arp-scan; a real dnsmasq hands out leases on the LAN's bridge and writes the
 * lease file the server reads; the host takes its lease with busybox udhcpc sending a fixed client
 * identifier (`-x 0x3d:<hex>`), as phones keep it across MAC changes. The host then changes its MAC
 * and asks again: the device keeps its name, history and open session, the new MAC is an alias,
 * and the webhook receiver gets `MAC Linked`, never a New Device for the new MAC.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import type { Delivery } from '../../src/alerts/model.js';
import { dhcpMissing, startDhcpServer, takeLease } from '../helpers/dhcp.js';
import { startReceiver, type Receiver } from '../helpers/receiver.js';
import { commandMissing, skipUnlessCi } from '../helpers/requirements.js';
import { TestServer } from '../helpers/server.js';
import { createTestLan, testLanMissing, type LanHost, type TestLan } from '../helpers/testlan.js';
import { waitForFirstCycle } from './helpers.js';

const skip = skipUnlessCi(
  testLanMissing() ?? dhcpMissing() ?? commandMissing('/usr/sbin/arp-scan', 'arp-scan'),
  'random MAC end-to-end tests',
);

describe('random MACs end to end: a host rotates its MAC, dnsmasq leases link it', { skip }, () => {
  let lan: TestLan;
  let receiver: Receiver;
  let server: TestServer | undefined;
  const dir = mkdtempSync(join(tmpdir(), 'netkeep-macs-e2e-'));
  const leaseFile = join(dir, 'dhcp.leases');
  const clientId = 'ff00c0ffee0001';
  let phone: LanHost;

  before(async () => {
    lan = await createTestLan({ hosts: 2, far: false });
    const h1 = lan.hosts.get('h1');
    assert.ok(h1);
    phone = h1;
    writeFileSync(leaseFile, '');
    startDhcpServer(lan, leaseFile);
    await takeLease(lan, phone, { hostname: 'pixel-7', clientId });
    receiver = await startReceiver();
  });
  after(async () => {
    await server?.stop();
    await receiver.close();
    await lan.destroy();
    rmSync(dir, { recursive: true, force: true });
  });

  test('the rotated MAC is linked: same device, name, history and open session; no New Device', async () => {
    server = await TestServer.start({
      env: {
        SCAN_SUBNETS: `${lan.subnet}@${lan.lanInterface}`,
        SCAN_TOOL: 'arp-scan',
        SCAN_INTERVAL: '86400',
        DHCP_LEASES: `dnsmasq:${leaseFile}`,
        NOTIFY_WEBHOOK_URL: receiver.url('/hook'),
      },
    });
    const status = await waitForFirstCycle(server);
    assert.deepEqual((status.lastCycle as Record<string, unknown>).errors, []);
    const oldMac = phone.mac;
    const before: Record<string, unknown> = (await server.request('GET', `/device/${oldMac}`)).json;
    assert.deepEqual([before.devName, before.devNameSource, before.devSessions], ['pixel-7', 'dhcp', 1]);
    await receiver.waitFor('/hook', 1);

    // The phone rotates its MAC and asks for its lease again with the same client identifier.
    const newMac = `0a:${oldMac.slice(3, 15)}77`;
    await lan.setHostMac('h1', newMac);
    await takeLease(lan, phone, { hostname: 'pixel-7', clientId });
    assert.match(readFileSync(leaseFile, 'utf8'), new RegExp(newMac), 'dnsmasq leased to the new MAC');

    const scan = await server.request('POST', '/nettools/scan');
    assert.equal(scan.status, 200, scan.text);
    assert.equal((scan.json.lastCycle as Record<string, unknown>).newDevices, 0);

    const byAlias = await server.request('GET', `/device/${newMac}`);
    assert.equal(byAlias.status, 200, byAlias.text);
    const device: Record<string, unknown> = byAlias.json;
    assert.equal(device.devMac, oldMac);
    assert.deepEqual(device.devMacs, [oldMac, newMac]);
    assert.deepEqual(
      [device.devName, device.devNameSource, device.devStatus],
      ['pixel-7', 'dhcp', 'On-line'],
    );
    assert.equal(device.devSessions, 1, 'the open session is kept');
    const sessions = await server.request('GET', `/device/${oldMac}/sessions`);
    assert.deepEqual(
      (sessions.json.sessions as Record<string, unknown>[]).map((s) => s.ses_StillConnected),
      [1],
    );
    const events = await server.request('GET', `/device/${newMac}/events`);
    assert.deepEqual(
      (events.json.events as Record<string, unknown>[]).map((e) => [e.eve_EventType, e.eve_AdditionalInfo]),
      [
        ['MAC Linked', `${newMac} (dhcp-client-id)`],
        ['New Device', ''],
      ],
    );
    // Not a device of its own: the list holds the phone, the other host and the router.
    const list = await server.request('GET', '/devices');
    assert.equal(list.json.total, 3);

    // The webhook: MAC Linked (devAlertEvents is 1 by default), never a New Device for the new MAC.
    const hooks = await receiver.waitFor('/hook', 2);
    const events2 = hooks.flatMap((h) => (JSON.parse(h.body) as Delivery).events);
    assert.ok(!events2.some((e) => e.type === 'New Device' && e.mac === newMac));
    assert.ok(events2.some((e) => e.type === 'MAC Linked' && e.mac === oldMac));
  });
});
