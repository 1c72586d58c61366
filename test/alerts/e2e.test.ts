/**
 * Alerts end to end: the real server (child process, real SQLite file) scans a test LAN of network
 * namespaces with arp-scan, and delivers to real receivers on 127.0.0.1: one HTTP server for the
 * webhook, ntfy and Apprise channels, and a real mosquitto for MQTT / Home Assistant, watched by an
 * mqtt.js client. Scenarios, in order, on one LAN:
 *   new hosts -> one delivery per channel with the right bodies (signature verified);
 *   Home Assistant: retained configs, state and attributes; availability online;
 *   a devAlertDown host leaves -> Device Down; a host without flags leaves -> nothing sent;
 *   a device deleted (or merged into another) -> empty retained config; Home Assistant's birth message -> configs again;
 *   a receiver answering 500 -> retried, arrives with the same deliveryId once it recovers;
 *   receivers down, kill -9 after the cycle's commit, receivers back, restart -> delivered once
 *   more with the same deliveryIds.
 */
import assert from 'node:assert/strict';
import { createHmac } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import Database from 'better-sqlite3';
import type { Delivery } from '../../src/alerts/model.js';
import { mac12 } from '../../src/alerts/mqtt.js';
import {
  collector,
  mosquittoSkip,
  startMosquitto,
  type Broker,
  type Collector,
} from '../helpers/mosquitto.js';
import { eventually } from '../helpers/processes.js';
import { startReceiver, type Receiver } from '../helpers/receiver.js';
import { TestServer } from '../helpers/server.js';
import { createTestLan, testLanSkipReason, type TestLan } from '../helpers/testlan.js';
import { waitForFirstCycle } from '../scanner/helpers.js';

const lanSkip = testLanSkipReason();
if (lanSkip) console.log(`# alerts e2e tests skipped: ${lanSkip}`);
const skip = lanSkip ?? mosquittoSkip();

const secret = 'e2e-webhook-secret-81c2';
const paths = { webhook: '/hook', ntfy: '/ntfy/netkeep', apprise: '/apprise/notify/netkeep' } as const;

interface WebhookBody extends Delivery {
  readonly source: string;
}

function verified(request: { headers: Record<string, unknown>; body: string }): WebhookBody {
  const expected = `sha256=${createHmac('sha256', secret).update(Buffer.from(request.body, 'utf8')).digest('hex')}`;
  assert.equal(request.headers['x-netkeep-signature'], expected, 'the signature verifies');
  return JSON.parse(request.body) as WebhookBody;
}

function present<T>(value: T | undefined, what: string): T {
  assert.ok(value !== undefined, `${what} is missing`);
  return value;
}

/** Notifications rows, read from the database file (read-only, while the server runs or not). */
function outboxRows(
  dataDir: string,
): Array<{ deliveryId: string; channel: string; status: string; events: string }> {
  const db = new Database(join(dataDir, 'netkeep.db'), { readonly: true, fileMustExist: true });
  try {
    return db
      .prepare(
        'SELECT n.deliveryId, n.channel, n.status, p.events FROM Notifications n JOIN NotificationPayloads p ON p.id = n.payloadId ORDER BY n.id',
      )
      .all() as Array<{
      deliveryId: string;
      channel: string;
      status: string;
      events: string;
    }>;
  } finally {
    db.close();
  }
}

