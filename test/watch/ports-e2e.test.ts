/**
 * Ports Changed end to end: the real app (in process, real SQLite file), the real tool runner and
 * nmap, a namespace host on a test LAN whose listeners open and close between watches, and a
 * webhook receiver on 127.0.0.1. First watch: ports recorded, no event. Then one event with the
 * difference, delivered; an unchanged watch adds nothing; a device without devWatchPorts is not
 * scanned; deleting the device removes its ports.
 */
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import Database from 'better-sqlite3';
import type { Delivery } from '../../src/alerts/model.js';
import { InProcessServer } from '../helpers/inject.js';
import { eventually } from '../helpers/processes.js';
import { startReceiver, type Receiver } from '../helpers/receiver.js';
import { createTestLan, testLanSkipReason, type LanProcess, type TestLan } from '../helpers/testlan.js';
import { watchEvents } from './helpers.js';

const skip = testLanSkipReason();
if (skip) console.log(`# port watch e2e tests skipped: ${skip}`);

describe('port watch: listeners open and close between watches', { skip }, () => {
  let lan: TestLan;
  let receiver: Receiver;
  let server: InProcessServer | undefined;
  let listener: LanProcess | undefined;

  before(async () => {
    lan = await createTestLan({ hosts: 2, far: false });
    receiver = await startReceiver();
  });
  after(async () => {
    await listener?.stop();
    await server?.stop();
    await receiver.close();
    await lan.destroy();
  });

  function portEvents(): { mac: string; info: string }[] {
    assert.ok(server);
    return watchEvents(server.dataDir, 'Ports Changed');
  }

  test('first watch records, a change is one event delivered, delete removes the ports', async () => {
    const [h1, h2] = [lan.hosts.get('h1'), lan.hosts.get('h2')];
    assert.ok(h1 && h2);
    listener = await lan.tcpListener(h1, [22, 80], 'SSH-2.0-OpenSSH_9.2p1 Debian-2');
    const s = await InProcessServer.start({
      SCAN_SUBNETS: `${lan.subnet}@${lan.lanInterface}`,
      SCAN_TOOL: 'arp-scan',
      SCAN_INTERVAL: '86400',
      PORT_WATCH_MINUTES: '0',
      NOTIFY_WEBHOOK_URL: receiver.url('/hook'),
      NOTIFY_RETRY_BASE_MS: '200',
    });
    server = s;
    // The first cycle (started with the server) makes h1 present.
    for (let i = 0; i < 600; i++) {
      const status = await s.request('GET', '/nettools/scan');
      if (status.json.lastCycle !== null && status.json.running === false) break;
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
    const flag = await s.request('POST', `/device/${h1.mac}/update-column`, {
      body: { columnName: 'devWatchPorts', columnValue: 1 },
    });
    assert.equal(flag.status, 200, flag.text);

    // 1. First watch: ports recorded without an event; h2 (no flag) is not scanned.
    const first = await s.server.watch.ports.runNow();
    assert.deepEqual([first.devices, first.changed, first.failed], [1, 0, 0]);
    const ports = await s.request('GET', `/device/${h1.mac}/ports`);
    assert.equal(ports.status, 200, ports.text);
    assert.equal(ports.json.success, true);
    assert.match(String(ports.json.scannedAt), /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$/);
    const listed = ports.json.ports as {
      port: number;
      protocol: string;
      service: string;
      firstSeen: string;
    }[];
    assert.deepEqual(
      listed.map((p) => [p.port, p.protocol]),
      [
        [22, 'tcp'],
        [80, 'tcp'],
      ],
    );
    assert.equal(listed[0]?.service, 'ssh');
    assert.deepEqual(portEvents(), []);
    const other = await s.request('GET', `/device/${h2.mac}/ports`);
    assert.deepEqual(other.json, { success: true, scannedAt: null, ports: [] });

    // 2. 80 closes, 8080 opens: one event, delivered to the webhook.
    await listener.stop();
    listener = await lan.tcpListener(h1, [22, 8080]);
    const second = await s.server.watch.ports.runNow();
    assert.deepEqual([second.devices, second.changed, second.failed], [1, 1, 0]);
    assert.deepEqual(portEvents(), [{ mac: h1.mac, info: 'opened 8080/tcp; closed 80/tcp' }]);
    const hooked = (): Delivery['events'] =>
      receiver
        .on('/hook')
        .flatMap((r) => (JSON.parse(r.body) as Delivery).events)
        .filter((e) => e.type === 'Ports Changed');
    assert.ok(await eventually(() => hooked().length === 1, 400), 'webhook delivery');
    assert.equal(hooked()[0]?.additionalInfo, 'opened 8080/tcp; closed 80/tcp');
    const after2 = (await s.request('GET', `/device/${h1.mac}/ports`)).json.ports as {
      port: number;
      firstSeen: string;
    }[];
    assert.deepEqual(
      after2.map((p) => p.port),
      [22, 8080],
    );
    // 22 keeps the time it was first seen.
    assert.equal(after2[0]?.firstSeen, listed[0].firstSeen);

    // 3. Nothing changed: no event.
    const third = await s.server.watch.ports.runNow();
    assert.deepEqual([third.changed, third.failed], [0, 0]);
    assert.equal(portEvents().length, 1);

    // 4. Bad and unknown MACs; delete removes the ports.
    assert.equal((await s.request('GET', '/device/not-a-mac/ports')).status, 400);
    assert.equal((await s.request('GET', '/device/02:00:00:00:00:99/ports')).status, 404);
    assert.equal((await s.request('DELETE', `/device/${h1.mac}/delete`)).status, 200);
    const db = new Database(join(s.dataDir, 'netkeep.db'), { readonly: true, fileMustExist: true });
    try {
      const left = db.prepare('SELECT COUNT(*) AS n FROM DevicePorts WHERE dpo_MAC = ?').get(h1.mac) as {
        n: number;
      };
      assert.equal(left.n, 0);
    } finally {
      db.close();
    }
  });
});
