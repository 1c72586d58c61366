/**
 * The notification endpoints and the alert configuration over real HTTP on the real server:
 * GET /notifications (shape, status filter, paging, bad input), POST /notifications/test (409
 * without channels, per-channel results with a failing receiver, never a 500), OpenAPI, the token,
 * configuration errors (exit 2 naming the variable, never echoing a password), and devSkipRepeated
 * as hours through the device API. The big outbox's page on both stores (test/helpers/stores.ts).
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { Outbox } from '../../src/alerts/outbox.js';
import { ConfigError, loadConfig } from '../../src/config.js';
import { openStore } from '../../src/store/index.js';
import type { Observation } from '../../src/scanner/discovery.js';
import { planCycle } from '../../src/scanner/state-machine.js';
import type { InProcessServer } from '../helpers/inject.js';
import { startReceiver, type Receiver } from '../helpers/receiver.js';
import { notAuthorizedBody, runServerToExit, TestServer } from '../helpers/server.js';
import { onEachStore } from '../helpers/stores.js';

describe('notification endpoints', () => {
  let plain: TestServer;
  let configured: TestServer;
  let receiver: Receiver;
  let broken: Receiver;
  before(async () => {
    receiver = await startReceiver();
    broken = await startReceiver();
    broken.status = 500;
    plain = await TestServer.start();
    configured = await TestServer.start({
      env: {
        NOTIFY_WEBHOOK_URL: receiver.url('/hook'),
        NOTIFY_WEBHOOK_SECRET: 'routes-secret-19fe',
        NOTIFY_NTFY_URL: broken.url('/ntfy/t'),
        NOTIFY_NTFY_TOKEN: 'routes-ntfy-token-aa01',
      },
    });
  });
  after(async () => {
    await plain.stop();
    await configured.stop();
    await receiver.close();
    await broken.close();
  });

  test('GET /notifications: the empty outbox, paged', async () => {
    const res = await plain.request('GET', '/notifications');
    assert.equal(res.status, 200);
    assert.deepEqual(res.body, { success: true, notifications: [], total: 0, offset: 0, limit: 100 });
    const filtered = await plain.request('GET', '/notifications?status=failed&offset=5&limit=10');
    assert.deepEqual(filtered.body, { success: true, notifications: [], total: 0, offset: 5, limit: 10 });
  });

  test('GET /notifications: bad input is a 400 naming the parameter', async () => {
    for (const [query, pattern] of [
      ['status=sending', /status must be one of: pending, sent, failed, skipped/],
      ['status=Sent', /status must be one of/],
      ['limit=0', /limit must be an integer from 1 to 1000/],
      ['limit=1e3', /limit/],
      ['offset=-1', /offset/],
      ['stauts=sent', /unknown field 'stauts'/],
    ] as const) {
      const res = await plain.request('GET', `/notifications?${query}`);
      assert.equal(res.status, 400, query);
      assert.match(String(res.json.message), pattern, query);
      assert.equal(typeof res.json.code, 'string', query);
    }
  });

  test('POST /notifications/test without channels: 409 naming the variables', async () => {
    const res = await plain.request('POST', '/notifications/test');
    assert.equal(res.status, 409);
    assert.equal(res.json.success, false);
    assert.equal(res.json.code, 'NO_NOTIFICATION_CHANNEL');
    assert.match(String(res.json.message), /NOTIFY_WEBHOOK_URL/);
  });

  test('POST /notifications/test: one result per channel; a receiver answering 500 is ok: false, not a 500', async () => {
    const res = await configured.request('POST', '/notifications/test');
    assert.equal(res.status, 200, res.text);
    assert.deepEqual(res.body, {
      success: true,
      results: [
        { channel: 'webhook', ok: true, error: null },
        { channel: 'ntfy', ok: false, error: 'HTTP 500 Internal Server Error: receiver error' },
      ],
    });
    const [hook] = await receiver.waitFor('/hook');
    assert.equal((JSON.parse(hook?.body ?? '') as { test: boolean }).test, true);
    const [ntfy] = await broken.waitFor('/ntfy/t');
    assert.equal(ntfy?.headers.title, 'netkeep: test notification');
    // Nothing stored, no secret in the answer or the log.
    const list = await configured.request('GET', '/notifications');
    assert.equal(list.json.total, 0);
    await configured.logsCaughtUp();
    for (const text of [res.text, list.text, configured.logs.join('\n')]) {
      assert.ok(!text.includes('routes-secret-19fe'));
      assert.ok(!text.includes('routes-ntfy-token-aa01'));
    }
  });

  test('the token is required; both routes are in the OpenAPI document', async () => {
    for (const [method, path] of [
      ['GET', '/notifications'],
      ['POST', '/notifications/test'],
    ] as const) {
      const res = await configured.request(method, path, { token: null });
      assert.equal(res.status, 403);
      assert.deepEqual(res.body, notAuthorizedBody);
    }
    const spec = await plain.request('GET', '/openapi.json', { token: null });
    const specPaths = spec.json.paths as Record<string, Record<string, unknown>>;
    assert.ok(specPaths['/notifications']?.get);
    assert.ok(specPaths['/notifications/test']?.post);
    const wrong = await plain.request('DELETE', '/notifications');
    assert.equal(wrong.status, 405);
  });

  test('devSkipRepeated is hours: 0-8760 accepted, true/false read as 1/0, beyond refused', async () => {
    const mac = '02:aa:bb:cc:dd:01';
    const created = await plain.request('POST', `/device/${mac}`, {
      body: { createNew: true, devSkipRepeated: 168 },
    });
    assert.equal(created.status, 200, created.text);
    const read = async (): Promise<unknown> =>
      (await plain.request('GET', `/device/${mac}`)).json.devSkipRepeated;
    assert.equal(await read(), 168);
    for (const [value, stored] of [
      [24, 24],
      [8760, 8760],
      [0, 0],
      [true, 1],
      [false, 0],
      [1, 1],
    ] as const) {
      const res = await plain.request('POST', `/device/${mac}/update-column`, {
        body: { columnName: 'devSkipRepeated', columnValue: value },
      });
      assert.equal(res.status, 200, `${String(value)}: ${res.text}`);
      assert.equal(await read(), stored, String(value));
    }
    for (const value of [8761, -1, 1.5, '24', null]) {
      const res = await plain.request('POST', `/device/${mac}/update-column`, {
        body: { columnName: 'devSkipRepeated', columnValue: value },
      });
      assert.equal(res.status, 400, String(value));
      assert.match(String(res.json.message), /devSkipRepeated/);
      const body = await plain.request('POST', `/device/${mac}`, { body: { devSkipRepeated: value } });
      assert.equal(body.status, 400, `POST body ${String(value)}`);
    }
    assert.equal(await read(), 1);
  });
});

describe('alert configuration errors stop the server with exit 2, naming the variable', () => {
  test('malformed URLs, unknown event types, bad topic prefixes are ConfigErrors naming the variable', () => {
    for (const [name, value, pattern] of [
      [
        'NOTIFY_WEBHOOK_URL',
        'not a url',
        /NOTIFY_WEBHOOK_URL must be empty or a http:\/\/ or https:\/\/ URL/,
      ],
      ['NOTIFY_WEBHOOK_URL', 'ftp://user:hunter2secret@example.invalid/x', /NOTIFY_WEBHOOK_URL/],
      ['NOTIFY_NTFY_URL', 'ntfy.sh/topic', /NOTIFY_NTFY_URL/],
      ['NOTIFY_APPRISE_URL', 'http://', /NOTIFY_APPRISE_URL/],
      [
        'MQTT_URL',
        'http://user:hunter2secret@127.0.0.1:1883',
        /MQTT_URL must be empty or a mqtt:\/\/ or mqtts:\/\/ URL/,
      ],
      ['NOTIFY_EVENTS', 'New Device,Device Gone', /NOTIFY_EVENTS: unknown event type 'Device Gone'/],
      ['NOTIFY_MAX_ATTEMPTS', '0', /NOTIFY_MAX_ATTEMPTS must be between/],
      ['NOTIFY_TIMEOUT_MS', 'soon', /NOTIFY_TIMEOUT_MS must be a whole number/],
      ['NOTIFY_RETRY_BASE_MS', '60000', /NOTIFY_RETRY_BASE_MS must be between/],
      ['MQTT_TOPIC_PREFIX', 'netkeep/#', /MQTT_TOPIC_PREFIX must be an MQTT topic prefix/],
      ['MQTT_DISCOVERY_PREFIX', '', /MQTT_DISCOVERY_PREFIX/],
    ] as const) {
      assert.throws(
        () => loadConfig({ [name]: value }, '/nonexistent'),
        (err: unknown) => {
          assert.ok(err instanceof ConfigError, name);
          assert.match(err.message, pattern, name);
          assert.ok(!err.message.includes('hunter2secret'), `${name}: the password is not echoed`);
          return true;
        },
      );
    }
    assert.deepEqual(
      loadConfig({ NOTIFY_EVENTS: ' Device Down , New Device' }, '/nonexistent').NOTIFY_EVENTS,
      ['New Device', 'Device Down'],
    );
  });

  test('the server exits 2 with the variable named on stderr, without the password', () => {
    const result = runServerToExit({
      DATA_DIR: '/nonexistent-dir/never',
      MQTT_URL: 'mqtt//user:hunter2secret@127.0.0.1',
    });
    assert.equal(result.status, 2, result.stderr);
    assert.match(result.stderr, /configuration error: MQTT_URL/);
    assert.ok(!result.stderr.includes('hunter2secret'));
  });
});

onEachStore('GET /notifications with a big outbox (in process)', (_store, start) => {
  let server: InProcessServer;
  before(async () => {
    server = await start();
    // A scan cycle that finds 20,000 new devices, recorded for two channels through a second
    // connection to the server's store (as the scanner would): two rows sharing one payload.
    const store = await openStore({ DATA_DIR: server.dataDir, DATABASE_URL: server.databaseUrl });
    try {
      const outbox = new Outbox(store.outbox, {
        channels: ['webhook', 'ntfy'],
        enabledTypes: new Set(loadConfig({}, '/nonexistent').NOTIFY_EVENTS),
      });
      const observations = new Map<string, Observation>();
      for (let i = 0; i < 20_000; i++) {
        const hex = i.toString(16).padStart(4, '0');
        observations.set(`02:00:00:01:${hex.slice(0, 2)}:${hex.slice(2)}`, {
          ips: [`10.${(i >> 8) & 0xff}.${i & 0xff}.1`],
          vendor: 'Acme',
          source: 'arp-scan',
        });
      }
      const now = new Date('2025-03-01T12:00:00Z');
      const known = await store.presence.loadPresence();
      const plan = planCycle({ known, observations, missesBeforeAbsent: 1, now });
      await store.presence.applyPresence(plan, { notify: outbox.request(plan.events, now) });
    } finally {
      await store.close();
    }
  });
  after(async () => {
    await server.stop();
  });

  test('each notification shows its first 20 events and the count of all of them; the page stays small', async () => {
    const res = await server.request('GET', '/notifications?limit=1000');
    assert.equal(res.status, 200);
    const body = res.json as { total: number; notifications: Array<Record<string, unknown>> };
    assert.equal(body.total, 2);
    assert.equal(body.notifications.length, 2);
    for (const notification of body.notifications) {
      assert.equal(notification.eventCount, 20_000);
      const events = notification.events as Array<{ mac: string }>;
      assert.equal(events.length, 20);
      assert.equal(events[0]?.mac, '02:00:00:01:00:00');
    }
    // The whole payloads are ~14 MB of JSON; the answer carries 40 events.
    assert.ok(res.text.length < 40_000, `answer of ${res.text.length} characters`);
    const spec = await server.request('GET', '/openapi.json');
    const schema = (spec.json as { components: { schemas: Record<string, { properties: object }> } })
      .components.schemas.Notification;
    assert.ok(schema && 'eventCount' in schema.properties);
  });
});
