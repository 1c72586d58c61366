/**
 * The security watch's cycle step end to end: the real server scans a test LAN of network
 * namespaces with arp-scan and delivers to a webhook receiver on 127.0.0.1.
 *   IP Conflict: two namespace hosts with one address on the bridge -> one event per MAC, once,
 *   not again while the conflict persists; it ends, then comes back -> reported again.
 *   Gateway Changed: the gateway (from the root namespace's routes) moves from the router's
 *   namespace to a host's -> one event on the host's MAC, "<gateway> was <router MAC>".
 */
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import Database from 'better-sqlite3';
import type { Delivery } from '../../src/alerts/model.js';
import { eventually } from '../helpers/processes.js';
import { startReceiver, type Receiver } from '../helpers/receiver.js';
import { TestServer } from '../helpers/server.js';
import { createTestLan, testLanSkipReason, type TestLan } from '../helpers/testlan.js';
import { waitForFirstCycle } from '../scanner/helpers.js';

const skip = testLanSkipReason();
if (skip) console.log(`# security watch e2e tests skipped: ${skip}`);

interface EventRow {
  eve_MAC: string;
  eve_IP: string;
  eve_EventType: string;
  eve_AdditionalInfo: string;
}

function events(dataDir: string, type: string): EventRow[] {
  const db = new Database(join(dataDir, 'netkeep.db'), { readonly: true, fileMustExist: true });
  try {
    return db
      .prepare<[string], EventRow>(
        'SELECT eve_MAC, eve_IP, eve_EventType, eve_AdditionalInfo FROM Events WHERE eve_EventType = ? ORDER BY rowid',
      )
      .all(type);
  } finally {
    db.close();
  }
}

describe('security watch in the scan cycle: IP Conflict, Gateway Changed', { skip }, () => {
  let lan: TestLan;
  let receiver: Receiver;
  let server: TestServer | undefined;
  const dataDir = mkdtempSync(join(tmpdir(), 'netkeep-watch-e2e-'));

  before(async () => {
    // The far routers give the root namespace a route through the LAN's gateway.
    lan = await createTestLan({ hosts: 2, far: true });
    receiver = await startReceiver();
  });
  after(async () => {
    await server?.stop();
    await receiver.close();
    await lan.destroy();
    rmSync(dataDir, { recursive: true, force: true });
  });

  async function scan(s: TestServer): Promise<void> {
    const res = await s.request('POST', '/nettools/scan');
    assert.equal(res.status, 200, res.text);
  }

  /** Every event the webhook received so far, of one type. */
  function hooked(type: string): Delivery['events'] {
    return receiver
      .on('/hook')
      .flatMap((r) => (JSON.parse(r.body) as Delivery).events)
      .filter((e) => e.type === type);
  }

  test('two MACs on one address, then the gateway moves to another namespace', async () => {
    const [h1, h2] = [lan.hosts.get('h1'), lan.hosts.get('h2')];
    assert.ok(h1 && h2);
    const twin = await lan.addHost('twin', { ip: h1.ip });
    server = await TestServer.start({
      dataDir,
      env: {
        SCAN_SUBNETS: `${lan.subnet}@${lan.lanInterface}`,
        SCAN_TOOL: 'arp-scan',
        SCAN_INTERVAL: '86400',
        NOTIFY_WEBHOOK_URL: receiver.url('/hook'),
        NOTIFY_RETRY_BASE_MS: '200',
      },
    });
    await waitForFirstCycle(server);

    // 1. One event per MAC, each naming the other.
    const conflicts = events(dataDir, 'IP Conflict');
    assert.deepEqual(
      conflicts.map((e) => [e.eve_MAC, e.eve_IP, e.eve_AdditionalInfo]).sort(),
      [
        [h1.mac, h1.ip, `${h1.ip} also answered by ${twin.mac}`],
        [twin.mac, h1.ip, `${h1.ip} also answered by ${h1.mac}`],
      ].sort(),
    );
    await receiver.waitFor('/hook');
    assert.deepEqual(
      hooked('IP Conflict')
        .map((e) => e.mac)
        .sort(),
      [h1.mac, twin.mac].sort(),
    );
    // The gateway's first MAC is remembered without an event.
    assert.deepEqual(events(dataDir, 'Gateway Changed'), []);

    // 2. The same conflict persists: nothing new.
    await scan(server);
    assert.equal(events(dataDir, 'IP Conflict').length, 2);

    // 3. It ends (the twin leaves), then comes back: reported again.
    await lan.removeHost('twin');
    await scan(server);
    assert.equal(events(dataDir, 'IP Conflict').length, 2);
    const back = await lan.addHost('twin', { ip: h1.ip, mac: twin.mac });
    await scan(server);
    assert.equal(events(dataDir, 'IP Conflict').length, 4);
    await lan.removeHost(back.name);

    // 4. The gateway's address moves from the router to h2.
    await lan.exec(lan.routerNs, ['/usr/sbin/ip', 'addr', 'del', `${lan.gateway}/24`, 'dev', 'br0']);
    await lan.exec(h2.ns, ['/usr/sbin/ip', 'addr', 'add', `${lan.gateway}/24`, 'dev', 'eth0']);
    await scan(server);
    const changed = events(dataDir, 'Gateway Changed');
    assert.deepEqual(
      changed.map((e) => [e.eve_MAC, e.eve_IP, e.eve_AdditionalInfo]),
      [[h2.mac, lan.gateway, `${lan.gateway} was ${lan.routerMac}`]],
    );
    assert.ok(await eventually(() => hooked('Gateway Changed').length > 0, 400, 50), 'webhook delivery');
    const [hook] = hooked('Gateway Changed');
    assert.equal(hook?.mac, h2.mac);
    assert.equal(hook.additionalInfo, `${lan.gateway} was ${lan.routerMac}`);

    // 5. The new MAC is remembered: the next cycle reports nothing more.
    await scan(server);
    assert.equal(events(dataDir, 'Gateway Changed').length, 1);
  });
});