describe('alerts end to end: test LAN, HTTP receivers and mosquitto on loopback', { skip }, () => {
  let lan: TestLan;
  let receiver: Receiver;
  let broker: Broker;
  let watch: Collector;
  let server: TestServer | undefined;
  const dataDir = mkdtempSync(join(tmpdir(), 'netkeep-alerts-e2e-'));

  before(async () => {
    lan = await createTestLan({ hosts: 2, far: false });
    receiver = await startReceiver();
    broker = await startMosquitto();
    watch = await collector(broker, ['netkeep/#', 'homeassistant/#']);
  });
  after(async () => {
    await server?.stop({ keepData: true });
    await watch.close();
    await broker.stop();
    await receiver.close();
    await lan.destroy();
    rmSync(dataDir, { recursive: true, force: true });
  });

  function env(): Record<string, string> {
    return {
      SCAN_SUBNETS: `${lan.subnet}@${lan.lanInterface}`,
      SCAN_TOOL: 'arp-scan',
      SCAN_INTERVAL: '86400',
      NOTIFY_WEBHOOK_URL: receiver.url(paths.webhook),
      NOTIFY_WEBHOOK_SECRET: secret,
      NOTIFY_NTFY_URL: receiver.url(paths.ntfy),
      NOTIFY_APPRISE_URL: receiver.url(paths.apprise),
      MQTT_URL: broker.url,
      NOTIFY_RETRY_BASE_MS: '200',
      NOTIFY_TIMEOUT_MS: '3000',
    };
  }

  async function scan(s: TestServer): Promise<void> {
    const res = await s.request('POST', '/nettools/scan');
    assert.equal(res.status, 200, res.text);
  }

  async function column(s: TestServer, mac: string, columnName: string, columnValue: unknown): Promise<void> {
    const res = await s.request('POST', `/device/${mac}/update-column`, {
      body: { columnName, columnValue },
    });
    assert.equal(res.status, 200, res.text);
  }

  test('deliveries per channel, Home Assistant topics, flags, delete, birth, retry, kill -9', async () => {
    const [h1, h2] = [lan.hosts.get('h1'), lan.hosts.get('h2')];
    assert.ok(h1 && h2);
    const first = await TestServer.start({ env: env(), dataDir });
    server = first;

    // 1. The first cycle finds the router, h1 and h2: one delivery per channel, three New Device.
    await waitForFirstCycle(first);
    const macs = [lan.routerMac, h1.mac, h2.mac].sort();
    const [hook] = await receiver.waitFor(paths.webhook);
    const body = verified(present(hook, 'the first webhook delivery'));
    assert.equal(body.source, 'netkeep');
    assert.deepEqual(body.events.map((e) => e.mac).sort(), macs);
    assert.ok(body.events.every((e) => e.type === 'New Device' && e.device.devStatus === 'On-line'));
    assert.equal(body.events.find((e) => e.mac === h1.mac)?.ip, h1.ip);
    const [ntfy] = await receiver.waitFor(paths.ntfy);
    assert.equal(ntfy?.body.split('\n').length, 3);
    assert.ok(macs.every((m) => ntfy.body.includes(m)));
    const [apprise] = await receiver.waitFor(paths.apprise);
    assert.equal((JSON.parse(apprise?.body ?? '') as { type: string }).type, 'warning');
    await watch.waitUntil((m) => m.filter((x) => x.topic === 'netkeep/event').length >= 3, 'three events');
    const mqttEvents = watch
      .on('netkeep/event')
      .map((m) => JSON.parse(m.payload) as { deliveryId: string; mac: string });
    assert.deepEqual(mqttEvents.map((e) => e.mac).sort(), macs);
    assert.equal(new Set(mqttEvents.map((e) => e.deliveryId)).size, 1);
    assert.ok(watch.on('netkeep/event').every((m) => !m.retain));

    // GET /notifications: four sent rows, no secret anywhere in the answer.
    assert.ok(
      await eventually(() => outboxRows(dataDir).filter((r) => r.status === 'sent').length === 4, 200),
      JSON.stringify(outboxRows(dataDir)),
    );
    const list = await first.request('GET', '/notifications?status=sent');
    assert.equal(list.status, 200);
    assert.equal(list.json.total, 4);
    const listed = list.json.notifications as Array<{
      channel: string;
      deliveryId: string;
      attempts: number;
    }>;
    assert.deepEqual(listed.map((n) => n.channel).sort(), ['apprise', 'mqtt', 'ntfy', 'webhook']);
    assert.equal(listed.find((n) => n.channel === 'webhook')?.deliveryId, body.deliveryId);
    assert.equal(listed.find((n) => n.channel === 'mqtt')?.deliveryId, mqttEvents[0]?.deliveryId);
    assert.ok(!list.text.includes(secret));
    // Metrics count each channel's sent delivery. A delivery is counted once its 'sent' row is on
    // disk; the rows above are seen as soon as they are committed, a flush earlier: wait for it.
    const sentLines = ['webhook', 'ntfy', 'apprise', 'mqtt'].map(
      (channel) => new RegExp(`netkeep_notifications_total\\{channel="${channel}",status="sent"\\} 1\\b`),
    );
    let metrics = '';
    for (let tries = 0; tries < 100; tries++) {
      metrics = (await first.request('GET', '/metrics')).text;
      if (sentLines.every((line) => line.test(metrics))) break;
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
    for (const line of sentLines) assert.match(metrics, line);

    // 2. Home Assistant: a fresh subscriber sees retained availability, configs, states, attributes.
    const late = await collector(broker, ['netkeep/#', 'homeassistant/#']);
    try {
      await late.waitUntil(
        (m) => macs.every((mac) => m.some((x) => x.topic === `netkeep/device/${mac12(mac)}/attributes`)),
        'retained attributes of every device',
      );
      assert.deepEqual(
        late.on('netkeep/status').map((m) => [m.payload, m.retain]),
        [['online', true]],
      );
      for (const mac of macs) {
        const id = mac12(mac);
        const [config] = late.on(`homeassistant/device_tracker/netkeep_${id}/config`);
        assert.ok(config?.retain, `retained config of ${mac}`);
        const parsed = JSON.parse(config.payload) as Record<string, unknown>;
        assert.deepEqual(
          { ...parsed, name: undefined, device: undefined },
          {
            name: undefined,
            device: undefined,
            unique_id: `netkeep_${id}`,
            state_topic: `netkeep/device/${id}/state`,
            json_attributes_topic: `netkeep/device/${id}/attributes`,
            payload_home: 'home',
            payload_not_home: 'not_home',
            source_type: 'router',
            availability_topic: 'netkeep/status',
          },
        );
        assert.deepEqual((parsed.device as { identifiers: string[]; connections: string[][] }).identifiers, [
          `netkeep_${id}`,
        ]);
        assert.deepEqual((parsed.device as { connections: string[][] }).connections, [['mac', mac]]);
        assert.deepEqual(
          late.on(`netkeep/device/${id}/state`).map((m) => [m.payload, m.retain]),
          [['home', true]],
        );
        const attributes = JSON.parse(late.on(`netkeep/device/${id}/attributes`)[0]?.payload ?? '') as Record<
          string,
          unknown
        >;
        assert.equal(attributes.status, 'On-line');
      }
    } finally {
      await late.close();
    }

    // 3. h1 has devAlertDown, h2 no alert flags: both leave; only h1's Device Down is sent.
    await column(first, h1.mac, 'devAlertDown', 1);
    await column(first, h2.mac, 'devAlertEvents', 0);
    const h1Mac = h1.mac;
    const h2Mac = h2.mac;
    await lan.removeHost('h1');
    await lan.removeHost('h2');
    await scan(first);
    const [, downHook] = await receiver.waitFor(paths.webhook, 2);
    const down = verified(present(downHook, 'the second webhook delivery'));
    assert.deepEqual(
      down.events.map((e) => [e.type, e.mac, e.device.devStatus]),
      [['Device Down', h1Mac, 'Down']],
    );
    const ntfys = await receiver.waitFor(paths.ntfy, 2);
    assert.equal(ntfys[1]?.headers.priority, 'high');
    // State follows presence: both not_home (retained), h1's attributes say Down.
    await watch.waitUntil(
      (m) =>
        m.some((x) => x.topic === `netkeep/device/${mac12(h1Mac)}/state` && x.payload === 'not_home') &&
        m.some((x) => x.topic === `netkeep/device/${mac12(h2Mac)}/state` && x.payload === 'not_home'),
      'not_home states',
    );
    const h1Attributes = watch.on(`netkeep/device/${mac12(h1Mac)}/attributes`).at(-1);
    assert.equal((JSON.parse(h1Attributes?.payload ?? '{}') as { status: string }).status, 'Down');
    // Events without the device's flag are not sent, on any channel.
    assert.ok(
      !receiver.requests.some((r) => r.body.includes(h2Mac) && r !== hook && r !== ntfy && r !== apprise),
    );
    await watch.waitUntil(
      (m) => m.filter((x) => x.topic === 'netkeep/event').length >= 4,
      'the Device Down event',
    );
    assert.equal(watch.on('netkeep/event').length, 4);

    // 4. Deleting h2 publishes an empty retained config (Home Assistant removes the entity).
    const deleted = await first.request('DELETE', `/device/${h2Mac}/delete`);
    assert.equal(deleted.status, 200);
    const h2Config = `homeassistant/device_tracker/netkeep_${mac12(h2Mac)}/config`;
    await watch.waitUntil(
      (m) => m.some((x) => x.topic === h2Config && x.payload === ''),
      'empty config of h2',
    );

    // 4b. A CSV import (one feed change for all its devices) publishes each imported device's config.
    const imported = ['02:ee:00:00:00:01', '02:ee:00:00:00:02'];
    const csv = `"devMac","devName"\r\n${imported.map((mac) => `"${mac}","imported"\r\n`).join('')}`;
    const importRes = await first.request('POST', '/devices/import', {
      body: { content: Buffer.from(csv).toString('base64') },
    });
    assert.equal(importRes.status, 200, importRes.text);
    await watch.waitUntil(
      (m) =>
        imported.every((mac) =>
          m.some(
            (x) =>
              x.topic === `homeassistant/device_tracker/netkeep_${mac12(mac)}/config` && x.payload !== '',
          ),
        ),
      'configs of the imported devices',
    );

    // 5. Home Assistant's birth message: every config again (and none for the deleted device).
    const routerConfig = `homeassistant/device_tracker/netkeep_${mac12(lan.routerMac)}/config`;
    const configsBefore = watch.on(routerConfig).length;
    const h2ConfigsBefore = watch.on(h2Config).length;
    await watch.client.publishAsync('homeassistant/status', 'online');
    await watch.waitUntil(
      (m) => m.filter((x) => x.topic === routerConfig).length > configsBefore,
      'republished configs',
    );
    await watch.waitUntil(
      (m) => m.some((x) => x.topic === `homeassistant/device_tracker/netkeep_${mac12(h1Mac)}/config`),
      'h1 config',
    );
    assert.equal(watch.on(h2Config).length, h2ConfigsBefore);

    // 6. The webhook receiver answers 500: retried, and delivered with the same deliveryId after it recovers.
    receiver.status = 500;
    const h3 = await lan.addHost('h3');
    const webhookBefore = receiver.on(paths.webhook).length;
    await scan(first);
    await receiver.waitFor(paths.webhook, webhookBefore + 2);
    receiver.status = 200;
    assert.ok(
      await eventually(
        () =>
          outboxRows(dataDir).filter((r) => r.status === 'sent' && r.events.includes(h3.mac)).length === 4,
        400,
      ),
      JSON.stringify(outboxRows(dataDir).slice(-4)),
    );
    const retried = receiver
      .on(paths.webhook)
      .slice(webhookBefore)
      .map((r) => verified(r));
    assert.ok(retried.length >= 3, `${retried.length} attempts`);
    assert.equal(new Set(retried.map((b) => b.deliveryId)).size, 1);
    assert.deepEqual(
      retried.at(-1)?.events.map((e) => e.mac),
      [h3.mac],
    );

    // 7. Receivers and broker down, a cycle commits its notifications, kill -9, receivers back, restart.
    await receiver.close();
    await broker.stop();
    const h4 = await lan.addHost('h4');
    await scan(first);
    assert.ok(
      await eventually(() =>
        outboxRows(dataDir).some(
          (r) => r.status === 'pending' && r.channel === 'webhook' && r.events.includes(h4.mac),
        ),
      ),
    );
    await first.kill();
    server = undefined;
    const pending = outboxRows(dataDir).filter((r) => r.status === 'pending');
    assert.deepEqual(pending.map((r) => r.channel).sort(), ['apprise', 'mqtt', 'ntfy', 'webhook']);
    await receiver.listen(receiver.port);
    broker = await startMosquitto(broker.port);
    await watch.close();
    watch = await collector(broker, ['netkeep/#', 'homeassistant/#']);
    receiver.requests.length = 0;
    const second = await TestServer.start({ env: env(), dataDir });
    server = second;
    const [again] = await receiver.waitFor(paths.webhook);
    const redelivered = verified(present(again, 'the redelivery'));
    assert.equal(redelivered.deliveryId, pending.find((r) => r.channel === 'webhook')?.deliveryId);
    assert.deepEqual(
      redelivered.events.map((e) => [e.type, e.mac]),
      [['New Device', h4.mac]],
    );
    await receiver.waitFor(paths.ntfy);
    await receiver.waitFor(paths.apprise);
    await watch.waitUntil(
      (m) =>
        m.some(
          (x) =>
            x.topic === 'netkeep/event' &&
            (JSON.parse(x.payload) as { deliveryId: string }).deliveryId ===
              pending.find((r) => r.channel === 'mqtt')?.deliveryId,
        ),
      'the MQTT event redelivered',
    );
    assert.ok(
      await eventually(() => outboxRows(dataDir).every((r) => r.status === 'sent'), 200),
      JSON.stringify(outboxRows(dataDir).map((r) => [r.channel, r.status])),
    );
    // 8. Merging h4 into h3 (docs/random-macs.md): h4's entity goes, an empty retained config as on a delete.
    const merged = await second.request('POST', `/device/${h3.mac}/merge`, { body: { from: h4.mac } });
    assert.equal(merged.status, 200, merged.text);
    const h4Config = `homeassistant/device_tracker/netkeep_${mac12(h4.mac)}/config`;
    await watch.waitUntil(
      (m) => m.some((x) => x.topic === h4Config && x.payload === ''),
      'empty config of the merged h4',
    );

    // The log of the whole run holds no secret.
    assert.ok(![...first.logs, ...second.logs].some((line) => line.includes(secret)));
  });
});
